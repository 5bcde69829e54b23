package testapp;

import java.io.InputStream;
import java.lang.reflect.Field;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * Reads its request's body late (test_body_ownership.py): after ?sleep= ms,
 * or (?stash=1) on another thread after it answered. What it read is
 * recorded under ?tag= for /result to answer, since its client may be gone:
 * "ran" when the handler started, then "read LENGTH BYTES" (the distinct
 * bytes seen) or "error MESSAGE".
 */
public final class LateBody implements Handler {
    static final Map<String, String> RESULTS = new ConcurrentHashMap<>();

    public static void record(String tag, String what) {
        if (tag != null) {
            RESULTS.put(tag, what);
        }
    }

    public static String param(Request r, String name) {
        String q = r.queryString();
        if (q != null) {
            for (String kv : q.split("&")) {
                if (kv.startsWith(name + "=")) {
                    return kv.substring(name.length() + 1);
                }
            }
        }
        return null;
    }

    static long number(Request r, String name) {
        String v = param(r, name);
        return v == null ? 0 : Long.parseLong(v);
    }

    /** "read LENGTH BYTES", or "error MESSAGE". */
    public static String summary(InputStream in) {
        try (in) {
            long n = 0;
            TreeSet<Character> seen = new TreeSet<>();
            byte[] buf = new byte[8192];
            for (int k; (k = in.read(buf)) > 0; ) {
                for (int i = 0; i < k; i++) {
                    seen.add((char) buf[i]);
                }
                n += k;
            }
            StringBuilder b = new StringBuilder("read ").append(n).append(' ');
            seen.forEach(b::append);
            return b.toString();
        } catch (Exception e) {
            return "error " + e.getMessage();
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The runtime's live tasks and requests in flight (by reflection: the tests' window). */
    static String live() throws Exception {
        Class<?> worker = Class.forName("nginx.jvm.Worker");
        Field tasksField = worker.getDeclaredField("tasks");
        tasksField.setAccessible(true);
        Object tasks = tasksField.get(null);
        Field liveField = tasks.getClass().getDeclaredField("live");
        liveField.setAccessible(true);
        Field inFlight = Class.forName("nginx.jvm.Metrics").getDeclaredField("inFlight");
        inFlight.setAccessible(true);
        return ((Map<?, ?>) liveField.get(tasks)).size() + " " + inFlight.get(null);
    }

    @Override
    public Response handle(Request r) throws Exception {
        String tag = param(r, "tag");
        if (r.uri().endsWith("/result")) {
            String v = RESULTS.get(tag);
            return Response.of(200, "text/plain", v == null ? "none" : v);
        }
        if (r.uri().endsWith("/live")) {
            return Response.of(200, "text/plain", live());
        }
        record(tag, "ran");
        long ms = number(r, "sleep");
        if (param(r, "stash") != null) {
            InputStream body = r.body();
            Thread t = new Thread(() -> {
                sleep(ms);
                record(tag, summary(body));
            });
            t.setDaemon(true);
            t.start();
            return Response.of(200, "text/plain", "stashed");
        }
        sleep(ms);
        String s = summary(r.body());
        record(tag, s);
        return Response.of(200, "text/plain", s);
    }
}
