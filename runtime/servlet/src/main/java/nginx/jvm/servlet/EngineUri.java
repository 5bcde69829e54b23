package nginx.jvm.servlet;

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
 * <p>{@code $uri} comes with the request's description
 * ({@link Request#path}): read on the handler's thread, with no hop to
 * the event loop.
 */
public final class EngineUri {
    public static final String RAW_URI_ATTRIBUTE = "nginx.jvm.raw_uri";

    private EngineUri() {
    }

    /** The decoded path the engine maps on: nginx's {@code $uri}. */
    public static String decodedPath(Request r) {
        return r.path();
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
}
