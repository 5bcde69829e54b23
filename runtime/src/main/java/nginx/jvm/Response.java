package nginx.jvm;

import java.io.File;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

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
    // Names and values alternate; a name may repeat (Set-Cookie).
    private final List<String> headers = new ArrayList<>(8);
    private Object body;
    private WebSocketListener listener;

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
        headers.add(name);
        headers.add(value);
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

    /** The listener of an upgrade response, or null. */
    public WebSocketListener webSocketListener() {
        return listener;
    }

    public int headerCount() {
        return headers.size() / 2;
    }

    public String headerName(int i) {
        return headers.get(2 * i);
    }

    public String headerValue(int i) {
        return headers.get(2 * i + 1);
    }

    /** The value of the first field named {@code name} (any case), or null. */
    public String header(String name) {
        for (int i = 0; i < headers.size(); i += 2) {
            if (headers.get(i).equalsIgnoreCase(name)) {
                return headers.get(i + 1);
            }
        }
        return null;
    }
}
