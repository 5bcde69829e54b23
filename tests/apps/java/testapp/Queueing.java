package testapp;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * For tests/test_queueing.py, in one worker: /q/block?ms=N holds its thread
 * until /q/release or N ms; /q/run?tag=T records T as run and answers it;
 * /q/ran answers the tags run so far, in order, and forgets them; /q/held
 * answers how many handlers are held now; /q/carriers the virtual threads'
 * scheduler's parallelism, as the JVM was given it.
 */
public final class Queueing implements Handler {
    private static final List<String> RAN = new ArrayList<>();
    private static volatile CountDownLatch gate = new CountDownLatch(1);
    private static final java.util.concurrent.atomic.AtomicInteger HELD =
            new java.util.concurrent.atomic.AtomicInteger();

    private static String param(Request r, String name) {
        String q = r.queryString() == null ? "" : r.queryString();
        for (String kv : q.split("&")) {
            if (kv.startsWith(name + "=")) {
                return kv.substring(name.length() + 1);
            }
        }
        return "";
    }

    @Override
    public Response handle(Request r) throws Exception {
        String uri = r.uri();
        if (uri.endsWith("/block")) {
            HELD.incrementAndGet();
            try {
                boolean released = gate.await(Long.parseLong(param(r, "ms")), TimeUnit.MILLISECONDS);
                return Response.of(200, "text/plain", released ? "released" : "timed out");
            } finally {
                HELD.decrementAndGet();
            }
        }
        if (uri.endsWith("/release")) {
            CountDownLatch g = gate;
            gate = new CountDownLatch(1);
            g.countDown();
            return Response.of(200, "text/plain", "ok");
        }
        if (uri.endsWith("/carriers")) {
            String p = System.getProperty("jdk.virtualThreadScheduler.parallelism");
            return Response.of(200, "text/plain", p == null ? "unset" : p);
        }
        if (uri.endsWith("/held")) {
            return Response.of(200, "text/plain", Integer.toString(HELD.get()));
        }
        if (uri.endsWith("/run")) {
            String tag = param(r, "tag");
            synchronized (RAN) {
                RAN.add(tag);
            }
            return Response.of(200, "text/plain", tag);
        }
        if (uri.endsWith("/ran")) {
            synchronized (RAN) {
                String all = String.join(",", RAN);
                RAN.clear();
                return Response.of(200, "text/plain", all);
            }
        }
        return Response.of(404, "text/plain", "no such thing");
    }
}
