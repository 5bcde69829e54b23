package testapp;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * Requests that end while the event loop resumes a batch of their tasks
 * (test_wake_batch.py). The parent (a blocking handler: pool or virtual)
 * starts ?n= subrequests to /batch-child, each told to answer ?size= bytes
 * at the same moment (now + ?delay= ms), so that their tasks are named in
 * one Worker.wake(); it answers their statuses and lengths, then ?pad=
 * bytes more (a body its client may leave in the middle of). A child
 * larger than the child location's subrequest_output_buffer_size makes
 * nginx end the whole request (NGX_ERROR) while its siblings' ids still
 * wait in that batch.
 */
public final class Batch implements Handler {
    private static int intParam(Request r, String name, int otherwise) {
        String v = LateBody.param(r, name);
        return v == null ? otherwise : Integer.parseInt(v);
    }

    @Override
    public Response handle(Request r) throws Exception {
        int n = intParam(r, "n", 8);
        int size = intParam(r, "size", 100);
        int pad = intParam(r, "pad", 0);
        long until = System.currentTimeMillis() + intParam(r, "delay", 50);
        @SuppressWarnings("unchecked")
        CompletableFuture<Response>[] fs = new CompletableFuture[n];
        for (int i = 0; i < n; i++) {
            fs[i] = r.subrequest("/batch-child?until=" + until + "&size=" + size + "&i=" + i);
        }
        StringBuilder sb = new StringBuilder();
        for (CompletableFuture<Response> f : fs) {
            // the request may be gone (its client, or nginx ended it): then nobody reads this
            Response sub = f.get(30, TimeUnit.SECONDS);
            byte[] body = (byte[]) sub.body();
            sb.append(sub.status()).append(' ').append(body == null ? 0 : body.length).append('\n');
        }
        sb.append("x".repeat(pad));
        return Response.of(200, "text/plain", sb.toString().getBytes(StandardCharsets.US_ASCII));
    }

    /** Sleeps until ?until= (epoch ms), then answers ?size= bytes. */
    public static final class Child implements Handler {
        @Override
        public Response handle(Request r) throws Exception {
            long wait = Long.parseLong(LateBody.param(r, "until")) - System.currentTimeMillis();
            if (wait > 0) {
                Thread.sleep(wait);
            }
            return Response.of(200, "text/plain", "y".repeat(intParam(r, "size", 100)));
        }
    }
}
