package connbench;

import java.time.Instant;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.Topic;
import nginx.jvm.WebSocket;
import nginx.jvm.WebSocketListener;

/**
 * The server of bench/conns.py on nginx-jvm (jvm_mode loop: every call
 * below runs on the worker's event loop, so the socket set needs no lock).
 *
 * <ul>
 * <li>{@code GET /ping}: a keep-alive answer, "pong";</li>
 * <li>{@code /ws}: a WebSocket that echoes what it is sent and gets every
 * message of the topic "bcast": the worker keeps its open sockets in a set
 * and its one subscriber sends each message to all of them;</li>
 * <li>{@code /publish}: publishes "B" and the time (ns since the epoch) on
 * the topic, which every worker reads.</li>
 * </ul>
 */
public final class Conns implements Handler {
    private static final Set<WebSocket> SOCKETS = new HashSet<>();
    private static final AtomicLong FAILED = new AtomicLong();
    private static Topic topic;
    private static AutoCloseable subscription;

    /**
     * Sends on the event loop: {@code send} never waits there (it fails
     * beyond the queue and 1 MB more), and, unlike {@code sendAsync}, hands
     * no callback to another thread for each frame sent.
     */
    private static void send(WebSocket socket, String text) {
        try {
            socket.send(text);
        } catch (java.io.IOException e) {
            // the error log: bench/conns.py counts these lines as errors
            System.err.println("connbench: broadcast send failed ("
                    + FAILED.incrementAndGet() + "): " + e);
        }
    }

    private static Topic topic() {
        if (topic == null) {
            topic = Topic.named("bcast");
        }
        return topic;
    }

    private static void subscribe() {
        if (subscription == null) {
            subscription = topic().subscribe(message -> {
                String text = (String) message;
                for (WebSocket s : SOCKETS) {
                    send(s, text);
                }
            });
        }
    }

    /** One listener for every socket: it holds nothing of its own. */
    private static final WebSocketListener LISTENER = new WebSocketListener() {
        @Override
        public void onOpen(WebSocket socket) {
            subscribe();
            SOCKETS.add(socket);
        }

        @Override
        public void onMessage(WebSocket socket, String text) {
            send(socket, text);
        }

        @Override
        public void onClose(WebSocket socket, int code, String reason) {
            SOCKETS.remove(socket);
        }
    };

    @Override
    public Response handle(Request request) {
        String uri = request.uri();
        if (request.isWebSocketUpgrade()) {
            return Response.upgrade(LISTENER);
        }
        if (uri.equals("/publish")) {
            subscribe();
            Instant now = Instant.now();
            long ns = now.getEpochSecond() * 1_000_000_000L + now.getNano();
            boolean ok = topic().publish("B" + ns);
            return Response.of(ok ? 200 : 503, "text/plain", ok ? String.valueOf(ns) : "topic full");
        }
        return Response.of(200, "text/plain", "pong");
    }
}
