package testapp;

import java.io.IOException;
import java.nio.ByteBuffer;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.WebSocket;
import nginx.jvm.WebSocketListener;

/** A WebSocket echo through the Java API: text comes back upper-cased. */
public final class WsEcho implements Handler {
    @Override
    public Response handle(Request request) {
        if (!request.isWebSocketUpgrade()) {
            return Response.of(400, "text/plain", "a WebSocket endpoint");
        }
        return Response.upgrade(new WebSocketListener() {
            @Override
            public void onMessage(WebSocket socket, String text) {
                try {
                    socket.send(text.toUpperCase());
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
        });
    }
}
