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

    private static final List<Object> handlers = new ArrayList<>();
    private static final Tasks tasks = new Tasks(Worker::wake);
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
        Object handler = handlers.get(index);
        int n;
        if (!(handler instanceof Handler)) {
            n = notLoaded(handler, Handler.class);
        } else {
            try {
                Response response = ((Handler) handler).handle(request(length));
                if (response == null) {
                    n = encoder.error(500, "the handler returned no response (null)", null);
                } else {
                    n = encoder.encode(response);
                }
            } catch (BadResponseException e) {
                n = encoder.error(500, e.getMessage(), null);
            } catch (Throwable t) {
                n = encoder.error(500, "the handler threw", t);
            }
        }
        return result(n);
    }

    private static Request request(int length) {
        byte[] data = new byte[length];
        Wire.get(requestBuffer, 0, data, 0, length);
        return new Request(data);
    }

    private static int notLoaded(Object handler, Class<?> kind) {
        if (handler == null) {
            return encoder.error(500, "the handler of this location failed to load"
                    + " (see the log at worker start)", null);
        }
        return encoder.error(500, handler.getClass().getName() + " does not implement "
                + kind.getName() + " (check jvm_async)", null);
    }

    /** What handle() and take() return: the length, negated if the buffer was replaced. */
    private static int result(int n) {
        pending = encoder.pending;
        encoder.pending = null;
        return encoder.replaced ? -n : n;
    }

    /**
     * Sets up where handlers may run: a pool of {@code poolSize} threads
     * (none if 0) with {@code queueSize} waiting requests, and virtual threads.
     * Returns null, or why virtual threads cannot be had.
     */
    public static String configure(int poolSize, int queueSize, boolean virtual) {
        try {
            return tasks.configure(poolSize, queueSize, virtual);
        } catch (Throwable t) {
            return describe("cannot start the thread pool", t);
        }
    }

    /**
     * Starts the request in the request buffer as task {@code id}: on the
     * loop (async handlers), a pool thread or a virtual thread. Returns 0 when
     * accepted: {@link #poll} names it when its response is ready. Otherwise
     * returns the length of an encoded error response (503 when refused).
     */
    public static int submit(int index, int length, long id, int mode, boolean async) {
        Object handler = handlers.get(index);
        if (!(async ? handler instanceof AsyncHandler : handler instanceof Handler)) {
            return result(notLoaded(handler, async ? AsyncHandler.class : Handler.class));
        }
        try {
            String refused = tasks.submit(new Task(id, mode, handler, request(length), async, tasks), mode);
            return refused == null ? 0 : result(encoder.error(503, refused, null));
        } catch (Throwable t) {
            return result(encoder.error(500, "cannot start the handler", t));
        }
    }

    /** The id of the next task with something for the event loop, or 0. */
    public static long poll() {
        return tasks.poll();
    }

    /** Encodes task {@code id}'s response, as {@link #handle} does. */
    public static int take(long id) {
        Task task = tasks.get(id);
        int n = task == null
                ? encoder.error(500, "no such task", null)
                : task.encode(encoder);
        return result(n);
    }

    /** Task {@code id}'s request is over: forget it, stop its body. */
    public static void cancel(long id) {
        tasks.cancel(id);
    }

    /** Wakes the event loop (the C module's eventfd); any thread. */
    private static native void wake();

    /**
     * Writes the next piece of a streamed body into the response buffer.
     * Returns its length; -1 at the end; -2 when the piece is not produced
     * yet (the task is named by {@link #poll} when it is); or, when the body
     * failed, -3 minus the length of an error message written instead.
     */
    public static int next(Object body) {
        ByteBuffer out = encoder.buffer();
        try {
            return ((BodySource) body).fill(out);
        } catch (Throwable t) {
            byte[] msg = describe("the response body failed", t).getBytes(StandardCharsets.UTF_8);
            int n = Math.min(msg.length, out.capacity());
            out.put(0, msg, 0, n);
            return -3 - n;
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
