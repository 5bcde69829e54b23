package testapp;

import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;

/**
 * What a request costs the JVM, known in advance ($jvm_alloc_bytes,
 * $jvm_cpu_us): ?alloc=N allocates an array of N bytes; ?spin=MS spins
 * without pause for MS ms of the wall clock and answers how long it spun,
 * in microseconds.
 */
public final class Cost implements Handler {
    /** Kept, so that the allocation cannot be optimised away. */
    static volatile byte[] kept;

    @Override
    public Response handle(Request r) {
        String q = r.queryString() == null ? "" : r.queryString();
        long spun = 0;
        for (String kv : q.split("&")) {
            if (kv.startsWith("alloc=")) {
                kept = new byte[Integer.parseInt(kv.substring(6))];
            } else if (kv.startsWith("spin=")) {
                long start = System.nanoTime();
                long end = start + Long.parseLong(kv.substring(5)) * 1_000_000L;
                long x = 1;
                while (System.nanoTime() < end) {
                    x = x * 6364136223846793005L + 1442695040888963407L;
                }
                spun = (System.nanoTime() - start) / 1000 + (x == 42 ? 1 : 0);
            }
        }
        return Response.of(200, "text/plain", Long.toString(spun));
    }

    /** jvm_async on: the same, answered within the call. */
    public static final class Async implements AsyncHandler {
        private final Cost cost = new Cost();

        @Override
        public void handle(Request request, Responder responder) {
            responder.respond(cost.handle(request));
        }
    }
}
