package nginx.jvm;

import java.io.File;
import java.io.InputStream;
import java.util.Arrays;

/**
 * What a handler answers: a status, header fields and a body.
 *
 * <p>The body is one of: {@code null} (no body), {@code String} (encoded in the
 * charset named by the Content-Type header, UTF-8 when it names none),
 * {@code byte[]}, {@link InputStream} (sent in chunks as it is read, closed
 * afterwards), {@link File} (sent by nginx itself: sendfile, Range and
 * conditional GET), {@link Iterable} (each element in turn, a String or a
 * byte[], flushed one by one) or {@link BodyWriter}.
 */
public final class Response {
    private int status;
    /**
     * {@code fields} header fields; a name may repeat (Set-Cookie). The
     * first in two fields of its own, the others' names and values
     * alternating in an array made at the second, grown when full: a
     * response of one field (most: a Content-Type) is one object, with no
     * list and no array (bench/results/2026-11-27-alloc.md).
     */
    private String name0, value0;
    private String[] headers;
    private int fields;
    private Object body;
    private WebSocketListener listener;
    private boolean tunnel;

    public Response(int status) {
        this.status = status;
    }

    public static Response of(int status, String contentType, Object body) {
        Response r = new Response(status);
        if (contentType != null) {
            r.header("Content-Type", contentType);
        }
        return r.body(body);
    }

    public int status() {
        return status;
    }

    public Response status(int status) {
        this.status = status;
        return this;
    }

    /** Adds a header field; call again with the same name for several fields. */
    public Response header(String name, String value) {
        if (fields == 0) {
            name0 = name;
            value0 = value;
        } else {
            String[] h = headers;
            int at = 2 * (fields - 1);
            if (h == null) {
                h = headers = new String[6];
            } else if (at == h.length) {
                h = headers = Arrays.copyOf(h, 2 * h.length);
            }
            h[at] = name;
            h[at + 1] = value;
        }
        fields++;
        return this;
    }

    public Object body() {
        return body;
    }

    public Response body(Object body) {
        this.body = body;
        return this;
    }

    /**
     * The answer to a WebSocket upgrade request: the connection becomes a
     * WebSocket whose events go to {@code listener}. A subprotocol the client
     * offered may be chosen with the header {@code Sec-WebSocket-Protocol}.
     * To a request that is not a valid handshake, nginx answers 400 (426 for
     * a WebSocket version other than 13) instead.
     */
    public static Response upgrade(WebSocketListener listener) {
        if (listener == null) {
            throw new IllegalArgumentException("a WebSocket upgrade needs a listener");
        }
        Response r = new Response(101);
        r.listener = listener;
        return r;
    }

    /**
     * The answer to an HTTP/1.1 upgrade whose protocol the application
     * speaks itself (a servlet engine's WebSocket): the 101 carries the
     * handler's header fields as they are (nginx adds none and checks no
     * handshake), then the connection is a byte tunnel. {@code listener}
     * gets what the client sends as it comes, each read as a binary
     * message; {@code send(ByteBuffer)} writes bytes as they are;
     * {@code close()} closes the connection once what was sent has left;
     * {@code onClose} says the connection is gone. Over HTTP/2 or 1.0 nginx
     * answers 400 instead.
     */
    public static Response tunnel(WebSocketListener listener) {
        Response r = upgrade(listener);
        r.tunnel = true;
        return r;
    }

    /** Whether this upgrade is a byte tunnel ({@link #tunnel}). */
    public boolean isTunnel() {
        return tunnel;
    }

    /** The listener of an upgrade response, or null. */
    public WebSocketListener webSocketListener() {
        return listener;
    }

    public int headerCount() {
        return fields;
    }

    public String headerName(int i) {
        return check(i) == 0 ? name0 : headers[2 * (i - 1)];
    }

    public String headerValue(int i) {
        return check(i) == 0 ? value0 : headers[2 * (i - 1) + 1];
    }

    private int check(int i) {
        if (i < 0 || i >= fields) {
            throw new IndexOutOfBoundsException("header field " + i + " of " + fields);
        }
        return i;
    }

    /** The value of the first field named {@code name} (any case), or null. */
    public String header(String name) {
        for (int i = 0; i < fields; i++) {
            if (headerName(i).equalsIgnoreCase(name)) {
                return headerValue(i);
            }
        }
        return null;
    }
}
