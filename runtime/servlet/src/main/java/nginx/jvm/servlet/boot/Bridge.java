package nginx.jvm.servlet.boot;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;

/**
 * Where the two class loaders meet. {@link BootHandler} and this class are
 * loaded by the system class loader (the worker's class path); the seam
 * (nginx.jvm.servlet.boot.seam, with Tomcat) by the Spring Boot
 * application's own class loader, whose parent is the system class
 * loader: the seam's references to this class reach this very class, so
 * what the seam sets here BootHandler reads. Only nginx-jvm's API types
 * (Handler, AsyncHandler) cross: both loaders see the one copy of them.
 */
public final class Bridge {
    private static volatile Object engine;
    private static volatile boolean active;
    private static volatile String problem;
    private static final CountDownLatch ready = new CountDownLatch(1);

    private Bridge() {
    }

    /** BootHandler starts an application: the seam's configuration takes effect. */
    static void activate() {
        active = true;
    }

    /**
     * Whether the application runs beneath nginx-jvm: the seam replaces
     * the web server's connector only then (not under {@code java -jar}).
     */
    public static boolean active() {
        return active;
    }

    /**
     * The seam: the application's Tomcat started its connector, whose
     * requests {@code engine} serves (a Handler and an AsyncHandler); null
     * when it stopped.
     */
    public static void engine(Object engine) {
        if (engine != null && !(engine instanceof Handler && engine instanceof AsyncHandler)) {
            throw new IllegalArgumentException(engine.getClass() + " is not a nginx.jvm.Handler and AsyncHandler");
        }
        Bridge.engine = engine;
    }

    static Object engine() {
        return engine;
    }

    /** The seam: the application is ready (Spring's ApplicationReadyEvent). */
    public static void ready() {
        ready.countDown();
    }

    /** The seam: the application cannot run beneath nginx (why, for BootHandler to say). */
    public static void problem(String why) {
        problem = why;
        ready.countDown();
    }

    static String problem() {
        return problem;
    }

    static boolean awaitReady(long millis) throws InterruptedException {
        return ready.await(millis, TimeUnit.MILLISECONDS);
    }

    /** Lets a failed start end the wait at once. */
    static void wake() {
        ready.countDown();
    }
}
