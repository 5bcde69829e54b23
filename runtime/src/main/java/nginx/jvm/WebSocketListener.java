package nginx.jvm;

import java.nio.ByteBuffer;

/**
 * What a WebSocket's application does with its events: a handler answers
 * {@link Response#upgrade(WebSocketListener)} to an upgrade request, and the
 * listener gets the socket's events, in order, one at a time: {@code onOpen}
 * first, {@code onClose} last and exactly once (and only after
 * {@code onOpen}). They run where the location's {@code jvm_mode} says: on
 * the event loop, on the pool, or on virtual threads. Every method has a
 * default that does nothing.
 */
public interface WebSocketListener {
    default void onOpen(WebSocket socket) {
    }

    /** A whole text message. */
    default void onMessage(WebSocket socket, String text) {
    }

    /** A whole binary message (a buffer of its own, to keep if wanted). */
    default void onMessage(WebSocket socket, ByteBuffer data) {
    }

    default void onPong(WebSocket socket, ByteBuffer data) {
    }

    /** The connection failed: a protocol error by the client, or a listener that threw. */
    default void onError(WebSocket socket, Throwable error) {
    }

    /** The socket is closed: the code and reason of the close handshake, 1006 if there was none. */
    default void onClose(WebSocket socket, int code, String reason) {
    }
}
