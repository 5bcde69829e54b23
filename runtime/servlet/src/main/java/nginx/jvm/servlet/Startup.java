package nginx.jvm.servlet;

import java.lang.management.ManagementFactory;

/** One line on stderr (nginx's error log) when an engine is up: the spike's start-time figures. */
final class Startup {
    private Startup() {
    }

    static void log(String engine, long t0) {
        long engineMs = (System.nanoTime() - t0) / 1_000_000;
        long sinceJvm = System.currentTimeMillis() - ManagementFactory.getRuntimeMXBean().getStartTime();
        System.err.println("nginx-jvm-servlet: " + engine + " started in " + engineMs
                + " ms, " + sinceJvm + " ms after the JVM's start");
    }
}
