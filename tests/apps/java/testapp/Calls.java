package testapp;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;
import nginx.jvm.Timers;
import nginx.jvm.Upstream;

/** Calls out through jvm_client locations (tests/test_client.py): ?to=/path&via=NAME. */
public final class Calls {
    private static volatile String timerResult = "none";

    private Calls() {
    }

    static String arg(Request r, String name, String otherwise) {
        String v = r.variable("arg_" + name);
        return v == null || v.isEmpty() ? otherwise
                : java.net.URLDecoder.decode(v, StandardCharsets.UTF_8);
    }

    static CompletableFuture<Upstream.Reply> call(Request r) {
        Map<String, String> h = new LinkedHashMap<>();
        h.put("X-Call", "yes");
        String to = arg(r, "to", "/echo");
        int q = to.indexOf('?');
        String body = arg(r, "body", null);
        return Upstream.call(arg(r, "via", "b"), arg(r, "method", "GET"), q < 0 ? to : to.substring(0, q),
                q < 0 ? null : to.substring(q + 1), h,
                body == null ? null : body.getBytes(StandardCharsets.UTF_8));
    }

    /** "status length" of the whole body, or "body failed: why" after the status. */
    static String drain(Upstream.Reply reply, long pauseEveryMs) {
        long n = 0;
        byte[] buf = new byte[65536];
        try (InputStream in = reply.body()) {
            for (int k; (k = in.read(buf)) >= 0; ) {
                n += k;
                if (pauseEveryMs > 0) {
                    Thread.sleep(pauseEveryMs);
                }
            }
            return reply.status() + " " + n;
        } catch (IOException | InterruptedException e) {
            return reply.status() + " body failed after " + n + ": " + e.getMessage();
        }
    }

    /** Blocks (pool, virtual): the call's status, header X-Upstream and body, or why it failed. */
    public static final class Blocking implements Handler {
        @Override
        public Response handle(Request r) {
            try {
                Upstream.Reply reply = call(r).get();
                long pause = Long.parseLong(arg(r, "pause", "0"));
                return Response.of(200, "text/plain", drain(reply, pause) + " " + reply.header("X-Upstream"));
            } catch (ExecutionException e) {
                return Response.of(200, "text/plain", "failed: " + e.getCause().getMessage());
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /** Any mode, jvm_async on: the backend's answer relayed, its body streamed to the client. */
    public static final class Relay implements AsyncHandler {
        @Override
        public void handle(Request r, Responder responder) {
            call(r).whenComplete((reply, e) -> {
                if (e != null) {
                    responder.respond(Response.of(502, "text/plain", "failed: " + e.getMessage()));
                    return;
                }
                Response out = Response.of(reply.status(), reply.header("Content-Type"), reply.body());
                responder.respond(out);
            });
        }
    }

    /** Loop: the body read on the loop before it came is refused. */
    public static final class ReadOnLoop implements AsyncHandler {
        @Override
        public void handle(Request r, Responder responder) {
            call(r).whenComplete((reply, e) -> {
                String text;
                try (InputStream in = reply.body()) {
                    in.read();
                    text = "read";
                } catch (IllegalStateException | IOException x) {
                    text = "refused: " + x.getMessage();
                }
                responder.respond(Response.of(200, "text/plain", text));
            });
        }
    }

    private static volatile String initResult = "none", topicResult = "none";

    /** What a call's future brought: "status body-length X-Upstream" (read off the loop), or why it failed. */
    static void keep(CompletableFuture<Upstream.Reply> call, java.util.function.Consumer<String> to) {
        call.whenComplete((reply, e) -> {
            if (e != null) {
                to.accept("failed: " + e.getMessage());
            } else {
                CompletableFuture.runAsync(() -> to.accept(drain(reply, 0) + " " + reply.header("X-Upstream")));
            }
        });
    }

    /**
     * jvm_init: a call from the worker's init hook (before the worker
     * serves), and a subscriber of topic "calls" that calls out with each
     * message (on the event loop); Results answers what they got.
     */
    public static final class Init implements Runnable {
        @Override
        public void run() {
            keep(Upstream.get("b", "/echo?from=init"), v -> initResult = v);
            nginx.jvm.Topic.named("calls").subscribe(message ->
                    keep(Upstream.get("b", "/echo?from=" + message), v -> topicResult = v));
        }
    }

    /** ?op=publish&m=: m published on topic "calls"; else "init: ... | topic: ...". */
    public static final class Results implements Handler {
        @Override
        public Response handle(Request r) {
            if ("publish".equals(arg(r, "op", ""))) {
                return Response.of(200, "text/plain",
                        String.valueOf(nginx.jvm.Topic.named("calls").publish(arg(r, "m", "x"))));
            }
            return Response.of(200, "text/plain", "init: " + initResult + " | topic: " + topicResult);
        }
    }

    /** ?op=start: a timer on the loop calls ?to=; ?op=result: what it got. */
    public static final class Timer implements Handler {
        @Override
        public Response handle(Request r) {
            if ("start".equals(arg(r, "op", ""))) {
                timerResult = "pending";
                String to = arg(r, "to", "/echo");
                Timers.after(10, () -> Upstream.get("b", to).whenComplete((reply, e) -> {
                    if (e != null) {
                        timerResult = "failed: " + e.getMessage();
                        return;
                    }
                    // the loop may not wait for the body: read it on another thread
                    CompletableFuture.runAsync(() -> timerResult = drain(reply, 0) + " "
                            + reply.header("X-Upstream"));
                }));
                return Response.of(200, "text/plain", "started");
            }
            return Response.of(200, "text/plain", timerResult);
        }
    }

    /**
     * Pool: ?n= calls of /echo one after another, then as many subrequests
     * of /sub/echo: "calls-us subrequests-us" (microseconds a call, mean).
     * A rough order of the cost, not a benchmark.
     */
    public static final class Many implements Handler {
        @Override
        public Response handle(Request r) {
            int n = Integer.parseInt(arg(r, "n", "100"));
            try {
                long t0 = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    String got = drain(Upstream.get("b", "/echo").get(), 0);
                    if (!got.startsWith("200 ")) {
                        return Response.of(500, "text/plain", "call " + i + ": " + got);
                    }
                }
                long t1 = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    Response sub = r.subrequest("/sub/echo").get();
                    if (sub.status() != 200) {
                        return Response.of(500, "text/plain", "subrequest " + i + ": " + sub.status());
                    }
                }
                long t2 = System.nanoTime();
                return Response.of(200, "text/plain", (t1 - t0) / 1000 / n + " " + (t2 - t1) / 1000 / n);
            } catch (ExecutionException | InterruptedException e) {
                return Response.of(500, "text/plain", "failed: " + e);
            }
        }
    }

    /** Bodies held unread (?op=hold&to=), counted (?op=count: Upstream.inFlight()), let go (?op=release). */
    public static final class Hold implements Handler {
        private static final java.util.List<Upstream.Reply> held = new java.util.ArrayList<>();

        @Override
        public Response handle(Request r) {
            String op = arg(r, "op", "hold");
            if (op.equals("count")) {
                return Response.of(200, "text/plain", String.valueOf(Upstream.inFlight()));
            }
            if (op.equals("release")) {
                synchronized (held) {
                    for (Upstream.Reply reply : held) {
                        try {
                            reply.body().close();
                        } catch (IOException e) {
                            throw new IllegalStateException(e);
                        }
                    }
                    held.clear();
                }
                return Response.of(200, "text/plain", "released");
            }
            try {
                Upstream.Reply reply = call(r).get();
                synchronized (held) {
                    held.add(reply);
                }
                return Response.of(200, "text/plain", "held " + reply.status());
            } catch (ExecutionException | InterruptedException e) {
                return Response.of(200, "text/plain", "failed: " + e);
            }
        }
    }

    /**
     * Pool: the body through Reply.publisher(), asked for a piece at a
     * time: "status bytes complete", "status bytes error: why", or with
     * ?take=N "status bytes cancelled" once N bytes came (the subscription
     * cancelled); ?take=0 asks for nothing and holds the subscription
     * (Hold's ?op=release-flow cancels it).
     */
    public static final class Publisher implements Handler {
        static final java.util.List<java.util.concurrent.Flow.Subscription> held =
                new java.util.concurrent.CopyOnWriteArrayList<>();

        @Override
        public Response handle(Request r) {
            if (arg(r, "op", "").equals("release")) {
                for (java.util.concurrent.Flow.Subscription s : held) {
                    s.cancel();
                }
                held.clear();
                return Response.of(200, "text/plain", "released");
            }
            long take = Long.parseLong(arg(r, "take", "-1"));
            try {
                Upstream.Reply reply = call(r).get();
                CompletableFuture<String> end = new CompletableFuture<>();
                reply.publisher().subscribe(new java.util.concurrent.Flow.Subscriber<java.nio.ByteBuffer>() {
                    java.util.concurrent.Flow.Subscription sub;
                    long n;

                    @Override
                    public void onSubscribe(java.util.concurrent.Flow.Subscription s) {
                        sub = s;
                        if (take == 0) {
                            held.add(s);
                            end.complete("held");
                        } else {
                            s.request(1);
                        }
                    }

                    @Override
                    public void onNext(java.nio.ByteBuffer b) {
                        n += b.remaining();
                        if (take > 0 && n >= take) {
                            sub.cancel();
                            end.complete(n + " cancelled");
                        } else {
                            sub.request(1);
                        }
                    }

                    @Override
                    public void onError(Throwable e) {
                        end.complete(n + " error: " + e.getMessage());
                    }

                    @Override
                    public void onComplete() {
                        end.complete(n + " complete");
                    }
                });
                return Response.of(200, "text/plain", reply.status() + " " + end.get());
            } catch (ExecutionException | InterruptedException e) {
                return Response.of(200, "text/plain", "failed: " + e);
            }
        }
    }

    /** Pool: the call's future cancelled after ?ms= (before its head came): "cancelled true". */
    public static final class Cancel implements Handler {
        @Override
        public Response handle(Request r) {
            CompletableFuture<Upstream.Reply> f = call(r);
            try {
                Thread.sleep(Long.parseLong(arg(r, "ms", "200")));
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            return Response.of(200, "text/plain", "cancelled " + f.cancel(false));
        }
    }

    /**
     * Pool: ?n= calls of ?to= started at once, then each body read:
     * "ok failed most-in-flight" (most in flight as seen between starts).
     */
    public static final class Burst implements Handler {
        @Override
        public Response handle(Request r) {
            int n = Integer.parseInt(arg(r, "n", "1000"));
            String to = arg(r, "to", "/echo");
            String via = arg(r, "via", "b");
            java.util.List<CompletableFuture<Upstream.Reply>> fs = new java.util.ArrayList<>();
            int most = 0;
            for (int i = 0; i < n; i++) {
                fs.add(Upstream.get(via, to));
                most = Math.max(most, Upstream.inFlight());
            }
            int ok = 0, failed = 0;
            for (CompletableFuture<Upstream.Reply> f : fs) {
                try {
                    String got = drain(f.get(), 0);
                    if (got.startsWith("200 ")) {
                        ok++;
                    } else {
                        failed++;
                    }
                    most = Math.max(most, Upstream.inFlight());
                } catch (ExecutionException | InterruptedException e) {
                    failed++;
                }
            }
            return Response.of(200, "text/plain", ok + " " + failed + " " + most);
        }
    }

    /**
     * Pool: ?mb= MB streamed as a request body to ?to=, produced as the
     * call reads it: "status answer most-ahead-KB", most-ahead the body's
     * bytes produced beyond what the backend had read (?to= answers its
     * count), never the whole.
     */
    public static final class Upload implements Handler {
        @Override
        public Response handle(Request r) {
            long total = Long.parseLong(arg(r, "mb", "16")) * 1024 * 1024;
            InputStream body = new InputStream() {
                long made;

                @Override
                public int read() {
                    return made++ < total ? 'u' : -1;
                }

                @Override
                public int read(byte[] b, int off, int len) {
                    if (made >= total) {
                        return -1;
                    }
                    int n = (int) Math.min(len, total - made);
                    java.util.Arrays.fill(b, off, off + n, (byte) 'u');
                    made += n;
                    return n;
                }
            };
            try {
                Upstream.Reply reply = Upstream.stream(arg(r, "via", "b"), "POST", arg(r, "to", "/count"), null,
                        null, body).get();
                String answer = new String(reply.body().readAllBytes(), StandardCharsets.UTF_8);
                return Response.of(200, "text/plain", reply.status() + " " + answer);
            } catch (ExecutionException | InterruptedException | IOException e) {
                return Response.of(200, "text/plain", "failed: " + e);
            }
        }
    }

    /** Refusals of the gate's: the message. */
    public static final class Refused implements Handler {
        @Override
        public Response handle(Request r) {
            Map<String, String> h = new LinkedHashMap<>();
            String what = arg(r, "what", "");
            String uri = "/echo";
            String method = "GET";
            if (what.equals("method")) {
                method = "GET /elsewhere HTTP/1.1\r\n";
            } else if (what.equals("value")) {
                h.put("X-Bad", "a\r\nInjected: 1");
            } else if (what.equals("host")) {
                h.put("Host", "elsewhere");
            } else if (what.equals("uri")) {
                uri = "/echo HTTP/1.1\r\nX: y";
            } else if (what.equals("space")) {
                uri = "/echo x";
            }
            try {
                Upstream.call("b", method, uri, null, h);
                return Response.of(200, "text/plain", "sent");
            } catch (IllegalArgumentException e) {
                return Response.of(200, "text/plain", "refused: " + e.getMessage());
            }
        }
    }
}
