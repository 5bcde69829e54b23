package bench;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.ExecutionException;
import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;
import nginx.jvm.Upstream;

/**
 * Handlers of bench/client.py: one call to the upstream a request, through
 * nginx.jvm.Upstream (a jvm_client location named "up") or through the
 * JDK's HttpClient (its own keep-alive connections to $bench_upstream).
 */
public final class ClientBench {
    private static final HttpClient JDK = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1).build();

    private ClientBench() {
    }

    static String target(Request r) {
        String to = r.variable("arg_to");
        return to == null || to.isEmpty() ? "/data" : to;
    }

    /** jvm_async, any mode: Upstream's future, the body relayed as it comes. */
    public static final class Call implements AsyncHandler {
        @Override
        public void handle(Request r, Responder responder) {
            Upstream.get("up", target(r)).whenComplete((reply, e) -> {
                if (e != null) {
                    responder.raise(e);
                } else {
                    responder.respond(Response.of(reply.status(), "text/plain", reply.body()));
                }
            });
        }
    }

    /** Blocking (pool): Upstream's future waited for, the body read whole. */
    public static final class CallBlocking implements Handler {
        @Override
        public Response handle(Request r) {
            try {
                Upstream.Reply reply = Upstream.get("up", target(r)).get();
                byte[] body;
                try (InputStream in = reply.body()) {
                    body = in.readAllBytes();
                }
                return Response.of(reply.status(), "text/plain", body);
            } catch (ExecutionException | InterruptedException | IOException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    static URI jdkUri(Request r) {
        return URI.create("http://127.0.0.1:" + r.variable("bench_upstream") + target(r));
    }

    /** Blocking (pool): the JDK's HttpClient.send, the body as bytes. */
    public static final class Jdk implements Handler {
        @Override
        public Response handle(Request r) {
            try {
                HttpResponse<byte[]> res = JDK.send(HttpRequest.newBuilder(jdkUri(r)).build(),
                        HttpResponse.BodyHandlers.ofByteArray());
                return Response.of(res.statusCode(), "text/plain", res.body());
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /** jvm_async, any mode: the JDK's sendAsync, answered when it completes. */
    public static final class JdkAsync implements AsyncHandler {
        @Override
        public void handle(Request r, Responder responder) {
            JDK.sendAsync(HttpRequest.newBuilder(jdkUri(r)).build(), HttpResponse.BodyHandlers.ofByteArray())
                    .whenComplete((res, e) -> {
                        if (e != null) {
                            responder.raise(e);
                        } else {
                            responder.respond(Response.of(res.statusCode(), "text/plain", res.body()));
                        }
                    });
        }
    }
}
