package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The checks a request header field passes in Java before nginx changes
 * it (Request#setHeader and friends); nginx's side is in
 * tests/test_request_headers.py.
 */
class RequestHeadersTest {

    private static Request request() {
        return new RequestBytes().header("X-Foo", "a").request();
    }

    @Test
    void namesAreTokens() {
        assertArrayEquals("X-Foo_1.~".getBytes(StandardCharsets.ISO_8859_1), Request.fieldName("X-Foo_1.~"));
        for (String bad : new String[] {"", "Bad Name", "X:Y", "X\r\nY", "X\0", "(x)", "é", "X\tY", "/"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Request.fieldName(bad), bad);
            assertFalse(e.getMessage().contains("\r") || e.getMessage().contains("\n"),
                    "the message quotes the name safely: " + e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> Request.fieldName(null));
    }

    @Test
    void bodyFramingCannotChange() {
        for (String n : new String[] {"Content-Length", "content-length", "Transfer-Encoding", "TRANSFER-ENCODING"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Request.fieldName(n));
            assertTrue(e.getMessage().contains("request body"), e.getMessage());
        }
    }

    @Test
    void valuesHoldNoControlButTab() {
        assertArrayEquals("a\tb c\u00ff".getBytes(StandardCharsets.ISO_8859_1),
                Request.fieldValue("X", "a\tb c\u00ff"));
        assertArrayEquals("?".getBytes(StandardCharsets.ISO_8859_1), Request.fieldValue("X", "\u20ac"));
        assertArrayEquals(new byte[0], Request.fieldValue("X", ""));
        for (char c : new char[] {'\r', '\n', 0, 0x0b, 0x1f, 0x7f}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Request.fieldValue("X-Foo", "a" + c + "b"));
            assertTrue(e.getMessage().contains(String.format("0x%02X", (int) c)), e.getMessage());
        }
    }

    @Test
    void hosts() {
        for (String ok : new String[] {"example.com", "Example.COM:8080", "example.com.", "127.0.0.1:80",
                "[::1]", "[::1]:8080", "localhost:", "a"}) {
            assertTrue(Request.isHost(ok), ok);
        }
        for (String bad : new String[] {"", ":80", "a..b", "a/b", "a b", "[::1", "[::1]x", "h:8o", ".",
                "example.com:80:80"}) {
            assertFalse(Request.isHost(bad), bad);
        }
        assertThrows(IllegalArgumentException.class, () -> Request.fieldValue("host", "a/b"));
    }

    @Test
    void onlyRewriteAndAccessHandlersMayChangeFields() {
        Request r = request();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> r.setHeader("X-Foo", "b"));
        assertTrue(e.getMessage().contains("jvm_rewrite or jvm_access"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> r.clearHeader("X-Foo"));
        assertThrows(IllegalStateException.class, () -> r.addHeader("X-Foo", "c"));
    }

    @Test
    void badArgumentsFailBeforeAnyChange() {
        Request r = request();
        r.beforeContent = true;
        // checked in the calling thread, before the hop to the loop
        assertThrows(IllegalArgumentException.class, () -> r.setHeader("X Foo", "b"));
        assertThrows(IllegalArgumentException.class, () -> r.addHeader("X-Foo", null));
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("X-Ok", "1");
        m.put("X-List", List.of("a", "b"));
        m.put("X-Bad", "evil\r\nX-Injected: 1");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> r.setHeaders(m));
        assertTrue(e.getMessage().contains("X-Bad"), e.getMessage());
    }
}
