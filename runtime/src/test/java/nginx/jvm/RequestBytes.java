package nginx.jvm;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Builds a request description in the layout ngx_http_jvm_request.c writes
 * (native byte order, strings as an int length and their bytes), so the Java
 * side can be tested without nginx. Written from the C comment, not from
 * Request.java, so a disagreement between the two shows up as a failure.
 */
final class RequestBytes {
    // The flag bits of the C module's NGX_HTTP_JVM_REQ_HTTPS, _HAS_QUERY, _BODY_FILE and _HAS_URI.
    private static final int HTTPS = 1, HAS_QUERY = 2, BODY_FILE = 8, HAS_URI = 32;

    private int flags;
    private int port = 80;
    private int status;
    private long sent;
    private String method = "GET";
    private String path = "/";
    private String query = "";
    private String protocol = "HTTP/1.1";
    private String serverName = "localhost";
    private String remoteAddr = "127.0.0.1";
    private byte[] cert = new byte[0];
    private byte[] nginxUri;
    private final List<String[]> headers = new ArrayList<>();
    private final ByteArrayOutputStream segments = new ByteArrayOutputStream();
    private int segmentCount;

    RequestBytes method(String m) {
        method = m;
        return this;
    }

    RequestBytes path(String p) {
        path = p;
        return this;
    }

    /** The part after '?'; null means the request target had no '?'. */
    RequestBytes query(String q) {
        if (q == null) {
            flags &= ~HAS_QUERY;
            query = "";
        } else {
            flags |= HAS_QUERY;
            query = q;
        }
        return this;
    }

    RequestBytes protocol(String p) {
        protocol = p;
        return this;
    }

    RequestBytes https() {
        flags |= HTTPS;
        return this;
    }

    /** What a log handler sees: the status answered and the bytes sent. */
    RequestBytes answered(int st, long bytes) {
        status = st;
        sent = bytes;
        return this;
    }

    RequestBytes port(int p) {
        port = p;
        return this;
    }

    RequestBytes serverName(String s) {
        serverName = s;
        return this;
    }

    RequestBytes remoteAddr(String a) {
        remoteAddr = a;
        return this;
    }

    RequestBytes cert(byte[] pem) {
        cert = pem;
        return this;
    }

    /** nginx's $uri when it is not the path: one more string, after the certificate. */
    RequestBytes nginxUri(String uri) {
        nginxUri = uri.getBytes(StandardCharsets.UTF_8);
        flags |= HAS_URI;
        return this;
    }

    RequestBytes header(String name, String value) {
        headers.add(new String[] {name, value});
        return this;
    }

    /** A body segment nginx held in memory. */
    RequestBytes memory(byte[] bytes) {
        putInt(segments, 0);
        putInt(segments, bytes.length);
        segments.writeBytes(bytes);
        segmentCount++;
        return this;
    }

    RequestBytes memory(String latin1) {
        return memory(latin1.getBytes(StandardCharsets.ISO_8859_1));
    }

    /** A body segment nginx wrote to a temp file: {@code length} bytes from {@code offset}. */
    RequestBytes file(String filePath, long offset, long length) {
        byte[] p = filePath.getBytes(StandardCharsets.UTF_8);
        putInt(segments, 1);
        putInt(segments, p.length);
        segments.writeBytes(p);
        putLong(segments, offset);
        putLong(segments, length);
        segmentCount++;
        flags |= BODY_FILE;
        return this;
    }

    byte[] build() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        putInt(out, flags);
        putInt(out, port);
        putInt(out, status);
        putLong(out, sent);
        for (String s : new String[] {method, path, query, protocol, serverName, remoteAddr}) {
            putString(out, s.getBytes(StandardCharsets.ISO_8859_1));
        }
        putString(out, cert);
        if (nginxUri != null) {
            putString(out, nginxUri);
        }
        putInt(out, headers.size());
        for (String[] h : headers) {
            putString(out, h[0].getBytes(StandardCharsets.ISO_8859_1));
            putString(out, h[1].getBytes(StandardCharsets.ISO_8859_1));
        }
        putInt(out, segmentCount);
        out.writeBytes(segments.toByteArray());
        return out.toByteArray();
    }

    Request request() {
        return new Request(build());
    }

    private static void putString(ByteArrayOutputStream out, byte[] b) {
        putInt(out, b.length);
        out.writeBytes(b);
    }

    private static void putInt(ByteArrayOutputStream out, int n) {
        out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.nativeOrder()).putInt(n).array());
    }

    private static void putLong(ByteArrayOutputStream out, long n) {
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.nativeOrder()).putLong(n).array());
    }
}
