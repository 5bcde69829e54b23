package testapp;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Iterator;
import java.util.concurrent.atomic.AtomicLong;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * The Java twin of testapp.life (tests/test_life.py): reads its body after
 * ?sleep= ms and answers its own token, the digest of the body it read and
 * ?lines= more lines carrying the token, streamed from an InputStream.
 */
public final class Life implements Handler {
    /** Bodies read whole that were not the ones their clients sent. */
    private static final AtomicLong FOREIGN = new AtomicLong();
    /** Body reads that failed because the request had ended. */
    private static final AtomicLong ENDED = new AtomicLong();

    public static long foreign() {
        return FOREIGN.get();
    }

    public static long ended() {
        return ENDED.get();
    }

    @Override
    public Response handle(Request r) throws Exception {
        long sleep = param(r.queryString(), "sleep");
        if (sleep > 0) {
            Thread.sleep(sleep);
        }
        String token = r.header("X-Token");
        if (token == null) {
            token = "";
        }
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        long n = 0;
        try (InputStream in = r.body()) {
            byte[] buf = new byte[8192];
            for (int k; (k = in.read(buf)) >= 0; ) {
                md.update(buf, 0, k);
                n += k;
            }
        } catch (IOException e) {
            ENDED.incrementAndGet();
            return Response.of(500, "text/plain", "the request ended");
        }
        StringBuilder hex = new StringBuilder();
        for (byte b : md.digest()) {
            hex.append(String.format("%02x", b & 0xff));
        }
        String sent = r.header("X-Sha256");
        if (sent != null && !sent.contentEquals(hex)) {
            FOREIGN.incrementAndGet();
        }
        String head = "token=" + token + "\nsha=" + hex + "\nlen=" + n + "\n";
        long lines = param(r.queryString(), "lines");
        if (lines <= 0) {
            return Response.of(200, "text/plain", head);
        }
        final String t = token;
        Iterator<InputStream> parts = new Iterator<>() {
            long i = -1;

            public boolean hasNext() {
                return i < lines;
            }

            public InputStream next() {
                String s = i < 0 ? head : t + " " + i + "\n";
                i++;
                return new ByteArrayInputStream(s.getBytes(StandardCharsets.UTF_8));
            }
        };
        InputStream body = new SequenceInputStream(new java.util.Enumeration<InputStream>() {
            public boolean hasMoreElements() {
                return parts.hasNext();
            }

            public InputStream nextElement() {
                return parts.next();
            }
        });
        return Response.of(200, "text/plain", body);
    }

    private static long param(String query, String name) {
        if (query == null) {
            return 0;
        }
        for (String kv : query.split("&")) {
            int eq = kv.indexOf('=');
            if (eq > 0 && kv.substring(0, eq).equals(name)) {
                return Long.parseLong(kv.substring(eq + 1));
            }
        }
        return 0;
    }
}
