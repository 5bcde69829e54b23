package testapp;

import java.io.FileWriter;
import java.io.IOException;
import java.io.Writer;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;

/** Handlers of tests/test_request_headers.py: request header fields changed before proxy_pass. */
public final class ReqHeaders {
    private ReqHeaders() {
    }

    /**
     * Rewrite or access: applies each {@code e=OP:NAME:VALUE} of the query
     * string (percent-decoded, in order): set, add, clear (no value), fill
     * (VALUE a length: a value of that many characters), many (NAME a count:
     * X-Many-1... set), rep (VALUE a count: that many fields NAME added,
     * valued 1, 2, ...). With {@code batch=1}, the sets and clears go in one
     * {@link Request#setHeaders} call. A refused change answers 400 with the
     * exception's class and message; otherwise the request goes on.
     */
    public static final class Edit implements Handler {
        @Override
        public Response handle(Request r) {
            try {
                apply(r, r.queryString());
                return null;
            } catch (RuntimeException e) {
                return Response.of(400, "text/plain", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }
    }

    static void apply(Request r, String query) {
        if (query == null) {
            return;
        }
        boolean batch = false;
        Map<String, Object> fields = new LinkedHashMap<>();
        for (String kv : query.split("&")) {
            if (kv.equals("batch=1")) {
                batch = true;
            }
        }
        for (String kv : query.split("&")) {
            if (!kv.startsWith("e=")) {
                continue;
            }
            String[] e = URLDecoder.decode(kv.substring(2), StandardCharsets.ISO_8859_1).split(":", 3);
            String op = e[0], name = e[1], value = e.length > 2 ? e[2] : null;
            switch (op) {
                case "set":
                    if (batch) {
                        fields.put(name, value);
                    } else {
                        r.setHeader(name, value);
                    }
                    break;
                case "setlist":
                    fields.put(name, List.of(value.split(",")));
                    break;
                case "add":
                    r.addHeader(name, value);
                    break;
                case "clear":
                    if (batch) {
                        fields.put(name, null);
                    } else {
                        r.clearHeader(name);
                    }
                    break;
                case "fill":
                    r.setHeader(name, pattern(Integer.parseInt(value)));
                    break;
                case "rep":
                    for (int i = 1; i <= Integer.parseInt(value); i++) {
                        r.addHeader(name, Integer.toString(i));
                    }
                    break;
                case "many":
                    for (int i = 1; i <= Integer.parseInt(name); i++) {
                        r.setHeader("X-Many-" + i, "v" + i);
                    }
                    break;
                default:
                    throw new IllegalArgumentException("unknown op " + op);
            }
        }
        if (!fields.isEmpty()) {
            r.setHeaders(fields);
        }
    }

    /** n characters: "0123456789abcdef" over and over. */
    static String pattern(int n) {
        StringBuilder b = new StringBuilder(n);
        for (int i = 0; i < n; i++) {
            b.append("0123456789abcdef".charAt(i % 16));
        }
        return b.toString();
    }

    /** For an auth_request subrequest: changes its own fields, answers 204. */
    public static final class SubEdit implements Handler {
        @Override
        public Response handle(Request r) {
            r.setHeader("X-Foo", "from-sub");
            r.clearHeader("X-Keep");
            r.addHeader("Cookie", "sub=1");
            return Response.of(204, null, (String) null);
        }
    }

    /** Content: tries to change a field, says what happened. */
    public static final class ContentEdit implements Handler {
        @Override
        public Response handle(Request r) {
            try {
                r.setHeader("X-Foo", "late");
                return Response.of(200, "text/plain", "changed");
            } catch (RuntimeException e) {
                return Response.of(200, "text/plain", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }
    }

    /**
     * The upstream: every header field it got, one "name: value" line each,
     * in order, as nginx parsed them.
     */
    public static final class Echo implements Handler {
        @Override
        public Response handle(Request r) {
            StringBuilder b = new StringBuilder();
            for (int i = 0; i < r.headerCount(); i++) {
                b.append(r.headerName(i)).append(": ").append(r.headerValue(i)).append('\n');
            }
            return new Response(200).header("Content-Type", "text/plain; charset=iso-8859-1")
                    .body(b.toString().getBytes(StandardCharsets.ISO_8859_1));
        }
    }

    /**
     * Rewrite, off the loop: waits (?ms=N, as a pool or virtual thread, or
     * on a thread of its own with jvm_async on) while the client leaves,
     * then tries to change a field; writes the outcome to the file the
     * system property testapp.hdrlog names.
     */
    public static final class Slow implements Handler, AsyncHandler {
        @Override
        public Response handle(Request r) {
            run(r);
            return null;
        }

        @Override
        public void handle(Request r, Responder responder) {
            Thread t = new Thread(() -> {
                run(r);
                responder.respond(null);
            });
            t.setDaemon(true);
            t.start();
        }

        private static void run(Request r) {
            String outcome;
            try {
                Thread.sleep(Long.parseLong(r.queryString().replaceAll(".*ms=(\\d+).*", "$1")));
                r.setHeader("X-Late", "1");
                outcome = "changed";
            } catch (InterruptedException e) {
                outcome = "interrupted";
            } catch (RuntimeException e) {
                outcome = e.getClass().getSimpleName() + ": " + e.getMessage();
            }
            synchronized (Slow.class) {
                try (Writer w = new FileWriter(System.getProperty("testapp.hdrlog"), true)) {
                    w.write(r.uri() + " " + outcome + "\n");
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }
        }
    }
}
