package testapp;

import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * Hashes its request body as it arrives (test_upload_stream.py,
 * jvm_request_buffering off): SHA-256 of what it read, answered as
 * "LENGTH HEX". What it did is recorded under ?tag= for /result to answer
 * (its client may be gone, or may still be sending): "first N" when its
 * first read returned, then "done LENGTH HEX" or "error MESSAGE".
 * ?early=1 answers after the first read, ?throw=1 throws there, ?close=1
 * closes the body there and answers 500 ms later, ?slow=MS sleeps after
 * each read, ?wait=MS before the first.
 */
public final class Upload implements Handler {
    static final Map<String, String> RESULTS = new ConcurrentHashMap<>();

    public static void record(String tag, String what) {
        if (tag != null) {
            RESULTS.put(tag, what);
        }
    }

    /** Hashes a stream: "LENGTH HEX"; records its first read and end under tag. */
    public static String hash(InputStream in, String tag, long slowMs) throws IOException {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[64 * 1024];
            long n = 0;
            for (int k; (k = in.read(buf)) > 0; ) {
                if (n == 0) {
                    record(tag, "first " + k);
                }
                md.update(buf, 0, k);
                n += k;
                if (slowMs > 0) {
                    Thread.sleep(slowMs);
                }
            }
            String s = n + " " + HexFormat.of().formatHex(md.digest());
            record(tag, "done " + s);
            return s;
        } catch (IOException e) {
            record(tag, "error " + e.getMessage());
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public Response handle(Request r) throws Exception {
        String tag = LateBody.param(r, "tag");
        if (r.uri().endsWith("/result")) {
            return Response.of(200, "text/plain", RESULTS.getOrDefault(tag, "none"));
        }
        record(tag, "started");
        String wait = LateBody.param(r, "wait");
        if (wait != null) {
            Thread.sleep(Long.parseLong(wait));
        }
        InputStream in = r.body();
        if (LateBody.param(r, "early") != null || LateBody.param(r, "throw") != null
                || LateBody.param(r, "close") != null) {
            byte[] buf = new byte[64 * 1024];
            int k = in.read(buf);
            record(tag, "first " + k);
            if (LateBody.param(r, "throw") != null) {
                throw new IllegalStateException("the upload handler fails on purpose");
            }
            if (LateBody.param(r, "close") != null) {
                in.close();
                Thread.sleep(500);
                return Response.of(200, "text/plain", "closed " + k);
            }
            return Response.of(200, "text/plain", "early " + k);
        }
        String slow = LateBody.param(r, "slow");
        return Response.of(200, "text/plain", hash(in, tag, slow == null ? 0 : Long.parseLong(slow)));
    }
}
