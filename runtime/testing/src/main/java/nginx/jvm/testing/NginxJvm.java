package nginx.jvm.testing;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A handler served by a real nginx-jvm, for a project's own tests: the
 * launcher ({@code nginx-jvm run}) on a free loopback port, with the test's
 * class path, stopped by {@link #close()}.
 *
 * <pre>{@code
 * try (NginxJvm server = NginxJvm.builder("com.example.Hello")
 *         .args("--shared-dict", "hits:1m").start()) {
 *     HttpResponse<String> r = client.send(
 *         HttpRequest.newBuilder(server.uri("/")).build(), BodyHandlers.ofString());
 * }
 * }</pre>
 *
 * The launcher is the system property {@code nginx.jvm.launcher}, else the
 * environment's {@code NGINX_JVM_LAUNCHER}, else {@code nginx-jvm} on the
 * {@code PATH}, else {@code /usr/bin/nginx-jvm} (the Debian package's).
 * The class path is the system property {@code nginx.jvm.classpath}, else
 * the test JVM's own (Maven Surefire's {@code surefire.test.class.path},
 * else {@code java.class.path}), without the nginx-jvm-api and
 * nginx-jvm-test jars (the worker brings the runtime) and without entries
 * that do not exist.
 */
public final class NginxJvm implements AutoCloseable {
    /** The location the fixture asks to learn that a worker is up: nginx
     *  answers it with the worker's pid. */
    static final String READY = "/.nginx-jvm-test-ready";

    private final Process process;
    private final int port;
    private final Path log;

    private NginxJvm(Process process, int port, Path log) {
        this.process = process;
        this.port = port;
        this.log = log;
    }

    /** A server of {@code handler}: a Ring var (my.app/handler) or a Java class. */
    public static Builder builder(String handler) {
        return new Builder(handler);
    }

    /** The port it listens on, on 127.0.0.1. */
    public int port() {
        return port;
    }

    /** http://127.0.0.1:PORT + path ("/" when path is empty). */
    public URI uri(String path) {
        if (path.isEmpty()) {
            path = "/";
        } else if (!path.startsWith("/")) {
            path = "/" + path;
        }
        return URI.create("http://127.0.0.1:" + port + path);
    }

    /** The launcher's process id. */
    public long pid() {
        return process.pid();
    }

    /** What the launcher and nginx wrote so far (stdout and the error log). */
    public String log() {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(its log cannot be read: " + e + ")";
        }
    }

    /**
     * Stops the server: SIGTERM to the launcher, which stops nginx
     * gracefully and removes its prefix; after 30 seconds, SIGKILL to it and
     * to what it started.
     */
    @Override
    public void close() {
        List<ProcessHandle> children = process.descendants().collect(Collectors.toList());
        process.destroy();
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                children.forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            children.forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
        }
        try {
            Files.deleteIfExists(log);
        } catch (IOException e) {
            // a temporary file: left behind, harmless
        }
    }

    /** How to start one: the handler, the class path and the launcher's options. */
    public static final class Builder {
        private final String handler;
        private String classpath;
        private String launcher;
        private final List<String> args = new ArrayList<>();
        private int workers = 1;
        private long startSeconds = Long.getLong("nginx.jvm.startTimeout", 120);

        private Builder(String handler) {
            this.handler = handler;
        }

        /** The handler's class path (default: the test JVM's, as said above). */
        public Builder classpath(String classpath) {
            this.classpath = classpath;
            return this;
        }

        /** The launcher to run (default: as said above). */
        public Builder launcher(String launcher) {
            this.launcher = launcher;
            return this;
        }

        /** More options of nginx-jvm run: --shared-dict hits:1m, --mode pool, ... */
        public Builder args(String... more) {
            args.addAll(Arrays.asList(more));
            return this;
        }

        /** nginx worker processes (default 1). */
        public Builder workers(int n) {
            this.workers = n;
            return this;
        }

        /** How long a worker may take to come up (default 120 s). */
        public Builder startTimeout(long seconds) {
            this.startSeconds = seconds;
            return this;
        }

        /**
         * Starts the server and returns once a worker answers; fails with
         * the launcher's output when it exits first or takes too long.
         */
        public NginxJvm start() throws IOException {
            String exe = launcher != null ? launcher : findLauncher();
            String cp = classpath != null ? classpath : testClasspath();
            IOException last = null;
            for (int attempt = 0; attempt < 5; attempt++) {
                int port = freePort();
                List<String> cmd = new ArrayList<>(List.of(exe, "run",
                        "--handler", handler, "--classpath", cp,
                        "--port", Integer.toString(port),
                        "--workers", Integer.toString(workers),
                        "--server", "location = " + READY + " { return 200 $pid; }"));
                cmd.addAll(args);
                Path log = Files.createTempFile("nginx-jvm-test", ".log");
                Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                        .redirectOutput(log.toFile()).start();
                NginxJvm server = new NginxJvm(p, port, log);
                try {
                    server.awaitReady(startSeconds, workers);
                    return server;
                } catch (IOException e) {
                    String text = server.log();
                    server.close();
                    last = e;
                    // another process took the port between its choice and nginx's bind
                    if (!text.contains("Address already in use")) {
                        throw e;
                    }
                }
            }
            throw last;
        }
    }

    /**
     * Waits until every worker has answered the ready location (new
     * connections, whichever worker takes each): a worker still starting
     * its JVM cannot be stopped gracefully, nginx would kill it.
     */
    private void awaitReady(long seconds, int workers) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        Set<String> pids = new HashSet<>();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IOException("nginx-jvm exited with status " + process.exitValue()
                        + " before serving; its output:\n" + log());
            }
            String pid = probe();
            if (pid != null) {
                pids.add(pid);
                if (pids.size() >= workers) {
                    return;
                }
                continue;
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while nginx-jvm started", e);
            }
        }
        throw new IOException("nginx-jvm did not serve within " + seconds + " s; its output:\n" + log());
    }

    /** The pid of the worker that answered the ready location, or null. */
    private String probe() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
            s.setSoTimeout(5000);
            OutputStream out = s.getOutputStream();
            out.write(("GET " + READY + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String reply = new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
            int body = reply.indexOf("\r\n\r\n");
            return reply.startsWith("HTTP/1.1 200") && body > 0 ? reply.substring(body + 4) : null;
        } catch (IOException e) {
            return null;
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress("127.0.0.1", 0));
            return s.getLocalPort();
        }
    }

    static String findLauncher() {
        String p = System.getProperty("nginx.jvm.launcher");
        if (p == null || p.isEmpty()) {
            p = System.getenv("NGINX_JVM_LAUNCHER");
        }
        if (p != null && !p.isEmpty()) {
            return p;
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(File.pathSeparator)) {
                File f = new File(dir, "nginx-jvm");
                if (!dir.isEmpty() && f.canExecute()) {
                    return f.getPath();
                }
            }
        }
        File deb = new File("/usr/bin/nginx-jvm");
        if (deb.canExecute()) {
            return deb.getPath();
        }
        throw new IllegalStateException("no nginx-jvm launcher: set the system property "
                + "nginx.jvm.launcher or NGINX_JVM_LAUNCHER to bin/nginx-jvm, put it on the PATH, "
                + "or install the Debian package libnginx-mod-http-jvm");
    }

    /** The test JVM's class path, as the handler's (see the class's comment). */
    public static String testClasspath() {
        String cp = System.getProperty("nginx.jvm.classpath");
        if (cp == null || cp.isEmpty()) {
            cp = System.getProperty("surefire.test.class.path");
        }
        if (cp == null || cp.isEmpty()) {
            cp = System.getProperty("java.class.path", "");
        }
        List<String> kept = new ArrayList<>();
        for (String e : cp.split(File.pathSeparator)) {
            if (e.isEmpty() || !new File(e).exists()) {
                continue;
            }
            String name = new File(e).getName();
            if (name.startsWith("nginx-jvm-api-") || name.startsWith("nginx-jvm-test-")) {
                continue;
            }
            kept.add(new File(e).getAbsolutePath());
        }
        return String.join(File.pathSeparator, kept);
    }
}
