package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RequestTest {
    // A self-signed certificate (openssl req -x509, CN=nginx-jvm test client).
    static final String CERT_PEM = "-----BEGIN CERTIFICATE-----\n"
            + "MIIBmDCCAT2gAwIBAgIUE+t+ZEwIMHaXBJsdf0IqseoMM00wCgYIKoZIzj0EAwIw\n"
            + "IDEeMBwGA1UEAwwVbmdpbngtanZtIHRlc3QgY2xpZW50MCAXDTI2MTEyMTE2NTI1\n"
            + "MVoYDzIxMjYxMDI4MTY1MjUxWjAgMR4wHAYDVQQDDBVuZ2lueC1qdm0gdGVzdCBj\n"
            + "bGllbnQwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAS4zd6UY343KrJ8jdWXM3n1\n"
            + "d6ODizUNSNJvjBRl0vlBLKLxkGLb5pNmOk/U5j9KxM27LuMw+nE9c9Np6qyQ3ffc\n"
            + "o1MwUTAdBgNVHQ4EFgQUAhRVrRgDaAcYu9KuRFfuMpgTJ+QwHwYDVR0jBBgwFoAU\n"
            + "AhRVrRgDaAcYu9KuRFfuMpgTJ+QwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQD\n"
            + "AgNJADBGAiEAkVYZvjwgDMmOKgbgIHrMP/f693NmfeihD0+dUUUDoLMCIQCG6kq1\n"
            + "0TRd8MS6MPwBOqbM6e0JnMxuY5lNOSm17tLbdw==\n"
            + "-----END CERTIFICATE-----\n";

    @TempDir
    Path tmp;

    @Test
    void fixedFields() {
        Request r = new RequestBytes().method("POST").path("/a%20b//c/../d").query("x=1&y=%20")
                .protocol("HTTP/1.0").https().port(8443).serverName("example.test")
                .remoteAddr("::1").request();
        assertEquals("POST", r.method());
        assertEquals("/a%20b//c/../d", r.uri());
        assertEquals("x=1&y=%20", r.queryString());
        assertEquals("HTTP/1.0", r.protocol());
        assertTrue(r.isHttps());
        assertEquals("https", r.scheme());
        assertEquals(8443, r.serverPort());
        assertEquals("example.test", r.serverName());
        assertEquals("::1", r.remoteAddr());
    }

    @Test
    void plainHttp() {
        Request r = new RequestBytes().port(80).request();
        assertFalse(r.isHttps());
        assertEquals("http", r.scheme());
        assertEquals(80, r.serverPort());
        assertEquals("GET", r.method());
        assertEquals("/", r.uri());
    }

    @Test
    void queryIsNullWithoutQuestionMarkAndEmptyWithABareOne() {
        assertNull(new RequestBytes().path("/p").query(null).request().queryString());
        assertEquals("", new RequestBytes().path("/p").query("").request().queryString());
    }

    @Test
    void fieldsAreDecodedAsLatin1Bytes() {
        // nginx hands over raw bytes; each byte becomes one char, nothing is decoded.
        Request r = new RequestBytes().path("/caf\u00e9").header("X-Name", "\u00ff\u0080").request();
        assertEquals("/caf\u00e9", r.uri());
        assertEquals("\u00ff\u0080", r.header("x-name"));
    }

    @Test
    void pathIsTheUriWhenNginxSentNoOtherAsciiWithoutACopy() {
        Request r = new RequestBytes().path("/a/b").query("x=1").header("Host", "h").request();
        assertEquals("/a/b", r.path());
        assertSame(r.uri(), r.path());
        assertEquals("h", r.header("host"));
    }

    @Test
    void pathDecodesTheUriAsUtf8WhenNginxSentNoOther() {
        // a raw UTF-8 path that nginx left as it was: uri() has its bytes, path() its text
        Request r = new RequestBytes().path("/caf\u00c3\u00a9").request();
        assertEquals("/caf\u00c3\u00a9", r.uri());
        assertEquals("/caf\u00e9", r.path());
    }

    @Test
    void pathIsNginxUriWhenSentAndTheFieldsAfterItStayInPlace() throws IOException {
        Request r = new RequestBytes().path("/a%20b/../caf%C3%A9").query("q")
                .cert(CERT_PEM.getBytes(StandardCharsets.US_ASCII)).nginxUri("/caf\u00e9 \u65e5")
                .header("X-One", "1").header("Host", "h").memory("body").request();
        assertEquals("/caf\u00e9 \u65e5", r.path());
        assertEquals("/a%20b/../caf%C3%A9", r.uri());
        assertEquals("q", r.queryString());
        assertNotNull(r.sslClientCert());
        assertEquals(2, r.headerCount());
        assertEquals("1", r.header("x-one"));
        assertEquals("body", latin1(readAll(r.body())));
    }

    @Test
    void highPortIsNotSigned() {
        assertEquals(65535, new RequestBytes().port(65535).request().serverPort());
    }

    @Test
    void headersByLowerCaseNameWithRepeatsJoined() {
        Request r = new RequestBytes()
                .header("Host", "example.test")
                .header("Accept", "text/html")
                .header("X-Multi", "1")
                .header("x-MULTI", "2")
                .header("Cookie", "a=1")
                .header("COOKIE", "b=2")
                .header("X-Empty", "")
                .header("x-multi", "3")
                .request();
        Map<String, String> h = r.headers();
        assertEquals(List.of("host", "accept", "x-multi", "cookie", "x-empty"), List.copyOf(h.keySet()));
        assertEquals("example.test", h.get("host"));
        assertEquals("1,2,3", h.get("x-multi"));
        assertEquals("a=1; b=2", h.get("cookie"));
        assertEquals("", h.get("x-empty"));
        assertSame(h, r.headers());
    }

    @Test
    void headerLookupInAnyCase() {
        Request r = new RequestBytes().header("Content-Type", "text/plain").request();
        assertEquals("text/plain", r.header("content-type"));
        assertEquals("text/plain", r.header("CONTENT-TYPE"));
        assertEquals("text/plain", r.header("Content-Type"));
        assertNull(r.header("content-length"));
    }

    @Test
    void headerFieldsByIndexAsSpelled() {
        Request r = new RequestBytes().header("X-One", "1").header("x-TWO", "2").header("X-One", "3").request();
        assertEquals(3, r.headerCount());
        assertEquals("X-One", r.headerName(0));
        assertEquals("1", r.headerValue(0));
        assertEquals("x-TWO", r.headerName(1));
        assertEquals("2", r.headerValue(1));
        assertEquals("X-One", r.headerName(2));
        assertEquals("3", r.headerValue(2));
        assertThrows(IndexOutOfBoundsException.class, () -> r.headerName(3));
        assertThrows(IndexOutOfBoundsException.class, () -> r.headerValue(-1));
    }

    @Test
    void noHeaders() {
        Request r = new RequestBytes().request();
        assertEquals(0, r.headerCount());
        assertTrue(r.headers().isEmpty());
        assertNull(r.header("host"));
    }

    @Test
    void clientCertificate() {
        assertNull(new RequestBytes().request().sslClientCert());
        X509Certificate c = new RequestBytes().https()
                .cert(CERT_PEM.getBytes(StandardCharsets.US_ASCII)).request().sslClientCert();
        assertNotNull(c);
        assertEquals("CN=nginx-jvm test client", c.getSubjectX500Principal().getName());
        // Garbage is no certificate, not an exception in the handler.
        assertNull(new RequestBytes().cert("not a cert".getBytes(StandardCharsets.US_ASCII))
                .request().sslClientCert());
    }

    @Test
    void certificateDoesNotShiftTheFieldsAfterIt() {
        Request r = new RequestBytes().cert(CERT_PEM.getBytes(StandardCharsets.US_ASCII))
                .header("X-After", "cert").memory("body").request();
        assertEquals("cert", r.header("x-after"));
        assertEquals("body", new String(readAll(r.body()), StandardCharsets.ISO_8859_1));
    }

    // ---- body ----

    @Test
    void noBody() throws IOException {
        Request r = new RequestBytes().header("Host", "h").request();
        assertFalse(r.hasBody());
        try (InputStream in = r.body()) {
            assertEquals(-1, in.read());
        }
    }

    @Test
    void emptyBodySegment() throws IOException {
        Request r = new RequestBytes().memory(new byte[0]).request();
        assertTrue(r.hasBody(), "a body segment was sent, even if empty");
        assertEquals(-1, r.body().read());
        assertArrayEquals(new byte[0], readAll(r.body()));
    }

    @Test
    void memorySegments() throws IOException {
        Request r = new RequestBytes().header("Content-Length", "11").memory("hello ").memory("world").request();
        assertTrue(r.hasBody());
        assertEquals("hello world", latin1(readAll(r.body())));
        assertEquals("hello world", latin1(readByteByByte(r.body())));
        for (int block = 1; block <= 12; block++) {
            assertEquals("hello world", latin1(readInBlocks(r.body(), block)), "block size " + block);
        }
    }

    @Test
    void bodyReadBeforeHeaders() throws IOException {
        // body() finds where the body starts by walking the headers; it must not need headers() first.
        Request r = new RequestBytes().header("A", "1").header("B", "22").memory("xyz").request();
        assertEquals("xyz", latin1(readAll(r.body())));
        assertEquals("22", r.header("b"));
        Request r2 = new RequestBytes().header("A", "1").memory("xyz").request();
        assertTrue(r2.hasBody());
    }

    @Test
    void everyByteValueSurvives() throws IOException {
        byte[] all = new byte[256];
        for (int i = 0; i < 256; i++) {
            all[i] = (byte) i;
        }
        Request r = new RequestBytes().memory(all).request();
        InputStream in = r.body();
        for (int i = 0; i < 256; i++) {
            assertEquals(i, in.read(), "read() returns the byte unsigned");
        }
        assertEquals(-1, in.read());
        assertArrayEquals(all, readAll(r.body()));
    }

    @Test
    void fileSegmentWithOffsetAndLength() throws IOException {
        Path f = write("0123456789abcdef");
        Request r = new RequestBytes().file(f.toString(), 4, 6).request();
        assertTrue(r.hasBody());
        assertEquals("456789", latin1(readAll(r.body())));
        assertEquals("456789", latin1(readByteByByte(r.body())));
        assertEquals("456789", latin1(readInBlocks(r.body(), 4)));
    }

    @Test
    void largeFileSegment() throws IOException {
        byte[] data = new byte[300_000];
        new Random(42).nextBytes(data);
        Path f = tmp.resolve("large");
        Files.write(f, data);
        Request r = new RequestBytes().file(f.toString(), 1000, data.length - 1000).request();
        byte[] expected = java.util.Arrays.copyOfRange(data, 1000, data.length);
        assertArrayEquals(expected, readAll(r.body()));
        assertArrayEquals(expected, readInBlocks(r.body(), 8191));
    }

    @Test
    void mixedSegments() throws IOException {
        Path f = write("..abc..");
        Path g = write("XYZ");
        Request r = new RequestBytes()
                .memory("<")
                .file(f.toString(), 2, 3)
                .memory("")
                .file(g.toString(), 0, 3)
                .file(g.toString(), 1, 0)
                .memory(">")
                .request();
        assertEquals("<abcXYZ>", latin1(readAll(r.body())));
        assertEquals("<abcXYZ>", latin1(readByteByByte(r.body())));
        for (int block = 1; block <= 9; block++) {
            assertEquals("<abcXYZ>", latin1(readInBlocks(r.body(), block)), "block size " + block);
        }
    }

    @Test
    void eachBodyCallIsAFreshStream() throws IOException {
        Request r = new RequestBytes().memory("once").request();
        InputStream a = r.body();
        assertEquals('o', a.read());
        InputStream b = r.body();
        assertNotSame(a, b);
        assertEquals("once", latin1(readAll(b)));
        assertEquals("nce", latin1(readAll(a)));
    }

    @Test
    void zeroLengthReadReturnsZero() throws IOException {
        InputStream in = new RequestBytes().memory("ab").request().body();
        assertEquals(0, in.read(new byte[4], 0, 0));
        assertEquals('a', in.read());
    }

    @Test
    void readAfterCloseEnds() throws IOException {
        Path f = write("abcdef");
        InputStream in = new RequestBytes().memory("12").file(f.toString(), 0, 6).request().body();
        assertEquals('1', in.read());
        in.close();
        assertEquals(-1, in.read());
    }

    @Test
    void tempFileShorterThanAnnouncedIsAnError() throws IOException {
        Path f = write("abc");
        InputStream in = new RequestBytes().file(f.toString(), 0, 10).request().body();
        IOException e = assertThrows(IOException.class, in::readAllBytes);
        assertTrue(e.getMessage().contains("ended early"), e.getMessage());
    }

    @Test
    void readAfterTheRequestEndedFails() throws IOException {
        Path f = write("abcdef");
        Request r = new RequestBytes().file(f.toString(), 0, 6).request();
        InputStream before = r.body();
        assertEquals('a', before.read());
        r.end();
        IOException e = assertThrows(IOException.class, before::read);
        assertTrue(e.getMessage().contains("request is over"), e.getMessage());
        assertThrows(IOException.class, () -> r.body().read());
    }

    @Test
    void missingTempFileIsAnIOException() {
        InputStream in = new RequestBytes().file(tmp.resolve("gone").toString(), 0, 10).request().body();
        assertThrows(IOException.class, in::read);
    }

    // ---- helpers ----

    private Path write(String content) throws IOException {
        Path f = Files.createTempFile(tmp, "body", ".tmp");
        Files.writeString(f, content, StandardCharsets.ISO_8859_1);
        return f;
    }

    static String latin1(byte[] b) {
        return new String(b, StandardCharsets.ISO_8859_1);
    }

    static byte[] readAll(InputStream in) {
        try (in) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static byte[] readByteByByte(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != -1) {
            out.write(c);
        }
        return out.toByteArray();
    }

    static byte[] readInBlocks(InputStream in, int size) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] b = new byte[size + 2];
        int n;
        // Read into the middle of the array, to check the offset is honoured.
        while ((n = in.read(b, 1, size)) != -1) {
            assertTrue(n > 0 && n <= size, "read returned " + n);
            out.write(b, 1, n);
        }
        return out.toByteArray();
    }

    @Test
    void statusAndBytesSentForLogHandlers() {
        Request r = new RequestBytes().answered(404, 1234L).request();
        assertEquals(404, r.status());
        assertEquals(1234L, r.bytesSent());
        assertEquals("GET", r.method());
    }

    @Test
    void variablesNeedALiveRequest() {
        Request r = new RequestBytes().request();
        // no nginx request behind it: a clear exception, never a crash
        IllegalStateException e = org.junit.jupiter.api.Assertions.assertThrows(
                IllegalStateException.class, () -> r.variable("uri"));
        org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("nginx"), e.getMessage());
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> r.variable("$"));
    }
}
