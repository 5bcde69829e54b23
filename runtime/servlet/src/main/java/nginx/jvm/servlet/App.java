package nginx.jvm.servlet;

import jakarta.servlet.Servlet;

/**
 * What a worker's engine serves, from system properties ({@code jvm_options},
 * {@code --jvm-option}; the launcher's {@code --war} sets them): a web
 * application, or the servlet named by {@code -Dnginx.jvm.servlet.class}
 * ({@link HelloServlet} by default) mapped at "/" of the root context.
 */
public final class App {
    /** The web application: a WAR file or its directory (bin/nginx-jvm --war). */
    static final String WAR = "nginx.jvm.servlet.war";
    /** Its context path, "" (the root) by default (--context-path). */
    static final String CONTEXT_PATH = "nginx.jvm.servlet.context";
    /**
     * Where a WAR file is unpacked, one copy for every worker (the
     * launcher's temporary prefix); by default each worker's scratch.
     */
    static final String UNPACK = "nginx.jvm.servlet.unpack";

    /**
     * One web application each, N from 0 ({@code jvm_webapp} writes them):
     * "CONTEXT PATH", the context path ("" for the root) and the WAR.
     */
    static final String WEBAPP = "nginx.jvm.servlet.webapp.";

    private App() {
    }

    /**
     * The web applications this worker serves: those of {@code jvm_webapp}
     * ({@link #WEBAPP}), then the launcher's {@code --war} ({@link #WAR}).
     */
    static java.util.List<nginx.jvm.servlet.tomcat.Webapp> webapps() {
        var apps = new java.util.ArrayList<nginx.jvm.servlet.tomcat.Webapp>();
        for (int i = 0; ; i++) {
            String v = System.getProperty(WEBAPP + i);
            if (v == null) {
                break;
            }
            int sp = v.indexOf(' ');
            if (sp < 0) {
                throw new IllegalArgumentException("-D" + WEBAPP + i + "=\"" + v
                        + "\" is not \"CONTEXT PATH\"");
            }
            apps.add(new nginx.jvm.servlet.tomcat.Webapp(java.nio.file.Path.of(v.substring(sp + 1)),
                    v.substring(0, sp)));
        }
        String war = System.getProperty(WAR);
        if (war != null) {
            apps.add(new nginx.jvm.servlet.tomcat.Webapp(java.nio.file.Path.of(war),
                    System.getProperty(CONTEXT_PATH)));
        }
        return apps;
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
            deleteTree(scratch);
        }, "nginx-jvm-servlet-exit"));
    }

    /** A directory and all in it, as far as it can be deleted. */
    public static void deleteTree(java.nio.file.Path dir) {
        try (var walk = java.nio.file.Files.walk(dir)) {
            walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (java.io.IOException e) {
            // gone already, or not ours to delete
        }
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
