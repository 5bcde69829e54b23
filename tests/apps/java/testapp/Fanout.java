package testapp;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.Topic;
import nginx.jvm.WebSocket;
import nginx.jvm.WebSocketListener;

/**
 * Topic "f" fanned out to WebSocket clients from the event loop: an upgrade
 * subscribes the socket, and each message is sent to it by the topic's
 * listener; {@code /publish?n=&pad=} publishes n messages "m0".. (each
 * followed by a space and the pad, if any) at once;
 * {@code /failures} answers how many sends failed, by their message.
 */
public final class Fanout implements Handler {
    static final Map<String, AtomicInteger> FAILURES = new ConcurrentHashMap<>();

    static void failed(String why) {
        FAILURES.computeIfAbsent(why, k -> new AtomicInteger()).incrementAndGet();
    }

    @Override
    public Response handle(Request r) throws Exception {
        String uri = r.uri();
        if (uri.endsWith("/publish")) {
            int n = Integer.parseInt(LateBody.param(r, "n"));
            String pad = LateBody.param(r, "pad");
            int ok = 0;
            for (int i = 0; i < n; i++) {
                ok += Topic.named("f").publish("m" + i + (pad == null ? "" : " " + pad)) ? 1 : 0;
            }
            return Response.of(200, "text/plain", ok + " published");
        }
        if (uri.endsWith("/failures")) {
            return Response.of(200, "text/plain", FAILURES.toString());
        }
        if (uri.endsWith("/subscribers")) {
            return Response.of(200, "text/plain", String.valueOf(Topic.named("f").subscribers()));
        }
        return Response.upgrade(new WebSocketListener() {
            private AutoCloseable subscription;

            @Override
            public void onOpen(WebSocket socket) {
                subscription = Topic.named("f").subscribe(m -> {
                    try {
                        socket.send((String) m);
                    } catch (IOException e) {
                        failed(e.getMessage());
                        socket.close(1011, "");
                    }
                });
            }

            @Override
            public void onClose(WebSocket socket, int code, String reason) {
                try {
                    subscription.close();
                } catch (Exception ignored) {
                    // closing a subscription does not fail
                }
            }
        });
    }
}
