package nginx.jvm.servlet.boot;

import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.Log;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;

/**
 * Serves an unmodified Spring Boot executable jar beneath nginx: the
 * application starts as {@code java -jar} would start it, through the
 * jar's own launcher and its own class loader, and its embedded Tomcat's
 * Connector listens on nothing: requests come from nginx.
 *
 * <p>How (runtime/servlet/README.md, "Spring Boot"): the jar is on the
 * worker's class path, as {@code java -jar} puts it (Boot's launcher, at
 * the jar's root, must be loaded by the system class loader: its
 * {@code jar:nested:} URLs need it). This handler starts the jar's own
 * JarLauncher ({@link NginxJarLauncher}) on a thread of its own, with the
 * seam jar (nginx-jvm-servlet-boot-seam.jar, beside this class's jar) last
 * on the application's class path, so that the seam is loaded by the
 * application's class loader, next to the application's own
 * tomcat-embed-core; that loader's parent is {@link AppParent}, the system
 * class loader less what the application must not see of it. The seam's
 * auto-configuration sets the Tomcat factory's protocol to ours and hands
 * back, through {@link Bridge}, the handler that feeds the Connector's
 * adapter. Spring's own shutdown hook closes the application at the
 * worker's exit.
 *
 * <p>System properties ({@code --jvm-option -D...}, {@code jvm_options}):
 * <ul>
 * <li>{@code nginx.jvm.boot.jar}: the application's jar; by default the
 *     one Spring Boot jar on the class path;</li>
 * <li>{@code nginx.jvm.boot.seam}: the seam jar, by default beside this
 *     class's jar (nginx-jvm-servlet-boot-seam-jetty12.0.jar for an
 *     application whose Jetty is 12.0: Boot 3.5's Jetty starter);</li>
 * <li>{@code nginx.jvm.boot.args}: the application's arguments, split on
 *     white space (its {@code main(String[])});</li>
 * <li>{@code nginx.jvm.boot.timeout}: seconds the worker waits for the
 *     application to be ready (default 300).</li>
 * </ul>
 * Every other {@code -Dkey=value} is Spring's to read, as under
 * {@code java -jar}: {@code -Dspring.profiles.active=prod},
 * {@code -Dapp.greeting=hi}.
 *
 * <p>One application per worker: every BootHandler of a worker serves
 * the same one. Serve it off the event loop ({@code jvm_mode pool},
 * {@code virtual} or {@code coloop}): servlets block.
 */
public final class BootHandler implements Handler, AsyncHandler {
    public static final String JAR = "nginx.jvm.boot.jar";
    public static final String SEAM = "nginx.jvm.boot.seam";
    public static final String ARGS = "nginx.jvm.boot.args";
    public static final String TIMEOUT = "nginx.jvm.boot.timeout";
    /** The seam jar's name, beside this class's jar (runtime/servlet/pom.xml). */
    static final String SEAM_JAR = "nginx-jvm-servlet-boot-seam.jar";
    /** The same seam built against Jetty 12.0 and its ee10 servlets, for Boot 3.5's Jetty starter. */
    static final String SEAM_JAR_JETTY_12_0 = "nginx-jvm-servlet-boot-seam-jetty12.0.jar";

    private static boolean started;
    private static RuntimeException failed;

    public BootHandler() {
        synchronized (BootHandler.class) {
            if (failed != null) {
                throw failed;
            }
            if (!started) {
                try {
                    start();
                } catch (RuntimeException e) {
                    failed = e;
                    throw e;
                }
                started = true;
            }
        }
    }

    @Override
    public Response handle(Request request) throws Exception {
        Object engine = Bridge.engine();
        if (engine == null) {
            return stopped();
        }
        return ((Handler) engine).handle(request);
    }

    @Override
    public void handle(Request request, Responder responder) throws Exception {
        Object engine = Bridge.engine();
        if (engine == null) {
            responder.respond(stopped());
            return;
        }
        ((AsyncHandler) engine).handle(request, responder);
    }

    private static Response stopped() {
        return Response.of(503, "text/plain; charset=utf-8", "the application has stopped\n");
    }

    /** The application, started and ready, or an exception that says why not. */
    private static void start() {
        long t0 = System.nanoTime();
        Path jar = applicationJar();
        Manifest manifest = manifest(jar);
        Attributes main = manifest.getMainAttributes();
        checkLauncher(jar, main);
        Path seam = seamJar(jettyOf(jar));
        // an executable WAR (Spring-Boot-Lib: WEB-INF/lib/) has Boot's WarLauncher
        Class<?> launcher = String.valueOf(main.getValue("Main-Class")).endsWith(".WarLauncher")
                ? NginxWarLauncher.class : NginxJarLauncher.class;
        Bridge.activate();

        String[] args = args();
        Throwable[] failure = new Throwable[1];
        boolean[] returned = new boolean[1];
        Thread t = new Thread(() -> {
            try {
                AppParent parent = new AppParent(ClassLoader.getSystemClassLoader());
                Class<?> c = Class.forName(launcher.getName(), true, parent);
                Method m = c.getMethod("launch", java.net.URL.class, String[].class);
                m.invoke(null, seam.toUri().toURL(), args);
                returned[0] = true;
            } catch (Throwable e) {
                failure[0] = e;
            } finally {
                Bridge.wake();
            }
        }, "spring-boot-main");
        t.setDaemon(true);
        t.setContextClassLoader(ClassLoader.getSystemClassLoader());
        t.start();

        long timeout = timeoutSeconds();
        boolean woke;
        try {
            woke = Bridge.awaitReady(timeout * 1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while " + jar + " started");
        }
        String what = "the Spring Boot application " + jar;
        // the main thread's end is seen after its wake: wait for it a moment
        if (woke && Bridge.engine() == null) {
            try {
                t.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        // (the main thread's writes are seen: it woke us, through the latch, after them)
        if (Bridge.problem() != null) {
            throw new IllegalStateException(what + " cannot be served: " + Bridge.problem());
        }
        if (failure[0] != null) {
            throw new IllegalStateException(what + " did not start: " + describe(failure[0]), unwrap(failure[0]));
        }
        if (!woke) {
            throw new IllegalStateException(what + " was not ready within " + timeout + " s ("
                    + TIMEOUT + "): the main thread is at " + where(t));
        }
        if (Bridge.engine() == null) {
            throw new IllegalStateException(what + (returned[0] ? "'s main method returned" : " became ready")
                    + " with no servlet web server: nginx-jvm serves Spring Boot web applications on"
                    + " Tomcat (spring-boot-starter-web)");
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        long sinceJvm = System.currentTimeMillis() - ManagementFactory.getRuntimeMXBean().getStartTime();
        Log.notice("nginx.jvm.servlet", "Spring Boot " + main.getValue("Spring-Boot-Version") + " serves "
                + main.getValue("Start-Class") + " (" + jar.getFileName() + "): ready in " + ms + " ms, "
                + sinceJvm + " ms after the JVM's start");
    }

    /** The application's jar: the property's, else the one Spring Boot jar on the class path. */
    static Path applicationJar() {
        List<Path> classPath = new ArrayList<>();
        for (String e : System.getProperty("java.class.path", "").split(File.pathSeparator)) {
            if (!e.isEmpty()) {
                classPath.add(real(Path.of(e)));
            }
        }
        String named = System.getProperty(JAR);
        if (named != null && !named.isEmpty()) {
            Path jar = Path.of(named).toAbsolutePath();
            if (!Files.isRegularFile(jar)) {
                throw new IllegalStateException(JAR + "=" + named + ": no such file");
            }
            if (!Files.isReadable(jar)) {
                throw new IllegalStateException(JAR + "=" + named + ": not readable by the worker's user");
            }
            if (!classPath.contains(real(jar))) {
                throw new IllegalStateException(JAR + "=" + named + " must be on the worker's class path too"
                        + " (jvm_classpath, the launcher's --jar), as java -jar puts it: Spring Boot's"
                        + " launcher, at the jar's root, is loaded by the system class loader");
            }
            return jar;
        }
        List<Path> boot = new ArrayList<>();
        for (Path p : classPath) {
            if (p.toString().endsWith(".jar") && Files.isRegularFile(p) && isBootJar(p)) {
                boot.add(p);
            }
        }
        if (boot.size() != 1) {
            throw new IllegalStateException((boot.isEmpty() ? "no Spring Boot executable jar"
                    : boot.size() + " Spring Boot executable jars " + boot) + " on the class path: name the"
                    + " application's with -D" + JAR + "=APP.jar, and put it on the class path");
        }
        return boot.get(0);
    }

    private static Path real(Path p) {
        try {
            return p.toRealPath();
        } catch (IOException e) {
            return p.toAbsolutePath().normalize();
        }
    }

    private static boolean isBootJar(Path p) {
        try (JarFile j = new JarFile(p.toFile())) {
            Manifest m = j.getManifest();
            return m != null && m.getMainAttributes().getValue("Start-Class") != null
                    && String.valueOf(m.getMainAttributes().getValue("Main-Class"))
                            .startsWith("org.springframework.boot.loader.");
        } catch (IOException e) {
            return false;
        }
    }

    private static Manifest manifest(Path jar) {
        try (JarFile j = new JarFile(jar.toFile())) {
            Manifest m = j.getManifest();
            if (m == null) {
                throw new IllegalStateException(jar + " has no manifest: not a Spring Boot executable jar"
                        + " (spring-boot-maven-plugin's repackage makes one)");
            }
            return m;
        } catch (IOException e) {
            throw new IllegalStateException(jar + " is not a jar: " + e.getMessage(), e);
        }
    }

    /** A jar of Boot 3.2 or newer: its JarLauncher is what NginxJarLauncher extends. */
    private static void checkLauncher(Path jar, Attributes main) {
        String mainClass = main.getValue("Main-Class");
        if (main.getValue("Start-Class") == null || mainClass == null
                || !mainClass.startsWith("org.springframework.boot.loader.")) {
            throw new IllegalStateException(jar + " is not a Spring Boot executable jar (its manifest names no"
                    + " Start-Class and no org.springframework.boot.loader Main-Class: build it with"
                    + " spring-boot-maven-plugin's repackage, or Gradle's bootJar)");
        }
        if (!mainClass.startsWith("org.springframework.boot.loader.launch.")) {
            throw new IllegalStateException(jar + " is a jar of Spring Boot " + main.getValue("Spring-Boot-Version")
                    + ", whose launcher is " + mainClass + ": nginx-jvm serves Spring Boot 3.2 and newer");
        }
    }

    /**
     * The version of the Jetty the application brings (its nested
     * jetty-server jar's, in BOOT-INF/lib or an executable WAR's
     * WEB-INF/lib), or null: the seam is built for one Jetty line.
     */
    static String jettyOf(Path jar) {
        try (JarFile j = new JarFile(jar.toFile())) {
            return j.stream().map(e -> e.getName())
                    .filter(n -> n.matches("(BOOT|WEB)-INF/lib(-provided)?/jetty-server-[0-9][^/]*\\.jar"))
                    .map(n -> n.substring(n.lastIndexOf("/jetty-server-") + 14, n.length() - 4))
                    .findFirst().orElse(null);
        } catch (IOException e) {
            return null;
        }
    }

    /** The seam jar for an application whose Jetty is {@code jetty} (null: none). */
    static Path seamJar(String jetty) {
        String named = System.getProperty(SEAM);
        String name = jetty != null && jetty.startsWith("12.0.") ? SEAM_JAR_JETTY_12_0 : SEAM_JAR;
        Path seam;
        if (named != null && !named.isEmpty()) {
            seam = Path.of(named).toAbsolutePath();
        } else {
            try {
                Path here = Path.of(BootHandler.class.getProtectionDomain().getCodeSource().getLocation().toURI());
                seam = here.resolveSibling(name);
            } catch (Exception e) {
                throw new IllegalStateException("cannot tell where " + name + " is: name it with -D" + SEAM, e);
            }
        }
        if (!Files.isRegularFile(seam)) {
            throw new IllegalStateException("the seam jar " + seam + " is missing (mvn -f runtime/servlet/pom.xml"
                    + " package makes it; -D" + SEAM + " names another)");
        }
        return seam;
    }

    private static String[] args() {
        String a = System.getProperty(ARGS, "").trim();
        return a.isEmpty() ? new String[0] : a.split("\\s+");
    }

    private static long timeoutSeconds() {
        try {
            return Long.parseLong(System.getProperty(TIMEOUT, "300"));
        } catch (NumberFormatException e) {
            throw new IllegalStateException("-D" + TIMEOUT + "=" + System.getProperty(TIMEOUT)
                    + ": not a number of seconds");
        }
    }

    /** An exception and its causes, in one line: Spring's messages no longer say their causes. */
    static String describe(Throwable t) {
        t = unwrap(t);
        StringBuilder b = new StringBuilder(String.valueOf(t));
        Throwable c = t.getCause();
        for (int depth = 0; c != null && c != t && depth < 8; depth++) {
            String s = String.valueOf(c);
            if (b.indexOf(s) < 0) {
                b.append("; caused by ").append(s);
            }
            t = c;
            c = c.getCause();
        }
        return b.toString();
    }

    private static Throwable unwrap(Throwable t) {
        while (t instanceof InvocationTargetException && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static String where(Thread t) {
        StackTraceElement[] stack = t.getStackTrace();
        return stack.length == 0 ? "(ended)" : stack[0].toString();
    }
}
