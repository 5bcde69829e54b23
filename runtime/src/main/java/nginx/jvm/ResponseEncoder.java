package nginx.jvm;

import java.io.File;
import java.io.InputStream;
import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.function.ToIntFunction;

/**
 * Writes a {@link Response} into the buffer the C module reads
 * ({@code ngx_http_jvm_response.c} decodes it), in the layout of
 * docs/internals.md, native byte order:
 *
 * <pre>
 * int status, int kind, long content-length (-1: unknown), int header-count,
 * header-count times (int len, name bytes, int len, value bytes),
 * then by kind: NONE nothing; INLINE int len, bytes; FILE int len, path bytes;
 * STREAM int id (of the body kept by the stream table); ERROR int len, message.
 * </pre>
 *
 * A response too large for the buffer is written into a new, larger one; the
 * old one then holds only the kind {@link Wire#BODY_MOVED}, which tells the
 * C module to fetch the new buffer.
 */
final class ResponseEncoder {
    private ByteBuffer buffer;
    /** Keeps a body sent in pieces and answers its id. */
    private final ToIntFunction<BodySource> streams;
    /** Keeps a WebSocket's listener and answers the socket's id. */
    private final Sockets sockets;
    /** Where the handler of the response being encoded runs (jvm_mode). */
    private int mode;

    /** Where a WebSocket listener is kept until its connection is upgraded. */
    interface Sockets {
        int register(WebSocketListener listener, int mode);
    }

    ResponseEncoder(int capacity, ToIntFunction<BodySource> streams, Sockets sockets) {
        buffer = ByteBuffer.allocateDirect(capacity).order(ByteOrder.nativeOrder());
        this.streams = streams;
        this.sockets = sockets;
    }

    /** Replaces the buffer with one of at least {@code capacity} bytes. */
    void grow(int capacity) {
        if (capacity > buffer.capacity()) {
            buffer = ByteBuffer.allocateDirect(Math.max(capacity, 2 * buffer.capacity()))
                    .order(ByteOrder.nativeOrder());
        }
    }

    /** Encodes the response of a handler that runs in {@code mode} (its WebSocket's listener runs there too). */
    int encode(Response response, int mode) {
        this.mode = mode;
        return encode(response);
    }

    ByteBuffer buffer() {
        return buffer;
    }

    /** Encodes a response; returns its length. */
    int encode(Response response) {
        ByteBuffer first = buffer;
        while (true) {
            try {
                buffer.clear();
                int n = write(response);
                if (buffer != first) {
                    first.putInt(0, 0).putInt(4, Wire.BODY_MOVED);
                }
                return n;
            } catch (BufferOverflowException e) {
                // Only headers can overflow (large bodies are streamed): grow.
                buffer = ByteBuffer.allocateDirect(buffer.capacity() * 2).order(ByteOrder.nativeOrder());
            } catch (BadResponseException e) {
                buffer = first;
                return error(500, e.getMessage(), null);
            }
        }
    }

    /** Encodes "answer {@code status} and log this message" (with the stack trace of {@code t}, if any). */
    int error(int status, String message, Throwable t) {
        byte[] bytes = Failure.describe(message, t).getBytes(StandardCharsets.UTF_8);
        int need = 24 + bytes.length;
        if (need > buffer.capacity()) {
            // Keep the start of an enormous trace: the buffer stays small.
            bytes = java.util.Arrays.copyOf(bytes, buffer.capacity() - 24);
        }
        buffer.clear();
        buffer.putInt(status).putInt(Wire.BODY_ERROR).putLong(-1).putInt(0);
        buffer.putInt(bytes.length).put(bytes);
        return buffer.position();
    }

    /** Encodes "nothing": a rewrite, access or log handler let the request go on. */
    int declined() {
        buffer.clear();
        buffer.putInt(0).putInt(Wire.BODY_DECLINED).putLong(-1).putInt(0);
        return buffer.position();
    }

    /**
     * Encodes what a header filter changed from {@code before} to
     * {@code after}: int status (0: the same), int kind EDITS, long -1, int
     * count of names; then each name (as the filter spelled it), an int n and
     * its n new values (none: the fields of that name are removed).
     */
    int edits(Response before, Response after) {
        int status = after.status();
        if (status != before.status() && !isFinal(status)) {
            return error(500, "the jvm_header_filter handler answered status " + status
                    + ", " + NOT_FINAL, null);
        }
        java.util.Map<String, java.util.List<String>> old = fields(before);
        java.util.Map<String, java.util.List<String>> now = fields(after);
        java.util.List<String> changed = new java.util.ArrayList<>();
        for (String name : now.keySet()) {
            if (!now.get(name).equals(old.get(name))) {
                if (name.equals("content-length")) {
                    // nginx sends the body it has: another length would misframe it
                    return error(500, "a jvm_header_filter handler cannot set Content-Length"
                            + " (it may remove it): the body is not the filter's to count", null);
                }
                changed.add(name);
            }
        }
        for (String name : old.keySet()) {
            if (!now.containsKey(name)) {
                changed.add(name);
            }
        }
        ByteBuffer first = buffer;
        while (true) {
            try {
                buffer.clear();
                buffer.putInt(status == before.status() ? 0 : status).putInt(Wire.BODY_EDITS)
                        .putLong(-1).putInt(changed.size());
                for (String key : changed) {
                    java.util.List<String> values = now.get(key);
                    String name = spelling(after, key);
                    if (name == null) {
                        name = spelling(before, key);
                    }
                    putHeaderName(name);
                    buffer.putInt(values == null ? 0 : values.size());
                    if (values != null) {
                        for (String v : values) {
                            if (v == null) {
                                throw new BadResponseException("the jvm_header_filter handler answered"
                                        + " a null value for the header field " + name);
                            }
                            putHeaderText(v, name);
                        }
                    }
                }
                if (buffer != first) {
                    first.putInt(0, 0).putInt(4, Wire.BODY_MOVED);
                }
                return buffer.position();
            } catch (BufferOverflowException e) {
                buffer = ByteBuffer.allocateDirect(buffer.capacity() * 2).order(ByteOrder.nativeOrder());
            } catch (BadResponseException e) {
                buffer = first;
                return error(500, e.getMessage(), null);
            }
        }
    }

    private static java.util.Map<String, java.util.List<String>> fields(Response r) {
        java.util.Map<String, java.util.List<String>> m = new java.util.LinkedHashMap<>();
        for (int i = 0; i < r.headerCount(); i++) {
            String name = r.headerName(i);
            if (name == null || name.isEmpty()) {
                throw new BadResponseException("the jvm_header_filter handler answered a header"
                        + " field with an empty name");
            }
            m.computeIfAbsent(name.toLowerCase(java.util.Locale.ROOT), k -> new java.util.ArrayList<>())
                    .add(r.headerValue(i));
        }
        return m;
    }

    private static String spelling(Response r, String key) {
        for (int i = 0; i < r.headerCount(); i++) {
            if (r.headerName(i).equalsIgnoreCase(key)) {
                return r.headerName(i);
            }
        }
        return null;
    }

    private static final String NOT_FINAL = "which is not a final status (200 to 599;"
            + " 101 only for a WebSocket upgrade)";

    /**
     * A status a response can end with. A 1xx is interim (RFC 9110, 15.2):
     * a client reads on for the final response, which would be the body.
     */
    private static boolean isFinal(int status) {
        return status >= 200 && status <= 599;
    }

    private int write(Response r) {
        int status = r.status();
        Object body = r.body();
        WebSocketListener listener = r.webSocketListener();
        if (!isFinal(status) && !(status == 101 && listener != null)) {
            throw new BadResponseException("the handler answered status " + status + ", " + NOT_FINAL);
        }
        String contentType = null;
        int count = r.headerCount();
        buffer.putInt(status);
        int kindAt = buffer.position();
        buffer.putInt(Wire.BODY_NONE).putLong(-1).putInt(count);
        for (int i = 0; i < count; i++) {
            String name = r.headerName(i);
            String value = r.headerValue(i);
            if (name == null || name.isEmpty() || value == null) {
                throw new BadResponseException("the handler answered a header field with"
                        + " an empty name or a null value: " + name);
            }
            putHeaderName(name);
            putHeaderText(value, name);
            if (contentType == null && name.length() == 12 && name.equalsIgnoreCase("Content-Type")) {
                contentType = value;
            }
        }
        if (listener != null) {
            // the socket's id: the C module answers the handshake, or gives it up
            if (buffer.remaining() < 4) {
                throw new BufferOverflowException();
            }
            buffer.putInt(kindAt, r.isTunnel() ? Wire.BODY_TUNNEL : Wire.BODY_UPGRADE);
            buffer.putInt(sockets.register(listener, mode));
            return buffer.position();
        }
        if (body == null) {
            return buffer.position();
        }
        if (body instanceof String) {
            return inline(kindAt, (String) body, charset(contentType));
        }
        if (body instanceof byte[]) {
            return inline(kindAt, (byte[]) body);
        }
        if (body instanceof File) {
            String name = ((File) body).getPath();
            if (name.indexOf(0) >= 0) {
                // a C string ends there: nginx would open the file named by what is before
                throw new BadResponseException("the handler answered the file \""
                        + name.replace("\0", "\\0") + "\", whose path holds a NUL");
            }
            byte[] path = name.getBytes(StandardCharsets.UTF_8);
            buffer.putInt(kindAt, Wire.BODY_FILE);
            buffer.putInt(path.length).put(path);
            return buffer.position();
        }
        if (buffer.remaining() < 4) {
            throw new BufferOverflowException();
        }
        return stream(kindAt, source(r));
    }

    /** The body goes in pieces: the C module gets the id it is kept under. */
    private int stream(int kindAt, BodySource source) {
        buffer.putInt(kindAt, Wire.BODY_STREAM);
        buffer.putInt(streams.applyAsInt(source));
        return buffer.position();
    }

    /** A body produced a piece at a time, which may block while it is: a stream, a seq, a writer. */
    static boolean producedInPieces(Object body) {
        return body instanceof InputStream || body instanceof BodyWriter
                || body instanceof Iterable && !unordered(body);
    }

    private static boolean unordered(Object body) {
        return body instanceof Map || body instanceof Set;
    }

    /** The source of a body sent in pieces: a stream, elements, a writer, or one already made. */
    static BodySource source(Response r) {
        Object body = r.body();
        if (body instanceof BodySource) {
            return (BodySource) body;
        }
        if (body instanceof InputStream) {
            return new BodySource.Stream((InputStream) body);
        }
        if (unordered(body)) {
            // no order, no defined form: Ring and its reference adapters refuse them too
            throw new BadResponseException("the handler answered a body of type "
                    + body.getClass().getName() + ", which nginx-jvm cannot send"
                    + " (a map or a set: send a seq, a String or bytes)");
        }
        if (body instanceof Iterable) {
            return new BodySource.Elements(((Iterable<?>) body).iterator(), charset(r.header("Content-Type")));
        }
        if (body instanceof BodyWriter) {
            return new BodySource.Stream(Pipe.start((BodyWriter) body));
        }
        throw new BadResponseException("the handler answered a body of type "
                + body.getClass().getName() + ", which nginx-jvm cannot send");
    }

    /** Strings up to this length are written into the buffer as they are read, when ASCII. */
    static final int DIRECT = 8192;

    /**
     * A String body: ASCII text in an ASCII-compatible charset (UTF-8,
     * ISO-8859-1, US-ASCII: one byte a char, the same) is written into the
     * buffer char by char, with no byte array of its own; anything else is
     * encoded as before.
     */
    private int inline(int kindAt, String s, Charset cs) {
        int len = s.length();
        if (len > DIRECT || len > buffer.remaining() - 4
                || cs != StandardCharsets.UTF_8 && cs != StandardCharsets.ISO_8859_1
                && cs != StandardCharsets.US_ASCII) {
            return inline(kindAt, s.getBytes(cs));
        }
        ByteBuffer b = buffer;
        int at = b.position() + 4;
        for (int i = 0; i < len; i++) {
            char c = s.charAt(i);
            if (c >= 0x80) {
                // what was written is written over
                return inline(kindAt, s.getBytes(cs));
            }
            b.put(at + i, (byte) c);
        }
        b.putInt(kindAt, Wire.BODY_INLINE).putLong(kindAt + 4, len);
        b.putInt(len);
        b.position(at + len);
        return b.position();
    }

    private int inline(int kindAt, byte[] bytes) {
        if (buffer.remaining() < 4) {
            throw new BufferOverflowException();
        }
        if (bytes.length > buffer.remaining() - 4) {
            buffer.putLong(kindAt + 4, bytes.length);
            return stream(kindAt, new BodySource.Bytes(bytes));
        }
        buffer.putInt(kindAt, Wire.BODY_INLINE).putLong(kindAt + 4, bytes.length);
        buffer.putInt(bytes.length);
        Wire.put(buffer, buffer.position(), bytes, 0, bytes.length);
        buffer.position(buffer.position() + bytes.length);
        return buffer.position();
    }

    /**
     * A header name: an HTTP token (RFC 9110, 5.1), or a bad response. "X:Y"
     * would read to a client as the field X, a space or a CR as something
     * else again.
     */
    private void putHeaderName(String name) {
        String refused = Gate.token(Gate.RESPONSE_NAME, name);
        if (refused != null) {
            throw new BadResponseException(refused);
        }
        int len = name.length();
        buffer.putInt(len);
        for (int i = 0; i < len; i++) {
            buffer.put((byte) name.charAt(i));
        }
    }

    /**
     * A header value as ISO-8859-1 bytes. RFC 9110, 5.5: visible characters,
     * SP, HTAB and obs-text (0x80-0xFF); any other control (CR, LF, NUL, VT,
     * DEL, ...) would split the response or be read differently by each
     * client and proxy, so it fails the response.
     */
    private void putHeaderText(String s, String name) {
        String refused = Gate.value(Gate.RESPONSE_VALUE, name, s);
        if (refused != null) {
            throw new BadResponseException(refused);
        }
        int len = s.length();
        buffer.putInt(len);
        for (int i = 0; i < len; i++) {
            char c = s.charAt(i);
            buffer.put(c > 0xff ? (byte) '?' : (byte) c);
        }
    }

    /** The charset named by a Content-Type value, UTF-8 when it names none or an unknown one. */
    static Charset charset(String contentType) {
        if (contentType == null || contentType.indexOf('=') < 0) {
            return StandardCharsets.UTF_8;      // most: no parameter, nothing to parse
        }
        int at = Request.charsetAt(contentType);
        if (at >= 0 && contentType.regionMatches(true, at, "utf-8", 0, 5)
                && (at + 5 == contentType.length() || contentType.charAt(at + 5) == ';'
                    || contentType.charAt(at + 5) == ' ')) {
            return StandardCharsets.UTF_8;      // the common one, without a String made of it
        }
        String name = Request.charsetParameter(contentType);
        if (name == null) {
            return StandardCharsets.UTF_8;
        }
        try {
            return Charset.forName(name);
        } catch (IllegalArgumentException e) {
            return StandardCharsets.UTF_8;
        }
    }
}
