package nginx.jvm;

/**
 * The natives the worker's C module registers once its JVM is up
 * (ngx_http_jvm_natives.c, called from the worker's start), beside those
 * of {@link Shm}. Only declarations: Java calls up through them, the C
 * module never calls this class. {@link Worker} holds the entry points the
 * C module calls down; keeping the two apart means a public class that
 * needs nginx (a {@link Request}'s variables) never reaches into Worker.
 */
final class Natives {
    private Natives() {
    }

    /** Wakes the event loop (the C module's eventfd); any thread. */
    static native void wake();

    /** Makes the calling thread SCHED_BATCH, once per OS thread (see the C module). */
    static native void batch();

    /** nginx's variable {@code name} of request {@code r} (event loop), or null; unknown names throw. */
    static native byte[] getVariable(long r, byte[] name);

    /** Sets a changeable variable of request {@code r} (event loop); throws when it cannot. */
    static native void setVariable(long r, byte[] name, byte[] value);

    /** Request {@code r} (event loop) routes on this URI from now on. */
    static native void setUri(long r, byte[] uri);

    /**
     * Request {@code r}'s (event loop) header fields {@code name}: replaced by
     * one of {@code value}, or one more when {@code add}; all removed when
     * {@code value} is null. Throws when it cannot (see Request#setHeader).
     */
    static native void setHeader(long r, byte[] name, byte[] value, boolean add);

    /** Starts subrequest {@code id} of request {@code r} (event loop); null, or why not. */
    static native String startSubrequest(long r, int id, byte[] spec);

    /**
     * Starts call {@code id} through the jvm_client location {@code name}
     * (event loop): its handle; throws IllegalStateException when it cannot.
     * {@code target} is the URI after the location's prefix, with its args;
     * {@code fields} the header fields, each "name: value" CRLF; {@code body}
     * the request's body (empty: none). 0 with no exception: no room now.
     */
    static native long clientStart(int id, byte[] name, byte[] method, byte[] target, byte[] fields,
            byte[] body);

    /** A piece of the call's request body, copied, to write (event loop); false: its end is closed. */
    static native boolean clientWrite(long call, byte[] piece);

    /** The call's reader has room again (event loop). */
    static native void clientResume(long call);

    /** Java is done with the call before its end (event loop): nginx sees its client leave. */
    static native void clientClose(long call);

    /** Runs the hooks of Runtime.addShutdownHook (C: java.lang.ApplicationShutdownHooks). */
    static native void runShutdownHooks();

    /**
     * A Thread.Builder of virtual threads scheduled by {@code scheduler}
     * (C: the JDK's package-private ThreadBuilders$VirtualThreadBuilder,
     * which JNI reaches without --add-opens); throws the JDK's
     * NoClassDefFoundError or NoSuchMethodError where it has none.
     */
    static native Object virtualThreadBuilder(java.util.concurrent.Executor scheduler);

    /**
     * The slots of what a call into Java cost ({@link Meter}: long bytes,
     * long CPU nanoseconds; the C module reads and clears them after each),
     * or null where the configuration reads no such figure.
     */
    static native java.nio.ByteBuffer meter();

    /** Tracing is on (nginx.jvm.Tracing): nginx ends spans in the log phase, and measures calls. */
    static native void tracing();

    /**
     * Request {@code r}'s server span begins (event loop): when nginx began
     * the request, in ms since the epoch, or -1 (a subrequest; begun already).
     */
    static native long traceStart(long r);
}
