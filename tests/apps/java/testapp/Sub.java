package testapp;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;

/** Subrequest tests: ?to=/path[,/path2...] fetched in parallel. */
public final class Sub {
    private Sub() {
    }

    static String describe(Response r) {
        return r.status() + " " + r.header("X-Upstream") + " "
                + new String((byte[]) r.body(), StandardCharsets.UTF_8);
    }

    static CompletableFuture<String> all(Request r) {
        String to = java.net.URLDecoder.decode(r.variable("arg_to"), StandardCharsets.UTF_8);
        String[] paths = to.split(",");
        @SuppressWarnings("unchecked")
        CompletableFuture<String>[] fs = new CompletableFuture[paths.length];
        for (int i = 0; i < paths.length; i++) {
            if (paths[i].startsWith("POST:")) {
                Map<String, String> h = new LinkedHashMap<>();
                h.put("X-Sub", "yes");
                h.put("Content-Type", "text/plain");
                fs[i] = r.subrequest("POST", paths[i].substring(5), "p=1", h,
                        "sub body".getBytes(StandardCharsets.UTF_8)).thenApply(Sub::describe);
            } else {
                fs[i] = r.subrequest(paths[i]).thenApply(Sub::describe)
                        .exceptionally(e -> "failed " + e.getClass().getSimpleName());
            }
        }
        return CompletableFuture.allOf(fs).thenApply(v -> {
            StringBuilder sb = new StringBuilder();
            for (CompletableFuture<String> f : fs) {
                sb.append(f.join()).append('\n');
            }
            return sb.toString();
        });
    }

    /** jvm_async on: the header fields a subrequest to ?to= answered, one per line. */
    public static final class Headers implements AsyncHandler {
        @Override
        public void handle(Request r, Responder responder) {
            r.subrequest(r.variable("arg_to")).whenComplete((sub, e) -> {
                if (e != null) {
                    responder.raise(e);
                    return;
                }
                StringBuilder sb = new StringBuilder().append(sub.status()).append('\n');
                for (String name : new String[] {"Content-Type", "Content-Length", "Last-Modified", "ETag"}) {
                    sb.append(name).append(": ").append(sub.header(name)).append('\n');
                }
                responder.respond(Response.of(200, "text/plain", sb.toString()));
            });
        }
    }

    /** jvm_async on: answers when every subrequest has. */
    public static final class Async implements AsyncHandler {
        @Override
        public void handle(Request r, Responder responder) {
            all(r).whenComplete((text, e) -> {
                if (e != null) {
                    responder.raise(e);
                } else {
                    responder.respond(Response.of(200, "text/plain", text));
                }
            });
        }
    }

    /** pool or virtual: blocks its own thread on the futures. */
    public static final class Blocking implements Handler {
        @Override
        public Response handle(Request r) throws Exception {
            return Response.of(200, "text/plain", all(r).get());
        }
    }

    /** On the loop without jvm_async: a subrequest is refused with a clear message. */
    public static final class Refused implements Handler {
        @Override
        public Response handle(Request r) {
            try {
                r.subrequest("/up/echo").join();
                return Response.of(200, "text/plain", "not refused");
            } catch (RuntimeException e) {
                return Response.of(200, "text/plain", "refused: " + e.getCause().getMessage());
            }
        }
    }
}
