package example;

import jakarta.websocket.CloseReason;
import jakarta.websocket.OnClose;
import jakarta.websocket.OnError;
import jakarta.websocket.OnMessage;
import jakarta.websocket.OnOpen;
import jakarta.websocket.Session;
import jakarta.websocket.server.PathParam;
import jakarta.websocket.server.ServerEndpoint;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * An annotated WebSocket endpoint (Jakarta WebSocket): text and binary
 * messages come back as they came. Two texts do more: "who" answers the
 * room (the path's parameter), the subprotocol chosen and the worker's
 * pid; "close CODE REASON" closes the session with that code and reason;
 * "pause MS" reads nothing more for MS milliseconds.
 * Messages are of up to 8 KiB (Tomcat's default), 4 MiB in rooms "big...".
 * What ends a session (onClose, onError) is told to {@link WsEvents}.
 */
@ServerEndpoint(value = "/ws/echo/{room}", subprotocols = {"echo.v2", "echo.v1"})
public class EchoEndpoint {
    @OnOpen
    public void open(Session session, @PathParam("room") String room) {
        if (room.startsWith("big")) {
            // large messages, up to 4 MiB whole, in the big rooms only:
            // Tomcat keeps buffers of this size for each such session
            // (8 KiB unless told otherwise)
            session.setMaxTextMessageBufferSize(4 * 1024 * 1024);
            session.setMaxBinaryMessageBufferSize(4 * 1024 * 1024);
        }
    }

    @OnMessage
    public String text(Session session, String text, @PathParam("room") String room)
            throws IOException, ReflectiveOperationException {
        if (text.equals("who")) {
            return "room " + room + ", subprotocol " + session.getNegotiatedSubprotocol()
                    + ", pid " + ProcessHandle.current().pid();
        }
        if (text.startsWith("pause ")) {
            // Tomcat's own flow control (WsSession.suspend and resume, not
            // in the API: by name): no message is read for that many ms
            long ms = Long.parseLong(text.substring(6));
            session.getClass().getMethod("suspend").invoke(session);
            Thread t = new Thread(() -> {
                try {
                    Thread.sleep(ms);
                    session.getClass().getMethod("resume").invoke(session);
                } catch (ReflectiveOperationException | InterruptedException e) {
                    WsEvents.add("resume-failed " + e);
                }
            }, "example-resume");
            t.setDaemon(true);
            t.start();
            return "paused";
        }
        if (text.startsWith("close ")) {
            String[] w = text.split(" ", 3);
            session.close(new CloseReason(CloseReason.CloseCodes.getCloseCode(Integer.parseInt(w[1])),
                    w.length > 2 ? w[2] : ""));
            return null;
        }
        return text;
    }

    @OnMessage
    public ByteBuffer binary(ByteBuffer data) {
        return data;
    }

    @OnError
    public void error(Session session, Throwable error, @PathParam("room") String room) {
        WsEvents.add("error " + room + " " + error.getClass().getSimpleName());
    }

    @OnClose
    public void close(Session session, CloseReason reason, @PathParam("room") String room) {
        WsEvents.add("close " + room + " " + reason.getCloseCode().getCode());
    }
}
