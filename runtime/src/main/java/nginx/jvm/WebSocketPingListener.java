package nginx.jvm;

import java.nio.ByteBuffer;

/**
 * A listener that answers pings itself: without it, nginx-jvm answers every
 * ping with a pong at once, on the event loop.
 */
public interface WebSocketPingListener extends WebSocketListener {
    void onPing(WebSocket socket, ByteBuffer data);
}
