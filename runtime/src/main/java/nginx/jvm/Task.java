package nginx.jvm;

import java.lang.System.Logger.Level;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.Executor;

/**
 * One request served off the event loop (or answered later by an async
 * handler). A JVM thread completes it; the event loop takes the response
 * when {@link Tasks} tells it the task is ready. Everything but
 * {@link #respond} and {@link #raise} runs on the event loop. A coloop
 * task that answered in its first slice serves the next coloop request
 * too ({@link Tasks#recycle}): one request at a time, each its own.
 */
final class Task extends Abort implements Responder, Runnable {
    private static final System.Logger LOG = System.getLogger("nginx.jvm");

    // The request's own: set once per request, by the constructor or, for
    // a task kept for the next request, by reuse (Tasks#task), on the
    // loop before the task is handed to its thread.
    long id;
    int mode;
    /** The phase its handler serves (Wire.PHASE_*): rewrite and access may answer nothing. */
    int phase;
    /** System.nanoTime() when the request reached the JVM (jvm_status). */
    long started;
    /**
     * True while the task is on the ready queue (see {@link Tasks#ready}); the
     * flags are fields of the task's own, set through VarHandles, not an
     * AtomicBoolean each: three objects less per request
     * (bench/results/2026-11-27-alloc.md).
     */
    private volatile boolean queued;
    /** True while the task is on the queue of bodies with room (see {@link Tasks#room}). */
    private volatile boolean roomQueued;
    private Object handler;
    Request request;
    boolean async;
    private final Tasks tasks;
    /** Set by the first respond or raise: the others are ignored. */
    private volatile boolean done;
    private static final VarHandle QUEUED, ROOM_QUEUED, DONE;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            QUEUED = l.findVarHandle(Task.class, "queued", boolean.class);
            ROOM_QUEUED = l.findVarHandle(Task.class, "roomQueued", boolean.class);
            DONE = l.findVarHandle(Task.class, "done", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    // Written once by the completing thread before the task is queued as
    // ready; the queue hands them to the event loop safely.
    private volatile Response response;
    private Throwable error;
    private String errorMessage;

    volatile boolean cancelled;
    /** Set when a thread takes it: until then cancel() may take it off the pool's queue. */
    volatile boolean taken;
    /** A body being produced on a JVM thread, or a call's relayed on the loop; see {@link Tasks#stream}. */
    volatile BodySource body;

    /** Its handler's name, for the coloop watchdog's warnings. */
    String what;
    /** What it cost the JVM ({@link Meter}), or null when nothing measures. */
    Meter meter;
    /**
     * Set as {@link #run} returns, on the handler's thread: nothing of
     * the handler's call touches the task any more ({@link Tasks#recycle}).
     */
    private volatile boolean returned;

    Task(long id, int mode, int phase, Object handler, Request request, boolean async, Tasks tasks) {
        super(request);
        this.tasks = tasks;
        set(id, mode, phase, handler, request, async);
    }

    private void set(long id, int mode, int phase, Object handler, Request request, boolean async) {
        this.id = id;
        this.mode = mode;
        this.phase = phase;
        this.handler = handler;
        this.request = request;
        this.async = async;
        this.started = System.nanoTime();
        this.what = "a handler";
        this.meter = Meter.open();
    }

    /**
     * Loop: the task, kept by {@link Tasks#recycle} after its last request,
     * serves request {@code request} as a new one would: every field of
     * the last request's is written again, and its Abort belongs to the new
     * request only (a callback the last one registered is gone; the last
     * request's own calls find it is not theirs: {@link Abort#renew}).
     */
    void reuse(long id, int mode, int phase, Object handler, Request request, boolean async) {
        set(id, mode, phase, handler, request, async);
        queued = false;
        roomQueued = false;
        done = false;
        response = null;
        error = null;
        errorMessage = null;
        cancelled = false;
        taken = false;
        body = null;
        returned = false;
        // last, under the Abort's lock: publishes the writes above too to a
        // thread that next takes the lock
        renew(request);
    }

    /**
     * Loop, as the task is kept for a next request: it holds nothing of
     * the last one (its request, handler and answer may be collected).
     */
    void release() {
        disown();
        handler = null;
        request = null;
        response = null;
        error = null;
        errorMessage = null;
        meter = null;
    }

    /** Whether {@link #run} has returned (see {@link #returned}). */
    boolean returned() {
        return returned;
    }

    /** As its own request's {@link Abort}: the callbacks' threads. */
    @Override
    Executor callbacks() {
        return tasks.aborts;
    }

    /** Runs the handler: on a pool or virtual thread, or on the loop for async handlers. */
    @Override
    public void run() {
        try {
            call();
        } finally {
            returned = true;
        }
    }

    private void call() {
        taken = true;
        // the thread an abort interrupts, and onHandlerThread's, from now on
        if (cancelled || !enter()) {
            // its request ended while it waited: nobody reads the answer
            return;
        }
        // a pool thread's window; a virtual thread's carrier has one open; on
        // the loop (an async handler's call) the loop's share counts it already
        boolean measured = meter != null && mode != Wire.LOOP && meter.begin();
        try {
            if (async) {
                Trace trace = request.trace;
                Object scope = trace == null ? null : Tracing.enter(trace);
                try {
                    ((AsyncHandler) handler).handle(request, this);
                } finally {
                    if (trace != null) {
                        Tracing.leave(trace, scope, null);
                    }
                }
            } else {
                respond(phase == Wire.PHASE_CONTENT
                        ? Handlers.call((Handler) handler, request)
                        : Handlers.callPhase(handler, request, phase));
            }
        } catch (Failure f) {
            fail(f.getMessage(), f.getCause());
        } catch (BadResponseException e) {
            fail(e.getMessage(), null);
        } catch (Throwable t) {
            fail("the handler threw", t);
        } finally {
            if (measured) {
                meter.close();
            }
            leave();
        }
    }

    /** Any thread: puts it on the ready queue; false when it is there already. */
    boolean enqueue() {
        return QUEUED.compareAndSet(this, false, true);
    }

    /** Event loop: taken off the ready queue. */
    void dequeued() {
        queued = false;
    }

    /** Any thread: puts it on the queue of bodies with room; false when it is there already. */
    boolean enqueueRoom() {
        return ROOM_QUEUED.compareAndSet(this, false, true);
    }

    /** Event loop: taken off the queue of bodies with room. */
    void dequeuedRoom() {
        roomQueued = false;
    }

    /** The request is over: a body still being produced stops. */
    void closeBody() {
        BodySource b = body;
        if (b != null) {
            try {
                b.close();
            } catch (java.io.IOException ignored) {
                // the request is over either way
            }
        }
    }

    @Override
    public void respond(Response r) {
        if (r == null && phase == Wire.PHASE_CONTENT) {
            fail("the handler responded with no response (null)", null);
            return;
        }
        if (!DONE.compareAndSet(this, false, true)) {
            LOG.log(Level.DEBUG, "respond() after the response was given: ignored");
            return;
        }
        measured();
        response = r;
        if (r == null) {
            // a rewrite or access handler lets the request go on
            tasks.ready(this);
            return;
        }
        tasks.stream(this, r);
    }

    @Override
    public void raise(Throwable t) {
        if (t instanceof BadResponseException) {
            fail(t.getMessage(), null);
        } else {
            fail("the handler raised", t);
        }
    }

    private void fail(String message, Throwable t) {
        if (!DONE.compareAndSet(this, false, true)) {
            LOG.log(Level.DEBUG, "raise() after the response was given: ignored", t);
            return;
        }
        measured();
        errorMessage = message;
        error = t;
        tasks.ready(this);
    }

    /** Before the loop may take the answer: the cost so far is in the sums. */
    private void measured() {
        if (meter != null) {
            meter.close();
        }
    }

    Response response() {
        return response;
    }

    /** Encodes the response (or the failure) into the encoder's buffer. */
    int encode(ResponseEncoder encoder) {
        if (errorMessage != null && Dev.ON && phase == Wire.PHASE_CONTENT) {
            return encoder.encode(Dev.failed(errorMessage, error), mode);
        }
        if (errorMessage != null) {
            return encoder.error(500, errorMessage, error);
        }
        if (response == null) {
            return encoder.declined();
        }
        return encoder.encode(response, mode);
    }
}
