package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class ResponseEncoderTest {
    /** The bodies the encoders kept to be sent in pieces, by id. */
    private final List<BodySource> kept = new java.util.ArrayList<>();
    private final ResponseEncoder encoder = newEncoder(4096);

    private ResponseEncoder newEncoder(int capacity) {
        return new ResponseEncoder(capacity, body -> {
            kept.add(body);
            return kept.size() - 1;
        }, (listener, mode) -> 0);
    }

    /** The body the last response is sent in pieces from, or null. */
    private BodySource pending() {
        return kept.isEmpty() ? null : kept.get(kept.size() - 1);
    }

    private DecodedResponse encode(Response r) {
        int n = encoder.encode(r);
        return DecodedResponse.decode(encoder.buffer(), n);
    }

    @Test
    void noBody() {
        DecodedResponse d = encode(new Response(204));
        assertEquals(204, d.status);
        assertEquals("NONE", d.kind);
        assertEquals(-1, d.contentLength);
        assertTrue(d.headers.isEmpty());
        assertNull(pending());
    }

    /**
     * ASCII Strings are written into the buffer char by char, others
     * encoded: every one of these must come out as String.getBytes of its
     * charset would, in the buffer or sent in pieces when too large for it,
     * and a non-ASCII char anywhere (first, last) must fall back cleanly.
     */
    @Test
    void stringBodiesAsTheirCharsetEncodesThem() throws IOException {
        String ascii = "0123456789abcdef".repeat(300);            // 4800: in a 4096 buffer, pieces
        String[] bodies = {"", "a", "Hello, Clojure!", "\u00e9", "caf\u00e9", "\u00e9abc",
            "abc\u20ac", "\ud83d\ude00 smile", ascii.substring(0, 4000), ascii.substring(0, 4000) + "\u00e9",
            ascii, "\ud800 lone surrogate", "tab\there\u007f"};
        String[] types = {"text/plain", "text/plain; charset=utf-8", "text/plain;charset=UTF-8",
            "text/html; charset=\"utf-8\"", "text/plain; charset=iso-8859-1",
            "text/plain; charset=US-ASCII", "text/plain; charset=utf-16", "text/plain; charset=nope"};
        for (String type : types) {
            java.nio.charset.Charset cs = ResponseEncoder.charset(type);
            for (String body : bodies) {
                kept.clear();
                DecodedResponse d = encode(Response.of(200, type, body));
                byte[] want = body.getBytes(cs);
                byte[] got = d.kind.equals("INLINE") ? d.body
                        : drain(pending()).getBytes(StandardCharsets.ISO_8859_1);
                assertArrayEquals(want, got, type + ", a body of " + body.length() + " chars");
                assertEquals(want.length, d.contentLength);
            }
        }
        assertEquals(StandardCharsets.UTF_8, ResponseEncoder.charset("text/plain; charset=utf-8"));
        assertEquals(StandardCharsets.UTF_8, ResponseEncoder.charset("text/plain; charset=UTF-8; x=y"));
        assertEquals(StandardCharsets.ISO_8859_1, ResponseEncoder.charset("text/plain; charset=latin1"));
        assertEquals(StandardCharsets.UTF_8, ResponseEncoder.charset("text/plain; charset=utf-8x"));
        assertEquals(StandardCharsets.UTF_8, ResponseEncoder.charset(null));
    }

    @Test
    void inlineString() {
        DecodedResponse d = encode(Response.of(200, "text/plain", "h\u00e9llo \u20ac"));
        assertEquals(200, d.status);
        assertEquals("INLINE", d.kind);
        byte[] utf8 = "h\u00e9llo \u20ac".getBytes(StandardCharsets.UTF_8);
        assertArrayEquals(utf8, d.body, "UTF-8 when the Content-Type names no charset");
        assertEquals(utf8.length, d.contentLength);
        assertEquals(List.of(List.of("Content-Type", "text/plain")), d.headers);
    }

    @Test
    void inlineStringWithoutContentType() {
        DecodedResponse d = encode(new Response(200).body("\u00e9"));
        assertArrayEquals(new byte[] {(byte) 0xc3, (byte) 0xa9}, d.body);
    }

    @Test
    void inlineBytes() {
        byte[] b = {0, 1, (byte) 0xff, 10, 13};
        DecodedResponse d = encode(new Response(201).body(b));
        assertEquals(201, d.status);
        assertEquals("INLINE", d.kind);
        assertArrayEquals(b, d.body);
        assertEquals(5, d.contentLength);
    }

    @Test
    void emptyStringIsAnEmptyInlineBody() {
        DecodedResponse d = encode(new Response(200).body(""));
        assertEquals("INLINE", d.kind);
        assertEquals(0, d.contentLength);
        assertEquals(0, d.body.length);
    }

    @Test
    void headersInOrderWithRepeats() {
        Response r = new Response(302)
                .header("Location", "/next")
                .header("Set-Cookie", "a=1")
                .header("Set-Cookie", "b=2")
                .header("X-Empty", "")
                .header("set-cookie", "c=3");
        DecodedResponse d = encode(r);
        assertEquals(302, d.status);
        assertEquals(List.of(
                List.of("Location", "/next"),
                List.of("Set-Cookie", "a=1"),
                List.of("Set-Cookie", "b=2"),
                List.of("X-Empty", ""),
                List.of("set-cookie", "c=3")), d.headers);
    }

    @Test
    void latin1Charset() {
        DecodedResponse d = encode(Response.of(200, "text/plain; charset=ISO-8859-1", "caf\u00e9"));
        assertArrayEquals(new byte[] {'c', 'a', 'f', (byte) 0xe9}, d.body);
        assertEquals(4, d.contentLength);
    }

    @Test
    void charsetSpellings() {
        byte[] latin1 = {(byte) 0xe9};
        assertArrayEquals(latin1, encode(Response.of(200, "text/html;charset=iso-8859-1", "\u00e9")).body);
        assertArrayEquals(latin1, encode(Response.of(200, "text/html; CHARSET=\"ISO-8859-1\"", "\u00e9")).body);
        assertArrayEquals(latin1, encode(Response.of(200, "text/html; charset=latin1; q=1", "\u00e9")).body);
        // The Content-Type header is found in any case.
        Response r = new Response(200).header("content-TYPE", "text/plain; charset=iso-8859-1").body("\u00e9");
        assertArrayEquals(latin1, encode(r).body);
    }

    @Test
    void unknownOrMalformedCharsetFallsBackToUtf8() {
        byte[] utf8 = {(byte) 0xc3, (byte) 0xa9};
        assertArrayEquals(utf8, encode(Response.of(200, "text/plain; charset=no-such-charset", "\u00e9")).body);
        assertArrayEquals(utf8, encode(Response.of(200, "text/plain; charset=", "\u00e9")).body);
        assertArrayEquals(utf8, encode(Response.of(200, "text/plain; charset=%%%", "\u00e9")).body);
    }

    @Test
    void charsetParsing() {
        assertEquals(StandardCharsets.UTF_8, ResponseEncoder.charset(null));
        assertEquals(StandardCharsets.UTF_8, ResponseEncoder.charset("text/plain"));
        assertEquals(StandardCharsets.ISO_8859_1, ResponseEncoder.charset("text/plain; charset=ISO-8859-1"));
        assertEquals(StandardCharsets.UTF_16BE, ResponseEncoder.charset("text/plain; charset=utf-16be"));
        assertEquals(StandardCharsets.UTF_8, ResponseEncoder.charset("text/plain; charset=bogus"));
    }

    @Test
    void fileBody() {
        File f = new File("/tmp/some dir/\u00e9t\u00e9.txt");
        DecodedResponse d = encode(Response.of(200, "text/plain", f));
        assertEquals("FILE", d.kind);
        assertEquals(f.getPath(), d.text, "the path in UTF-8");
        assertEquals(-1, d.contentLength, "nginx finds the length itself");
        assertNull(pending());
    }

    @Test
    void filePathWithNulIsAnError() {
        // "dir/secret.key\0.txt" would open dir/secret.key as a C string
        DecodedResponse d = encode(Response.of(200, "text/plain", new File("/srv/secret.key\0.txt")));
        assertEquals("ERROR", d.kind);
        assertEquals(500, d.status);
        assertTrue(d.text.contains("\"/srv/secret.key\\0.txt\", whose path holds a NUL"), d.text);
    }

    @Test
    void inputStreamIsStreamed() throws IOException {
        DecodedResponse d = encode(new Response(200).body(new ByteArrayInputStream("abc".getBytes())));
        assertEquals("STREAM", d.kind);
        assertEquals(-1, d.contentLength);
        assertInstanceOf(BodySource.Stream.class, pending());
        assertEquals("abc", drain(pending()));
    }

    @Test
    void iterableIsStreamedInTheResponseCharset() throws IOException {
        DecodedResponse d = encode(Response.of(200, "text/plain; charset=iso-8859-1",
                List.of("caf", "\u00e9")));
        assertEquals("STREAM", d.kind);
        assertEquals(-1, d.contentLength);
        assertInstanceOf(BodySource.Elements.class, pending());
        ByteBuffer out = ByteBuffer.allocate(64);
        int n = pending().fill(out);
        assertEquals(3, n);
        n = pending().fill(out);
        assertEquals(1, n);
        assertEquals((byte) 0xe9, out.get(0));
    }

    @Test
    void bodyWriterIsStreamed() throws IOException {
        BodyWriter w = out -> out.write("written".getBytes(StandardCharsets.US_ASCII));
        DecodedResponse d = encode(new Response(200).body(w));
        assertEquals("STREAM", d.kind);
        assertEquals("written", drain(pending()));
    }

    @Test
    void bodyTooLargeToInlineIsStreamedWithKnownLength() throws IOException {
        ResponseEncoder small = newEncoder(256);
        byte[] big = new byte[1000];
        for (int i = 0; i < big.length; i++) {
            big[i] = (byte) ('a' + i % 26);
        }
        int n = small.encode(Response.of(200, "text/plain", new String(big, StandardCharsets.US_ASCII)));
        DecodedResponse d = DecodedResponse.decode(small.buffer(), n);
        assertEquals("STREAM", d.kind);
        assertEquals(1000, d.contentLength);
        assertEquals(List.of(List.of("Content-Type", "text/plain")), d.headers);
        assertEquals(256, small.buffer().capacity());
        assertInstanceOf(BodySource.Bytes.class, pending());
        assertEquals(new String(big, StandardCharsets.US_ASCII), drain(pending()));
    }

    @Test
    void inlineLimitIsTheRoomLeftInTheBuffer() {
        // 20 bytes of fixed fields and no header: 64 - 20 - 4 = 40 bytes of body fit.
        ResponseEncoder small = newEncoder(64);
        int n = small.encode(new Response(200).body(new byte[40]));
        assertEquals("INLINE", DecodedResponse.decode(small.buffer(), n).kind);
        assertEquals(64, n);
        n = small.encode(new Response(200).body(new byte[41]));
        DecodedResponse d = DecodedResponse.decode(small.buffer(), n);
        assertEquals("STREAM", d.kind);
        assertEquals(41, d.contentLength);
    }

    @Test
    void bufferGrowsWhenHeadersDoNotFit() {
        ResponseEncoder small = newEncoder(64);
        ByteBuffer before = small.buffer();
        String longValue = "v".repeat(300);
        Response r = new Response(200)
                .header("X-Long", longValue)
                .header("X-Long", longValue + "2")
                .header("Content-Type", "text/plain")
                .body("the body");
        int n = small.encode(r);
        assertNotSame(before, small.buffer());
        assertEquals(Wire.BODY_MOVED, before.getInt(4), "the old buffer sends the C module to the new one");
        assertTrue(small.buffer().capacity() >= n);
        assertTrue(small.buffer().isDirect(), "the C module reads the buffer's address");
        DecodedResponse d = DecodedResponse.decode(small.buffer(), n);
        assertEquals(200, d.status);
        assertEquals("INLINE", d.kind);
        assertEquals(List.of(
                List.of("X-Long", longValue),
                List.of("X-Long", longValue + "2"),
                List.of("Content-Type", "text/plain")), d.headers);
        assertEquals("the body", d.bodyText());

        // The next response fits: the big buffer is kept.
        ByteBuffer grown = small.buffer();
        n = small.encode(new Response(204));
        assertSame(grown, small.buffer());
        assertEquals(204, DecodedResponse.decode(small.buffer(), n).status);
    }

    @Test
    void headerTextOutsideLatin1BecomesQuestionMark() {
        DecodedResponse d = encode(new Response(200).header("X-Name", "\u00e9\u20ac"));
        assertEquals(List.of(List.of("X-Name", "\u00e9?")), d.headers);
    }

    @Test
    void statusBounds() {
        assertEquals(200, encode(new Response(200)).status);
        assertEquals(599, encode(new Response(599)).status);
        encoder.encode(Response.upgrade(new WebSocketListener() { }));
        assertEquals(Wire.BODY_UPGRADE, encoder.buffer().getInt(4), "101 with a WebSocket upgrade");
        // a 1xx is interim: the client would read on for the final response
        for (int status : new int[] {100, 101, 103, 199, 99, 600, 0, -200}) {
            DecodedResponse d = encode(new Response(status).header("X", "y").body("ignored"));
            assertEquals("ERROR", d.kind, "status " + status);
            assertEquals(500, d.status);
            assertTrue(d.headers.isEmpty());
            assertTrue(d.text.contains("status " + status + ", which is not a final status"), d.text);
        }
    }

    @Test
    void headerWithControlCharacterIsAnError() {
        String[] bad = {"a\r\nX-Injected: 1", "a\nb", "a\rb", "a\0b", "a\u000bb", "a\u007fb",
            "a\u0001b", "a\u001fb", "\u000c"};
        String[] code = {"0x0D", "0x0A", "0x0D", "0x00", "0x0B", "0x7F", "0x01", "0x1F", "0x0C"};
        for (int i = 0; i < bad.length; i++) {
            DecodedResponse d = encode(new Response(200).header("X-Ok", "fine").header("X-Bad", bad[i]));
            assertEquals("ERROR", d.kind, bad[i]);
            assertEquals(500, d.status);
            assertTrue(d.text.contains("header field \"X-Bad\": it holds the control character " + code[i]), d.text);
        }
        DecodedResponse d = encode(new Response(200).header("X-Bad\r\nName", "v"));
        assertEquals("ERROR", d.kind, "a name can split the response too");
    }

    @Test
    void headerWithHtabSpaceOrObsTextIsSent() {
        // RFC 9110, 5.5: field-vchar, SP, HTAB and obs-text (0x80-0xFF)
        String value = "a\tb c\u0080\u00e9\u00ff";
        DecodedResponse d = encode(new Response(200).header("X-Ok", value));
        assertEquals(List.of(List.of("X-Ok", value)), d.headers);
    }

    @Test
    void headerNameThatIsNoTokenIsAnError() {
        for (String bad : new String[] {"Bad Name", "X:Y", "X-Na\u00efve", "(x)", "a/b", "x\u2028"}) {
            DecodedResponse d = encode(new Response(200).header(bad, "v"));
            assertEquals("ERROR", d.kind, bad);
            assertTrue(d.text.contains("is no HTTP token"), d.text);
        }
        DecodedResponse d = encode(new Response(200).header("X-Ok!#$%&'*+-.^_`|~09", "v"));
        assertEquals("HEADERS", d.kind.equals("ERROR") ? d.text : "HEADERS");
    }

    @Test
    void mapOrSetBodyIsAnError() {
        for (Object body : new Object[] {java.util.Map.of("a", "b"), java.util.Set.of("a")}) {
            DecodedResponse d = encode(new Response(200).body(body));
            assertEquals("ERROR", d.kind, body.toString());
            assertTrue(d.text.contains("cannot send"), d.text);
        }
    }

    @Test
    void nullHeaderValueOrEmptyNameIsAnError() {
        DecodedResponse d = encode(new Response(200).header("X-Null", null));
        assertEquals("ERROR", d.kind);
        assertTrue(d.text.contains("null value"), d.text);
        assertTrue(d.text.contains("X-Null"), d.text);
        assertEquals("ERROR", encode(new Response(200).header("", "v")).kind);
        assertEquals("ERROR", encode(new Response(200).header(null, "v")).kind);
    }

    @Test
    void unknownBodyTypeIsAnError() {
        DecodedResponse d = encode(new Response(200).body(42));
        assertEquals("ERROR", d.kind);
        assertEquals(500, d.status);
        assertTrue(d.text.contains("java.lang.Integer"), d.text);
        assertNull(pending());
    }

    @Test
    void enormousErrorMessageIsCutToTheBuffer() {
        // The message names the bad header field; a huge name makes a huge message.
        ResponseEncoder small = newEncoder(128);
        int n = small.encode(new Response(200).header("X".repeat(1000), null));
        assertEquals(128, n);
        DecodedResponse d = DecodedResponse.decode(small.buffer(), n);
        assertEquals("ERROR", d.kind);
        assertEquals(128 - 24, d.text.length());
        assertTrue(d.text.startsWith("the handler answered a header field"), d.text);
        assertEquals(128, small.buffer().capacity(), "an error message never grows the buffer");
    }

    @Test
    void aStreamedBodyIsNamedByItsId() {
        encode(new Response(200).body("inline"));
        DecodedResponse first = encode(new Response(200).body(new ByteArrayInputStream(new byte[1])));
        DecodedResponse second = encode(new Response(200).body(List.of("a")));
        assertEquals(0, first.stream);
        assertEquals(1, second.stream);
        assertInstanceOf(BodySource.Elements.class, kept.get(second.stream));
    }

    /** Reads a streamed body to its end the way the C module does, through a small buffer. */
    static String drain(BodySource source) throws IOException {
        ByteBuffer out = ByteBuffer.allocateDirect(100);
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        int n;
        while ((n = source.fill(out)) != -1) {
            assertTrue(n > 0 && n <= out.capacity(), "fill returned " + n);
            byte[] piece = new byte[n];
            out.get(0, piece);
            all.writeBytes(piece);
        }
        source.close();
        return all.toString(StandardCharsets.ISO_8859_1);
    }

    @Test
    void declinedSaysNothing() {
        int n = encoder.declined();
        DecodedResponse r = DecodedResponse.decode(encoder.buffer(), n);
        assertEquals("DECLINED", r.kind);
        assertEquals(0, r.status);
        assertTrue(r.headers.isEmpty());
    }

    @Test
    void editsNameWhatChanged() {
        Response before = new Response(200).header("Content-Type", "text/plain")
                .header("X-A", "1").header("X-Drop", "1");
        Response after = new Response(200).header("content-type", "text/html")
                .header("X-A", "1").header("X-New", "a").header("X-New", "b");
        int n = encoder.edits(before, after);
        ByteBuffer b = encoder.buffer().duplicate().order(java.nio.ByteOrder.nativeOrder());
        b.position(0).limit(n);
        assertEquals(0, b.getInt());                       // status unchanged
        assertEquals(Wire.BODY_EDITS, b.getInt());
        assertEquals(-1, b.getLong());
        assertEquals(3, b.getInt());
        assertEquals(List.of("content-type", "text/html"), edit(b));
        assertEquals(List.of("X-New", "a", "b"), edit(b));
        assertEquals(List.of("X-Drop"), edit(b));            // removed: no values
        assertEquals(n, b.position());
    }

    @Test
    void editsNewStatusAndBadValues() {
        int n = encoder.edits(new Response(200), new Response(418));
        assertEquals(418, encoder.buffer().getInt(0));
        n = encoder.edits(new Response(200), new Response(200).header("X", "a\r\nb"));
        assertEquals("ERROR", DecodedResponse.decode(encoder.buffer(), n).kind);
        n = encoder.edits(new Response(200), new Response(42));
        assertEquals("ERROR", DecodedResponse.decode(encoder.buffer(), n).kind);
        n = encoder.edits(new Response(200), new Response(200).header("X", "a\u000bb"));
        assertTrue(DecodedResponse.decode(encoder.buffer(), n).text.contains("control character 0x0B"));
        n = encoder.edits(new Response(200), new Response(200).header("X:Y", "v"));
        assertTrue(DecodedResponse.decode(encoder.buffer(), n).text.contains("is no HTTP token"));
    }

    @Test
    void editsNoInterimStatus() {
        for (int status : new int[] {100, 101, 103}) {
            int n = encoder.edits(new Response(200), new Response(status));
            DecodedResponse d = DecodedResponse.decode(encoder.buffer(), n);
            assertEquals("ERROR", d.kind, "status " + status);
            assertTrue(d.text.contains("status " + status + ", which is not a final status"), d.text);
        }
        // a WebSocket's 101, left as it is
        int n = encoder.edits(new Response(101), new Response(101).header("X", "y"));
        assertEquals(0, encoder.buffer().getInt(0));
        assertEquals(Wire.BODY_EDITS, encoder.buffer().getInt(4));
    }

    @Test
    void editsMayRemoveButNotSetContentLength() {
        Response before = new Response(200).header("Content-Length", "9");
        int n = encoder.edits(before, new Response(200).header("content-length", "9").header("X", "y"));
        assertEquals(Wire.BODY_EDITS, encoder.buffer().getInt(4), "the same length, other spelling");
        n = encoder.edits(before, new Response(200));
        assertEquals(Wire.BODY_EDITS, encoder.buffer().getInt(4), "removed: nginx frames the body");
        for (Response after : new Response[] {new Response(200).header("Content-Length", "100"),
                new Response(200).header("Content-Length", "9").header("Content-Length", "9")}) {
            n = encoder.edits(before, after);
            DecodedResponse d = DecodedResponse.decode(encoder.buffer(), n);
            assertEquals("ERROR", d.kind);
            assertTrue(d.text.contains("cannot set Content-Length"), d.text);
        }
        n = encoder.edits(new Response(200), new Response(200).header("Content-Length", "5"));
        assertEquals("ERROR", DecodedResponse.decode(encoder.buffer(), n).kind, "none before");
    }

    private static List<String> edit(ByteBuffer b) {
        List<String> out = new java.util.ArrayList<>();
        out.add(text(b));
        int values = b.getInt();
        for (int i = 0; i < values; i++) {
            out.add(text(b));
        }
        return out;
    }

    private static String text(ByteBuffer b) {
        byte[] s = new byte[b.getInt()];
        b.get(s);
        return new String(s, StandardCharsets.ISO_8859_1);
    }
}
