package nginx.jvm;

import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Flow;
import java.util.concurrent.ForkJoinPool;

/**
 * Calls out through nginx's upstreams, from any thread: a handler in every
 * mode, a timer, a listener. A call is a request into a location marked
 * {@code jvm_client NAME}, whose {@code proxy_pass} (its upstream's
 * balancing, keepalive, retries, timeouts, TLS, cache) does the work; the
 * JVM opens no socket.
 *
 * <pre>{@code
 * # nginx.conf, in a server with a plain HTTP/1 listen
 * location /_api/ { jvm_client api; proxy_pass http://backend/; }
 *
 * Upstream.get("api", "/items").thenAccept(reply -> {   // GET /items at the backend
 *     int status = reply.status();
 *     try (InputStream body = reply.body()) { ... }      // read as it arrives
 * });
 * }</pre>
 *
 * <p>The future completes on the event loop, with the answer's status and
 * header fields, as soon as they came: callbacks attached without an
 * executor run there and must not block. The body is read as it arrives,
 * with back-pressure: while the reader holds 256 KB unread, nginx is read
 * no further (the backend then waits on its socket), so a slow reader
 * costs no memory. Read it on a thread that may block (a pool or virtual
 * thread, or hand it to a {@link Response} as its body); on the event loop
 * a read that would wait throws {@link IllegalStateException}. Close it (or
 * read it to its end): a body closed early ends the call, which nginx sees
 * as a client that left.
 *
 * <p>nginx's own answers are answers: a backend that refuses gives the
 * location's 502, one that hangs its 504 after {@code proxy_read_timeout}
 * ({@link Reply#ok()} tells). The future fails only when no answer came
 * (no such location, the worker out of files); a body cut short (the
 * backend reset mid-body, a timeout mid-body) makes its next read throw
 * {@link java.io.IOException}.
 *
 * <p>Cancelling the future before the answer's head came ends the call
 * (nginx sees its client leave); after it, close the body. When the worker
 * leaves with calls in flight their futures fail, and their bodies' reads
 * throw, "the worker is leaving".
 */
public final class Upstream {
    private Upstream() {
    }

    /** GET {@code uri} (after the location's prefix, may hold {@code ?args}) through client {@code client}. */
    public static CompletableFuture<Reply> get(String client, String uri) {
        int q = uri.indexOf('?');
        return call(client, "GET", q < 0 ? uri : uri.substring(0, q), q < 0 ? null : uri.substring(q + 1), null);
    }

    /**
     * A call through the {@code jvm_client} location named {@code client}:
     * {@code method} {@code uri} (the part after the location's prefix,
     * starting with "/"), {@code args} (null: none) and {@code headers}
     * (null: none; Host, Connection, Content-Length and Transfer-Encoding
     * are the call's own). Every string is checked as every string to a
     * wire is ({@code IllegalArgumentException}, nothing sent).
     */
    public static CompletableFuture<Reply> call(String client, String method, String uri, String args,
            Map<String, String> headers) {
        return call(client, method, uri, args, headers, (byte[]) null);
    }

    /**
     * The same with a request body ({@code Content-Length} set; null: no
     * body), sent as nginx reads it: the location's {@code
     * client_max_body_size} and {@code proxy_request_buffering} apply.
     */
    public static CompletableFuture<Reply> call(String client, String method, String uri, String args,
            Map<String, String> headers, byte[] body) {
        return call(client, method, uri, args, headers, body, null);
    }

    /**
     * The same with a request body streamed from {@code body} as it is read
     * (chunked; read on a thread of the runtime's, closed at its end), at
     * most 256 KB ahead of what nginx took: nginx buffers it whole first
     * unless the location says {@code proxy_request_buffering off} (and
     * {@code proxy_http_version 1.1}). A body that throws ends the call.
     */
    public static CompletableFuture<Reply> stream(String client, String method, String uri, String args,
            Map<String, String> headers, InputStream body) {
        return call(client, method, uri, args, headers, null, body);
    }

    private static CompletableFuture<Reply> call(String client, String method, String uri, String args,
            Map<String, String> headers, byte[] body, InputStream stream) {
        check(Gate.token(Gate.CALL_METHOD, method));
        byte[] name = client.getBytes(StandardCharsets.UTF_8);
        byte[] m = method.getBytes(StandardCharsets.ISO_8859_1);
        byte[] target = target(uri, args);
        String length = stream != null ? "Transfer-Encoding: chunked\r\n"
                : body == null ? "" : "Content-Length: " + body.length + "\r\n";
        byte[] fields = (new String(fields(headers), StandardCharsets.ISO_8859_1) + length)
                .getBytes(StandardCharsets.ISO_8859_1);
        CompletableFuture<UpstreamCall> call = UpstreamCall.start(name, m, target, fields,
                body == null ? new byte[0] : body, stream, method.equals("HEAD"));
        CompletableFuture<Reply> out = new CompletableFuture<>();
        // on the loop as the head comes: the caller's callbacks follow at once
        call.whenComplete((c, e) -> {
            if (e != null) {
                out.completeExceptionally(e);
            } else if (!out.complete(new Reply(c.status(), c.fields(), c))) {
                c.close();          // cancelled meanwhile: nobody will read it
            }
        });
        out.whenComplete((r, e) -> {
            if (out.isCancelled()) {
                call.cancel(false);
            }
        });
        return out;
    }

    /**
     * The calls of this worker in flight: started and not yet ended (their
     * body read to its end, failed, or closed).
     */
    public static int inFlight() {
        return UpstreamCall.inFlight();
    }

    private static byte[] target(String uri, String args) {
        check(Gate.uri(Gate.CALL_URI, uri));
        if (uri.indexOf(' ') >= 0 || uri.indexOf('#') >= 0) {
            throw new IllegalArgumentException("refused the call's URI " + Gate.quote(uri)
                    + ": it holds a space or \"#\" (escape them)");
        }
        String t = uri;
        if (args != null && !args.isEmpty()) {
            check(Gate.args(Gate.CALL_ARGS, args));
            t = uri + "?" + args;
        }
        return t.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] fields(Map<String, String> headers) {
        StringBuilder sb = new StringBuilder();
        if (headers != null) {
            for (Map.Entry<String, String> e : headers.entrySet()) {
                String name = e.getKey(), value = e.getValue();
                if (name == null || value == null) {
                    throw new IllegalArgumentException("a call's header field needs a name and a value: " + name);
                }
                check(Gate.token(Gate.CALL_NAME, name));
                check(Gate.value(Gate.CALL_VALUE, name, value));
                String lower = name.toLowerCase(Locale.ROOT);
                if (lower.equals("host") || lower.equals("connection") || lower.equals("content-length")
                        || lower.equals("transfer-encoding")) {
                    throw new IllegalArgumentException("the call's header field " + name + " is the call's own");
                }
                sb.append(name).append(": ").append(value).append("\r\n");
            }
        }
        return sb.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    private static void check(String refused) {
        if (refused != null) {
            throw new IllegalArgumentException(refused);
        }
    }

    /** An answer: status and header fields, and the body as it arrives. */
    public static final class Reply {
        private final int status;
        private final List<String[]> fields;
        private final InputStream body;

        Reply(int status, List<String[]> fields, InputStream body) {
            this.status = status;
            this.fields = fields;
            this.body = body;
        }

        /** The status (nginx's own 502 or 504 when the backend failed before answering). */
        public int status() {
            return status;
        }

        /** A 2xx status. */
        public boolean ok() {
            return status >= 200 && status < 300;
        }

        /** The first header field {@code name} (any case), or null. */
        public String header(String name) {
            for (String[] f : fields) {
                if (f[0].equalsIgnoreCase(name)) {
                    return f[1];
                }
            }
            return null;
        }

        /** Every header field {@code name} (any case), in order. */
        public List<String> headers(String name) {
            List<String> out = new ArrayList<>();
            for (String[] f : fields) {
                if (f[0].equalsIgnoreCase(name)) {
                    out.add(f[1]);
                }
            }
            return out;
        }

        /** The header fields' names, in order, as they came. */
        public List<String> names() {
            List<String> out = new ArrayList<>();
            for (String[] f : fields) {
                out.add(f[0]);
            }
            return Collections.unmodifiableList(out);
        }

        /** The body, read as it arrives; close it when done. */
        public InputStream body() {
            return body;
        }

        /**
         * The body as a {@link Flow.Publisher} of its pieces, for one
         * subscriber, delivered on the common fork-join pool (as {@link
         * java.util.concurrent.SubmissionPublisher} does): no thread waits
         * for the backend. See {@link #publisher(Executor)}.
         */
        public Flow.Publisher<ByteBuffer> publisher() {
            return publisher(ForkJoinPool.commonPool());
        }

        /**
         * The body as a {@link Flow.Publisher} of its pieces (each buffer
         * the subscriber's to keep), for one subscriber, delivered on
         * {@code executor} as they arrive and as it asks ({@code
         * request(n)}): while it asks for nothing, 256 KB wait and nginx is
         * read no further, as with {@link #body()}. {@code cancel()} ends
         * the call (nginx sees its client leave); a body cut short is
         * {@code onError}. The body has one reader: this or {@link
         * #body()}'s reads, not both.
         */
        public Flow.Publisher<ByteBuffer> publisher(Executor executor) {
            java.util.Objects.requireNonNull(executor, "executor");
            return ((UpstreamCall) body).publisher(executor);
        }
    }
}
