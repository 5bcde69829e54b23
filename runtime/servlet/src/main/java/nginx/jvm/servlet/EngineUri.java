package nginx.jvm.servlet;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import nginx.jvm.Request;

/**
 * Which URI the servlet engine sees: one definition for both engines.
 *
 * <p>nginx chose the location on its {@code $uri}: the path decoded and
 * normalised ({@code .} and {@code ..} resolved, {@code //} merged), after
 * any {@code rewrite}, {@code try_files} or internal redirect. The engine
 * maps servlets, filters and security constraints on its own decoded path.
 * If the two differ, a location nginx denies can be reached through the
 * engine's path rules ({@code /x/..;/admin}: nginx sees a segment "..;",
 * Tomcat strips the ";" and resolves ".."). So the engine is given
 * {@code $uri} as its decoded path, and as its request URI the same path
 * percent-encoded again, ";" included: neither the engine nor an
 * application that parses {@code getRequestURI()} itself can read a path
 * other than the one nginx routed on. The raw request target is kept as
 * the request attribute {@link #RAW_URI_ATTRIBUTE}.
 *
 * <p>{@code -Dnginx.jvm.servlet.uri=raw} (the spike's measurement only)
 * takes the raw path instead, decoded but not normalised, to measure what
 * reading {@code $uri} costs off the event loop.
 */
public final class EngineUri {
    public static final String RAW_URI_ATTRIBUTE = "nginx.jvm.raw_uri";
    static final boolean FROM_NGINX = !"raw".equals(System.getProperty("nginx.jvm.servlet.uri"));

    private EngineUri() {
    }

    /** The decoded path the engine maps on: nginx's {@code $uri}. */
    public static String decodedPath(Request r) {
        if (FROM_NGINX) {
            String uri = r.variable("uri");
            return uri == null || uri.isEmpty() ? "/" : uri;
        }
        return decode(r.uri());
    }

    /** {@code path} percent-encoded: what the engine reports as the request URI. */
    public static String encode(String path) {
        int n = path.length();
        int i = 0;
        while (i < n && plain(path.charAt(i))) {
            i++;
        }
        if (i == n) {
            return path;
        }
        byte[] b = path.getBytes(StandardCharsets.UTF_8);
        StringBuilder s = new StringBuilder(b.length + 16);
        for (byte x : b) {
            int c = x & 0xff;
            if (c < 0x80 && plain((char) c)) {
                s.append((char) c);
            } else {
                s.append('%').append(HEX[c >> 4]).append(HEX[c & 15]);
            }
        }
        return s.toString();
    }

    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    /** RFC 3986 pchar and "/", less ";" (a path parameter to both engines). */
    private static boolean plain(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                || "-._~!$&'()*+,=:@/".indexOf(c) >= 0;
    }

    /** %XX decoding of a raw path, as UTF-8; a bad escape stays as it is. */
    static String decode(String raw) {
        if (raw.indexOf('%') < 0) {
            return raw;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(raw.length());
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c == '%' && i + 2 < raw.length() && hex(raw.charAt(i + 1)) >= 0 && hex(raw.charAt(i + 2)) >= 0) {
                out.write(hex(raw.charAt(i + 1)) * 16 + hex(raw.charAt(i + 2)));
                i += 2;
            } else {
                out.write(c);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    private static int hex(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    }
}
