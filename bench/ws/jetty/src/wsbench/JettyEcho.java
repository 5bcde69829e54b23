package wsbench;

import java.time.Duration;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ContextHandler;
import org.eclipse.jetty.websocket.api.Callback;
import org.eclipse.jetty.websocket.api.Session;
import org.eclipse.jetty.websocket.api.annotations.OnWebSocketMessage;
import org.eclipse.jetty.websocket.api.annotations.WebSocket;
import org.eclipse.jetty.websocket.server.WebSocketUpgradeHandler;

/**
 * Jetty 12's WebSocket echo, the peer of nginx-jvm's echo listeners in
 * bench/websocket.py: every text or binary message comes back as it came.
 * Usage: java -cp LIBS:CLASSES wsbench.JettyEcho HOST PORT.  Default Jetty
 * settings (thread pool, buffers) except the idle timeouts, raised to 10
 * minutes so that the idle-WebSocket measurement is not cut at 30 s.
 */
public final class JettyEcho {
    @WebSocket
    public static final class Echo {
        @OnWebSocketMessage
        public void onText(Session session, String text) {
            session.sendText(text, Callback.NOOP);
        }

        @OnWebSocketMessage
        public void onBinary(Session session, java.nio.ByteBuffer data, Callback callback) {
            session.sendBinary(data, callback);
        }
    }

    public static void main(String[] args) throws Exception {
        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost(args[0]);
        connector.setPort(Integer.parseInt(args[1]));
        connector.setIdleTimeout(600_000);
        server.addConnector(connector);
        ContextHandler context = new ContextHandler("/");
        WebSocketUpgradeHandler ws = WebSocketUpgradeHandler.from(server, context, container -> {
            container.setIdleTimeout(Duration.ofMinutes(10));
            container.addMapping("/*", (request, response, callback) -> new Echo());
        });
        context.setHandler(ws);
        server.setHandler(context);
        server.start();
        System.out.println("jetty-echo listening on " + args[0] + ":" + args[1]);
        server.join();
    }
}
