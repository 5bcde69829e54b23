package nginx.jvm.servlet;

import jakarta.servlet.Servlet;

/**
 * What the spike serves: the servlet named by {@code -Dnginx.jvm.servlet.class}
 * ({@link HelloServlet} by default), mapped at "/" of the root context.
 * The WAR, web.xml and annotation scanning come later (runtime/servlet/README.md).
 */
final class App {
    private App() {
    }

    static Servlet servlet() {
        String name = System.getProperty("nginx.jvm.servlet.class", HelloServlet.class.getName());
        try {
            return (Servlet) Class.forName(name, true, Thread.currentThread().getContextClassLoader())
                    .getConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot make the servlet " + name + ": " + e, e);
        }
    }

    /**
     * At the worker's exit (nginx-jvm runs the JVM's shutdown hooks then):
     * the engine stops (its applications' destroy() and listeners run) and
     * its scratch directory goes.
     */
    static void atExit(String engine, java.nio.file.Path scratch, AutoCloseable stop) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                stop.close();
            } catch (Exception e) {
                System.err.println("nginx-jvm-servlet: " + engine + " did not stop cleanly: " + e);
            }
            try (var walk = java.nio.file.Files.walk(scratch)) {
                walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (java.io.IOException e) {
                // gone already, or not ours to delete
            }
        }, "nginx-jvm-servlet-exit"));
    }

    /** The engine's scratch directory (Tomcat's base, work directories): one per worker. */
    static java.nio.file.Path scratch(String engine) {
        try {
            return java.nio.file.Files.createTempDirectory("nginx-jvm-" + engine + "-"
                    + ProcessHandle.current().pid() + "-");
        } catch (java.io.IOException e) {
            throw new IllegalStateException("cannot make a scratch directory for " + engine + ": " + e, e);
        }
    }
}
