package testapp;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;

/**
 * Handlers for tests/test_abort.py: each request is named by ?name=, and
 * what happened to it (when it started, whether its abort callback ran and
 * how often, when its thread saw an interrupt, when it ended) is kept in
 * this worker's memory, read back by /state?name= on the event loop.
 * Times are System.currentTimeMillis(), the clock the test reads too.
 *
 * The last path segment chooses: sleep (?ms=), quick, stream, throwing,
 * late (a sleep that first tries the request ?kept= kept: its onAbort and
 * isAborted), state, and, for jvm_async on, wait (never answers) and
 * writer (a body written every 50 ms until the client leaves). Each notes
 * its thread's id ("threadId").
 */
public final class Abort implements Handler, AsyncHandler {
    private static final Map<String, Map<String, Object>> STATE = new ConcurrentHashMap<>();
    private static final Map<String, Request> KEPT = new ConcurrentHashMap<>();

    private static Map<String, Object> state(String name) {
        return STATE.computeIfAbsent(name, k -> new ConcurrentHashMap<>());
    }

    private static void note(String name, String key, Object value) {
        state(name).put(key, value);
    }

    private static void count(String name, String key) {
        ((AtomicInteger) state(name).computeIfAbsent(key, k -> new AtomicInteger())).incrementAndGet();
    }

    private static String param(Request r, String key, String dflt) {
        String q = r.queryString() == null ? "" : r.queryString();
        for (String kv : q.split("&")) {
            if (kv.startsWith(key + "=")) {
                return kv.substring(key.length() + 1);
            }
        }
        return dflt;
    }

    private static String what(Request r) {
        String uri = r.uri();
        return uri.substring(uri.lastIndexOf('/') + 1);
    }

    /** The callback the tests count: once per name, on which thread, when. */
    private static Runnable callback(String name) {
        return () -> {
            count(name, "callbacks");
            note(name, "callbackAt", System.currentTimeMillis());
            note(name, "callbackThread", Thread.currentThread().getName());
        };
    }

    @Override
    public Response handle(Request r) throws Exception {
        String name = param(r, "name", "none");
        switch (what(r)) {
            case "state":
                return state(r, name);
            case "quick":
                note(name, "registered", r.onAbort(callback(name)));
                note(name, "threadId", Thread.currentThread().getId());
                KEPT.put(name, r);
                return Response.of(200, "text/plain", "quick " + name);
            case "late":
                // a request that is over, kept by its handler: what it
                // registers now reaches nothing, this request's least
                String keptName = param(r, "kept", "none");
                Request kept = KEPT.get(keptName);
                note(name, "keptRegistered", kept != null && kept.onAbort(callback(keptName + "-late")));
                note(name, "keptAborted", kept != null && kept.isAborted());
                note(name, "registered", r.onAbort(callback(name)));
                return sleep(r, name);
            case "stream":
                return stream(r, name);
            case "throwing":
                note(name, "registered", r.onAbort(() -> {
                    throw new IllegalStateException("abort-callback-boom");
                }));
                r.onAbort(callback(name));
                return sleep(r, name);
            default:
                note(name, "registered", r.onAbort(callback(name)));
                return sleep(r, name);
        }
    }

    private static Response sleep(Request r, String name) {
        long ms = Long.parseLong(param(r, "ms", "30000"));
        note(name, "started", System.currentTimeMillis());
        note(name, "thread", Thread.currentThread().getName());
        note(name, "threadId", Thread.currentThread().getId());
        try {
            Thread.sleep(ms);
            note(name, "slept", System.currentTimeMillis());
        } catch (InterruptedException e) {
            note(name, "interruptedAt", System.currentTimeMillis());
        }
        // after the client left, a callback registered now runs at once
        if (r.isAborted()) {
            note(name, "abortedSeen", true);
            note(name, "lateRegistered", r.onAbort(() -> count(name, "lateRan")));
        }
        note(name, "ended", System.currentTimeMillis());
        return Response.of(200, "text/plain", "slept " + name);
    }

    /** A body of a line every 100 ms, produced after the handler returned. */
    private static Response stream(Request r, String name) {
        note(name, "registered", r.onAbort(callback(name)));
        note(name, "started", System.currentTimeMillis());
        Iterable<String> lines = () -> new java.util.Iterator<String>() {
            int i;

            @Override
            public boolean hasNext() {
                return i < 600;
            }

            @Override
            public String next() {
                if (i > 0) {
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException e) {
                        note(name, "interruptedAt", System.currentTimeMillis());
                        Thread.currentThread().interrupt();
                    }
                }
                return "line " + i++ + "\n";
            }
        };
        return Response.of(200, "text/plain", lines);
    }

    private static Response state(Request r, String name) {
        Map<String, Object> s = new TreeMap<>(STATE.getOrDefault(name, Map.of()));
        Request kept = KEPT.remove(name);
        if (kept != null) {
            // the request's response is complete: no callback may be added
            s.put("registeredAfterEnd", kept.onAbort(callback(name + "-after-end")));
            s.put("abortedAfterEnd", kept.isAborted());
        }
        StringBuilder b = new StringBuilder();
        s.forEach((k, v) -> b.append(k).append('=').append(v).append('\n'));
        return Response.of(200, "text/plain", b.toString());
    }

    @Override
    public void handle(Request r, Responder responder) throws Exception {
        String name = param(r, "name", "none");
        note(name, "started", System.currentTimeMillis());
        switch (what(r)) {
            case "writer":
                // a body that goes on until its client leaves
                note(name, "registered", r.onAbort(callback(name)));
                responder.respond(Response.of(200, "text/plain", (nginx.jvm.BodyWriter) out -> {
                    Thread t = new Thread(() -> {
                        try {
                            for (int i = 0; i < 1200; i++) {
                                out.write(("tick " + i + "\n").getBytes(StandardCharsets.UTF_8));
                                out.flush();
                                Thread.sleep(50);
                            }
                        } catch (IOException | InterruptedException e) {
                            note(name, "writerStopped", System.currentTimeMillis());
                        } finally {
                            try {
                                out.close();
                            } catch (IOException ignored) {
                                // the client is gone
                            }
                        }
                    });
                    t.setDaemon(true);
                    t.start();
                }));
                return;
            default:
                // never answers: only the client's leaving ends it
                note(name, "registered", r.onAbort(callback(name)));
        }
    }
}
