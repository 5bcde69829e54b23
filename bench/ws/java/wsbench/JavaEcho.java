package wsbench;

import java.io.IOException;
import java.nio.ByteBuffer;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.WebSocket;
import nginx.jvm.WebSocketListener;

/** The Java WebSocket echo of bench/websocket.py: every message comes back as it came. */
public final class JavaEcho implements Handler {
    /** One per socket, as most applications have (Jetty's echo too). */
    static final class Echo implements WebSocketListener {
        @Override
        public void onMessage(WebSocket socket, String text) {
            try {
                socket.send(text);
            } catch (IOException e) {
                socket.close(1011, "send failed");
            }
        }

        @Override
        public void onMessage(WebSocket socket, ByteBuffer binary) {
            try {
                socket.send(binary);
            } catch (IOException e) {
                socket.close(1011, "send failed");
            }
        }
    }

    @Override
    public Response handle(Request request) {
        if (!request.isWebSocketUpgrade()) {
            return Response.of(200, "text/plain", "ws echo");
        }
        return Response.upgrade(new Echo());
    }
}
