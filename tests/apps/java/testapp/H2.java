package testapp;

import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * The targets of h2spec's runs over HTTP/2 (bench/h2spec.py): each reads
 * the request body, whatever came, then answers.
 */
public final class H2 {
    private H2() {
    }

    private static long drain(Request r) throws Exception {
        try (InputStream in = r.body()) {
            return in.transferTo(OutputStream.nullOutputStream());
        }
    }

    /** A streamed body: 8 pieces of 1 KB, each flushed as it is sent. */
    public static final class Stream implements Handler {
        @Override
        public Response handle(Request r) throws Exception {
            long read = drain(r);
            List<byte[]> pieces = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                pieces.add(("piece " + i + " of a body streamed after " + read + " bytes read\n"
                        + "x".repeat(1024)).substring(0, 1024).getBytes(StandardCharsets.US_ASCII));
            }
            return Response.of(200, "text/plain", pieces);
        }
    }

    /**
     * Large response headers: 6 fields of 4,000 bytes, a header block
     * larger than one 16 KB frame (nginx sends CONTINUATION frames).
     */
    public static final class BigHeaders implements Handler {
        @Override
        public Response handle(Request r) throws Exception {
            drain(r);
            Response res = Response.of(200, "text/plain", "large headers\n");
            for (int i = 0; i < 6; i++) {
                res.header("X-Large-" + i, Integer.toString(i).repeat(4000));
            }
            return res;
        }
    }
}
