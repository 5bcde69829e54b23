package example;

import java.io.InputStream;
import java.security.MessageDigest;
import java.util.HexFormat;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * An upload hashed while it arrives: served from a location with
 * {@code jvm_request_buffering off} (and {@code jvm_mode pool} or
 * {@code virtual}), the handler starts with the body's first bytes and
 * each read waits for the client. nginx keeps a few pieces for it and
 * reads no faster than it hashes: a 1 GB upload costs the worker no more
 * memory than a small one, and no temporary file.
 */
public final class Upload implements Handler {
    @Override
    public Response handle(Request request) throws Exception {
        if (!request.method().equals("POST") && !request.method().equals("PUT")) {
            return Response.of(405, "text/plain", "POST or PUT a body\n").header("Allow", "POST, PUT");
        }
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        long n = 0;
        // throws IOException if the client leaves, stalls past
        // client_body_timeout or sends more than client_max_body_size
        try (InputStream in = request.body()) {
            byte[] buf = new byte[64 * 1024];
            for (int k; (k = in.read(buf)) > 0; n += k) {
                sha.update(buf, 0, k);
            }
        }
        return Response.of(200, "text/plain",
                n + " bytes, sha-256 " + HexFormat.of().formatHex(sha.digest()) + "\n");
    }
}
