package com.example.ws;

import jakarta.websocket.CloseReason;
import jakarta.websocket.OnClose;
import jakarta.websocket.OnError;
import jakarta.websocket.OnMessage;
import jakarta.websocket.Session;
import jakarta.websocket.server.PathParam;
import jakarta.websocket.server.ServerEndpoint;
import java.nio.ByteBuffer;
import org.springframework.stereotype.Component;

/**
 * A plain Jakarta WebSocket endpoint beside the STOMP one (registered by
 * JakartaConfig's ServerEndpointExporter): every message back as it came,
 * text or binary, of up to 4 MB.
 */
@Component
@ServerEndpoint("/echo/{name}")
public class EchoEndpoint {
    private static final int MAX = 4 * 1024 * 1024;

    @OnMessage(maxMessageSize = MAX)
    public String text(String text) {
        return text;
    }

    @OnMessage(maxMessageSize = MAX)
    public ByteBuffer binary(ByteBuffer data) {
        return data;
    }

    /** A connection that failed (a client gone mid-message): its close follows, 1006. */
    @OnError
    public void error(Session session, Throwable error, @PathParam("name") String name) {
        WsEvents.add("error " + name + " " + error.getClass().getSimpleName());
    }

    @OnClose
    public void close(Session session, CloseReason reason, @PathParam("name") String name) {
        WsEvents.add("close " + name + " " + reason.getCloseCode().getCode());
    }
}
