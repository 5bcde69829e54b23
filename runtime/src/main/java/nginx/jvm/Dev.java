package nginx.jvm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * {@code nginx-jvm dev} ({@code -Dnginx.jvm.dev=DIR:DIR...}): a thread of
 * the worker looks at the Clojure sources under the directories every
 * {@value #POLL_MS} ms; when some changed, {@code nginx.jvm.dev/reload}
 * reloads their namespaces and the loaded ones that depend on them, in
 * dependency order, on that thread at once. A request that arrives
 * meanwhile waits for the reload's end (on the thread that takes it: the
 * event loop, for every {@code jvm_mode}). Until a reload succeeds, its
 * error is the answer. A handler's exception answers
 * a page with its stack trace. Clojure only: a Java class is not reloaded.
 * Off (one constant false test per request) without the property.
 */
final class Dev {
    static final boolean ON = System.getProperty("nginx.jvm.dev") != null;
    static final int POLL_MS = 100;

    private static final Object LOCK = new Object();
    // file -> "mtime size", as last seen by the watcher
    private static final Map<Path, String> seen = new HashMap<>();
    private static final List<String> changed = new ArrayList<>();
    private static final List<Path> dirs = new ArrayList<>();
    private static volatile boolean pending;
    // the last reload's failure, answered until a reload succeeds
    private static volatile Throwable reloadError;
    private static volatile String reloadWhat;

    private Dev() {
    }

    /** Starts the watcher (from Worker.configure), when dev is on. */
    static void start() {
        if (!ON) {
            return;
        }
        try {
            Class.forName("clojure.lang.RT");
        } catch (ClassNotFoundException e) {
            Log.notice("nginx.jvm.dev", "no Clojure on the class path: nothing is reloaded (a Java"
                    + " class changes with a restart); a handler's exception answers its stack trace");
            return;
        }
        for (String d : System.getProperty("nginx.jvm.dev").split(":")) {
            if (!d.isEmpty() && Files.isDirectory(Paths.get(d))) {
                dirs.add(Paths.get(d).toAbsolutePath().normalize());
            }
        }
        scan();
        synchronized (LOCK) {
            changed.clear();
            pending = false;
        }
        try {
            // loaded and run once now, not first by a save's reload
            Object fn = clojure("nginx.jvm.dev", "reload");
            Class.forName("clojure.lang.IFn").getMethod("invoke", Object.class, Object.class)
                    .invoke(fn, roots(), List.of());
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            Log.error("nginx.jvm.dev", "cannot load nginx.jvm.dev (Clojure on the class path?)", e);
        }
        Thread t = new Thread(Dev::watch, "nginx-jvm dev watcher");
        t.setDaemon(true);
        t.start();
        Log.notice("nginx.jvm.dev", "watching " + dirs + " every " + POLL_MS
                + " ms: a changed namespace is reloaded before the next request");
    }

    private static void watch() {
        while (true) {
            try {
                Thread.sleep(POLL_MS);
                scan();
            } catch (InterruptedException e) {
                return;
            } catch (Throwable t) {
                Log.error("nginx.jvm.dev", "the watcher failed", t);
            }
        }
    }

    private static boolean source(Path p) {
        String s = p.getFileName().toString();
        return s.endsWith(".clj") || s.endsWith(".cljc");
    }

    /** Notes the files added or changed since the last look. */
    private static void scan() {
        Map<Path, String> now = new HashMap<>();
        for (Path dir : dirs) {
            try (Stream<Path> files = Files.walk(dir)) {
                files.filter(Dev::source).forEach(p -> {
                    try {
                        BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class);
                        if (a.isRegularFile()) {
                            now.put(p, a.lastModifiedTime().toMillis() + " " + a.size());
                        }
                    } catch (IOException e) {
                        // removed meanwhile
                    }
                });
            } catch (IOException | java.io.UncheckedIOException e) {
                // a directory removed or unreadable meanwhile: looked at again next time
            }
        }
        List<String> found = new ArrayList<>();
        synchronized (seen) {
            for (Map.Entry<Path, String> e : now.entrySet()) {
                if (!e.getValue().equals(seen.get(e.getKey()))) {
                    found.add(e.getKey().toString());
                }
            }
            seen.clear();
            seen.putAll(now);
        }
        if (!found.isEmpty()) {
            synchronized (LOCK) {
                changed.addAll(found);
                pending = true;
            }
            // at once, rather than by the next request: that one then waits
            // for the end of this reload at most
            beforeRequest();
        }
    }

    /**
     * Before a request: reloads what changed since the last one. Returns the
     * failure to answer with (the last reload's, until one succeeds), or null.
     */
    static Throwable beforeRequest() {
        if (pending) {
            synchronized (LOCK) {
                if (pending) {
                    reload(new ArrayList<>(changed));
                    changed.clear();
                    pending = false;
                }
            }
        }
        return reloadError;
    }

    private static void reload(List<String> files) {
        long started = System.nanoTime();
        try {
            Object fn = clojure("nginx.jvm.dev", "reload");
            Class<?> ifn = Class.forName("clojure.lang.IFn");
            // [reloaded-namespaces failed-namespace throwable]
            List<?> result = (List<?>) ifn.getMethod("invoke", Object.class, Object.class)
                    .invoke(fn, roots(), files);
            long ms = (System.nanoTime() - started) / 1_000_000;
            Throwable error = (Throwable) result.get(2);
            if (error == null) {
                reloadError = null;
                reloadWhat = null;
                Worker.reloadHandlers();
                Log.notice("nginx.jvm.dev", "reloaded " + result.get(0) + " in " + ms + " ms");
            } else {
                reloadError = error;
                reloadWhat = "reloading " + result.get(1) + " failed";
                Log.error("nginx.jvm.dev", reloadWhat + " (a request answers this until a save fixes it)",
                        error);
            }
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            Throwable t = e instanceof java.lang.reflect.InvocationTargetException ? e.getCause() : e;
            reloadError = t;
            reloadWhat = "reloading failed";
            Log.error("nginx.jvm.dev", "reloading failed", t);
        }
    }

    /**
     * The var ns/name, its namespace required: by reflection, so that this
     * class loads without Clojure (a Java handler's dev).
     */
    private static Object clojure(String ns, String name) throws ReflectiveOperationException {
        Class<?> rt = Class.forName("clojure.lang.RT");
        Object require = rt.getMethod("var", String.class, String.class).invoke(null, "clojure.core", "require");
        Class<?> symbol = Class.forName("clojure.lang.Symbol");
        Class.forName("clojure.lang.IFn").getMethod("invoke", Object.class)
                .invoke(require, symbol.getMethod("intern", String.class).invoke(null, ns));
        return rt.getMethod("var", String.class, String.class).invoke(null, ns, name);
    }

    /** A handler's failure: logged as without dev, answered with the page. */
    static Response failed(String message, Throwable t) {
        Log.error("nginx.jvm.dev", message, t);
        return page(message, t);
    }

    private static List<String> roots() {
        List<String> roots = new ArrayList<>();
        for (Path d : dirs) {
            roots.add(d.toString());
        }
        return roots;
    }

    /** What the request answers while the last reload failed. */
    static Response reloadPage() {
        return page(reloadWhat, reloadError);
    }

    /** A 500 page with the failure and its stack trace (dev only). */
    static Response page(String message, Throwable t) {
        StringBuilder b = new StringBuilder(4096);
        b.append("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>500: ")
                .append(escape(message))
                .append("</title></head>\n<body style=\"font-family: sans-serif\">\n<h1>500: ")
                .append(escape(message)).append("</h1>\n");
        b.append("<p>nginx-jvm dev, worker ").append(System.getProperty("nginx.jvm.worker", "0"))
                .append(" (pid ").append(ProcessHandle.current().pid())
                .append("): this page is for development only; a server not started by"
                        + " <code>nginx-jvm dev</code> answers a plain 500 and logs the trace.</p>\n");
        if (t != null) {
            java.io.StringWriter trace = new java.io.StringWriter();
            t.printStackTrace(new java.io.PrintWriter(trace));
            b.append("<pre>").append(escape(trace.toString())).append("</pre>\n");
        }
        b.append("</body></html>\n");
        return Response.of(500, "text/html; charset=utf-8", b.toString())
                .header("Cache-Control", "no-store");
    }

    private static String escape(String s) {
        if (s == null) {
            return "";
        }
        StringBuilder b = new StringBuilder(s.length() + 16);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '<': b.append("&lt;"); break;
                case '>': b.append("&gt;"); break;
                case '&': b.append("&amp;"); break;
                case '"': b.append("&quot;"); break;
                default: b.append(c);
            }
        }
        return b.toString();
    }
}
