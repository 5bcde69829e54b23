package nginx.jvm;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * An open WebSocket, given to its {@link WebSocketListener}. Every method is
 * safe from any thread and never blocks the event loop; messages leave in
 * the order they were sent. Each socket has a bounded queue of outgoing
 * messages ({@code jvm_websocket_send_queue}): when the client reads slower
 * than the application writes, {@code send} waits for room on a JVM thread,
 * throws on the event loop, and {@code sendAsync} fails.
 */
public interface WebSocket {
    /** True until the socket is closed, or a close frame has been sent. */
    boolean isOpen();

    void send(String text) throws IOException;

    void send(ByteBuffer data) throws IOException;

    void sendAsync(String text, Callback callback);

    void sendAsync(ByteBuffer data, Callback callback);

    void ping(ByteBuffer data) throws IOException;

    void pong(ByteBuffer data) throws IOException;

    /** Closes with 1000 (normal closure). */
    void close();

    /**
     * Starts the close handshake with {@code code} (1000-1003, 1007-1014 or
     * 3000-4999) and a reason of at most 123 bytes of UTF-8 (cut at a
     * character if longer).
     */
    void close(int code, String reason);

    /** The outcome of {@link #sendAsync}, called on a JVM thread. */
    interface Callback {
        void succeeded();

        void failed(Throwable error);
    }
}
