package com.example.ws;

import jakarta.websocket.CloseReason;
import jakarta.websocket.OnClose;
import jakarta.websocket.OnError;
import jakarta.websocket.OnOpen;
import jakarta.websocket.Session;
import jakarta.websocket.server.ServerEndpoint;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.springframework.stereotype.Component;

/**
 * A Jakarta endpoint that speaks first: on open, a thread of its own sends
 * "n" binary messages of "size" bytes (query parameters), each starting
 * with its number, then closes with 1000 "pushed N". Its sends block while
 * the client does not read.
 */
@Component
@ServerEndpoint("/push")
public class PushEndpoint {
    @OnOpen
    public void open(Session session) {
        Map<String, List<String>> q = session.getRequestParameterMap();
        int n = Integer.parseInt(q.getOrDefault("n", List.of("10")).get(0));
        int size = Math.max(4, Integer.parseInt(q.getOrDefault("size", List.of("16")).get(0)));
        Thread t = new Thread(() -> push(session, n, size), "example-push");
        t.setDaemon(true);
        t.start();
    }

    private static void push(Session session, int n, int size) {
        try {
            for (int i = 0; i < n; i++) {
                ByteBuffer b = ByteBuffer.allocate(size);
                b.putInt(0, i);
                session.getBasicRemote().sendBinary(b);
            }
            session.close(new CloseReason(CloseReason.CloseCodes.NORMAL_CLOSURE, "pushed " + n));
        } catch (IOException | IllegalStateException e) {
            WsEvents.add("push-failed " + e.getClass().getSimpleName());
        }
    }

    @OnError
    public void error(Session session, Throwable error) {
        WsEvents.add("push-error " + error.getClass().getSimpleName());
    }

    @OnClose
    public void close(Session session, CloseReason reason) {
        WsEvents.add("push-close " + reason.getCloseCode().getCode());
    }
}
