package nginx.jvm;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The entry points the C module calls, on the worker's event-loop thread only.
 * Everything here is static because there is one JVM, one event loop and one
 * set of buffers per nginx worker process.
 *
 * <p>None of these methods throws: a failure becomes a value the C module
 * understands (an error message, or a response that answers 500).
 */
public final class Worker {
    private static final int BUFFER_SIZE = 64 * 1024;

    private static final List<Handler> handlers = new ArrayList<>();
    private static ByteBuffer requestBuffer =
            ByteBuffer.allocateDirect(BUFFER_SIZE).order(ByteOrder.nativeOrder());
    private static final ResponseEncoder encoder = new ResponseEncoder(BUFFER_SIZE);

    /** Read by the C module after {@link #handle} answered a streamed body. */
    public static Object pending;

    private Worker() {
    }

    /** The buffer the C module writes requests into, at least {@code capacity} bytes. */
    public static ByteBuffer requestBuffer(int capacity) {
        if (requestBuffer.capacity() < capacity) {
            requestBuffer = ByteBuffer.allocateDirect(Math.max(capacity, requestBuffer.capacity() * 2))
                    .order(ByteOrder.nativeOrder());
        }
        return requestBuffer;
    }

    /** The buffer responses and body pieces are written into. */
    public static ByteBuffer responseBuffer() {
        return encoder.buffer();
    }

    /**
     * Loads the handler named in a {@code jvm_content} directive and gives it
     * the next index. Returns null on success, otherwise what went wrong.
     */
    public static String register(String name) {
        try {
            handlers.add(Handlers.load(name));
            return null;
        } catch (Throwable t) {
            handlers.add(null);
            return describe("cannot load handler \"" + name + "\"", t);
        }
    }

    /** Runs the {@code jvm_init} handler; returns null on success, otherwise what went wrong. */
    public static String init(String name) {
        try {
            Handlers.runInit(name);
            return null;
        } catch (Throwable t) {
            return describe("jvm_init \"" + name + "\" failed", t);
        }
    }

    /**
     * Serves the request of {@code length} bytes in the request buffer with
     * handler {@code index}. Returns the length of the encoded response in the
     * response buffer, negated when the response buffer was replaced.
     */
    public static int handle(int index, int length) {
        Handler handler = handlers.get(index);
        int n;
        if (handler == null) {
            n = encoder.error("the handler of this location failed to load (see the log at worker start)", null);
        } else {
            try {
                byte[] data = new byte[length];
                requestBuffer.get(0, data, 0, length);
                Response response = handler.handle(new Request(data));
                if (response == null) {
                    n = encoder.error("the handler returned no response (null)", null);
                } else {
                    n = encoder.encode(response);
                }
            } catch (Throwable t) {
                n = encoder.error("the handler threw", t);
            }
        }
        pending = encoder.pending;
        encoder.pending = null;
        return encoder.replaced ? -n : n;
    }

    /**
     * Writes the next piece of a streamed body into the response buffer.
     * Returns its length; -1 at the end; or, when the body failed, -2 minus
     * the length of an error message written into the buffer instead.
     */
    public static int next(Object body) {
        ByteBuffer out = encoder.buffer();
        try {
            return ((BodySource) body).fill(out);
        } catch (Throwable t) {
            byte[] msg = describe("the response body failed", t).getBytes(StandardCharsets.UTF_8);
            int n = Math.min(msg.length, out.capacity());
            out.put(0, msg, 0, n);
            return -2 - n;
        }
    }

    /** Closes a streamed body: at its end, or when the client went away. */
    public static void close(Object body) {
        try {
            ((BodySource) body).close();
        } catch (Throwable ignored) {
            // The response is over; nothing is left to tell.
        }
    }

    /** Called at worker exit. */
    public static void stop() {
        handlers.clear();
    }

    static String describe(String what, Throwable t) {
        java.io.StringWriter sw = new java.io.StringWriter();
        t.printStackTrace(new java.io.PrintWriter(sw));
        return what + ": " + sw.toString().stripTrailing();
    }
}
