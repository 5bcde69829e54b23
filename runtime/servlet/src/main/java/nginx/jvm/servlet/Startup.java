package nginx.jvm.servlet;

import java.lang.management.ManagementFactory;
import nginx.jvm.Log;

/** One line in nginx's error log, at notice, when a worker's engine is up, with its start time. */
final class Startup {
    private Startup() {
    }

    static void log(String engine, String what, long t0) {
        long engineMs = (System.nanoTime() - t0) / 1_000_000;
        long sinceJvm = System.currentTimeMillis() - ManagementFactory.getRuntimeMXBean().getStartTime();
        Log.notice("nginx.jvm.servlet", engine + " serves " + what + ": started in " + engineMs
                + " ms, " + sinceJvm + " ms after the JVM's start");
    }
}
