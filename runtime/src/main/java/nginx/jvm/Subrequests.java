package nginx.jvm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Subrequests in flight, by the id the C module knows them by
 * (ngx_http_jvm_subrequest.c). Started and completed on the event loop only;
 * a JVM thread's request to start one is posted to the loop
 * ({@link LoopCalls}), so no thread ever waits for a subrequest unless it
 * asks its future to.
 */
final class Subrequests {
    // Event loop only.
    private static final Map<Integer, CompletableFuture<Response>> pending = new HashMap<>();
    private static int next;

    private Subrequests() {
    }

    /**
     * Event loop: starts a subrequest of nginx's request {@code r} as
     * {@code spec} says; {@code f} completes with its answer. Returns its
     * id; throws when it cannot start.
     */
    static int start(long r, byte[] spec, CompletableFuture<Response> f) {
        int id = id();
        pending.put(id, f);
        String err = Natives.startSubrequest(r, id, spec);
        if (err != null) {
            pending.remove(id);
            if (err.startsWith("refused the ")) {
                throw new IllegalArgumentException(err);
            }
            throw new IllegalStateException("the subrequest cannot start: " + err);
        }
        return id;
    }

    private static int id() {
        do {
            next = next == Integer.MAX_VALUE ? 1 : next + 1;
        } while (pending.containsKey(next));
        return next;
    }

    /**
     * Subrequest {@code id} is over; its answer is at the start of
     * {@code in}: int status (0: it failed), int count, name and value
     * strings, the body as a string. Its future completes here, on the loop:
     * callbacks attached without an executor run on the loop too.
     */
    static void done(int id, ByteBuffer in, int length) {
        CompletableFuture<Response> f = pending.remove(id);
        if (f == null) {
            return;
        }
        int status = in.getInt(0);
        if (status == 0) {
            f.completeExceptionally(new IOException("the subrequest failed (see nginx's error log)"));
            return;
        }
        Response r = new Response(status);
        int at = 8;
        int count = in.getInt(4);
        for (int i = 0; i < count; i++) {
            String name = string(in, at);
            at += 4 + in.getInt(at);
            String value = string(in, at);
            at += 4 + in.getInt(at);
            r.header(name, value);
        }
        byte[] body = new byte[in.getInt(at)];
        Wire.get(in, at + 4, body, 0, body.length);
        r.body(body);
        f.complete(r);
    }

    /**
     * A request is over: what it still waits for (the ids of its
     * subrequests in flight) fails; nginx normally finishes them first.
     */
    static void abandon(List<Integer> ids) {
        if (ids == null || ids.isEmpty()) {
            return;             // most requests: no copy of an empty list
        }
        for (Integer id : new ArrayList<>(ids)) {
            CompletableFuture<Response> f = pending.remove(id);
            if (f != null) {
                f.completeExceptionally(new IOException("the request is over"));
            }
        }
        ids.clear();
    }

    private static String string(ByteBuffer b, int at) {
        byte[] s = new byte[b.getInt(at)];
        Wire.get(b, at + 4, s, 0, s.length);
        return new String(s, StandardCharsets.ISO_8859_1);
    }

    /** The specification the C module reads: method, URI, args, header fields, body. */
    static byte[] spec(String method, String uri, String args, Map<String, String> headers, byte[] body) {
        check(Gate.token(Gate.SUB_METHOD, method));
        check(Gate.uri(Gate.SUB_URI, uri));
        if (args != null) {
            check(Gate.args(Gate.SUB_ARGS, args));
        }
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(128);
        put(out, method.getBytes(StandardCharsets.ISO_8859_1));
        put(out, uri.getBytes(StandardCharsets.UTF_8));
        put(out, args == null ? new byte[0] : args.getBytes(StandardCharsets.UTF_8));
        int n = headers == null ? 0 : headers.size();
        putInt(out, n);
        if (headers != null) {
            for (Map.Entry<String, String> e : headers.entrySet()) {
                String name = e.getKey(), value = e.getValue();
                if (name == null || value == null) {
                    throw new IllegalArgumentException("a subrequest header field needs a name and"
                            + " a value: " + name);
                }
                check(Gate.token(Gate.SUB_NAME, name));
                check(Gate.value(Gate.SUB_VALUE, name, value));
                put(out, name.getBytes(StandardCharsets.ISO_8859_1));
                put(out, value.getBytes(StandardCharsets.ISO_8859_1));
            }
        }
        put(out, body == null ? new byte[0] : body);
        return out.toByteArray();
    }

    /** A refusal of the gate's, thrown into the handler that asked. */
    private static void check(String refused) {
        if (refused != null) {
            throw new IllegalArgumentException(refused);
        }
    }

    private static void put(java.io.ByteArrayOutputStream out, byte[] b) {
        putInt(out, b.length);
        out.write(b, 0, b.length);
    }

    private static void putInt(java.io.ByteArrayOutputStream out, int v) {
        byte[] b = new byte[4];
        ByteBuffer.wrap(b).order(java.nio.ByteOrder.nativeOrder()).putInt(v);
        out.write(b, 0, 4);
    }
}
