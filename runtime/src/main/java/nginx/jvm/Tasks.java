package nginx.jvm;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Where handlers run when not on the event loop, and the way their results
 * come back to it: a completed task is put on the ready queue and the event
 * loop is woken through the C module's eventfd, once per batch.
 */
final class Tasks {
    static final int LOOP = Wire.LOOP, POOL = Wire.POOL, VIRTUAL = Wire.VIRTUAL, COLOOP = Wire.COLOOP;

    private final ConcurrentLinkedQueue<Task> ready = new ConcurrentLinkedQueue<>();
    /** Tasks whose streamed request body has room again (see {@link UploadBody}). */
    private final ConcurrentLinkedQueue<Task> room = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean signalled = new AtomicBoolean();
    private final Runnable waker;
    /** Run on a thread about to run handlers off the loop (Worker: its scheduling class). */
    private final Runnable beforeHandlers;

    // Event loop only.
    private final LongMap<Task> live = new LongMap<>();

    private Pool pool;
    /**
     * Virtual threads, one started per task (Thread.ofVirtual().factory(), found by
     * reflection: this class is built for JDK 17). Not the JDK's virtual-thread-per-task
     * executor, which keeps every thread it started in a concurrent set of its own, for
     * its close(): a cost per request for nothing here.
     */
    private java.util.concurrent.ThreadFactory virtual;
    /**
     * The carriers of those virtual threads: platform threads of the worker's
     * own, taking continuations as the pool takes tasks (null: the JDK's
     * scheduler, a ForkJoinPool). Two workers on two cores ran /hello at
     * 0.76-0.85 of loop mode on the JDK's scheduler, at 1.05 on these
     * (bench/results/2026-11-26-handoff.md, "Fifth session"): its carriers
     * park after nearly every request and each submission from outside the
     * pool wakes one; the pool wakes one only when none is awake and looking.
     */
    private Pool carriers;
    /** Whether {@code virtual} starts its threads on {@code carriers}. */
    private boolean onOwnCarriers;
    private Semaphore virtualSlots;
    private int virtualLimit;
    private String virtualError = "virtual threads were not configured";
    /** jvm_mode coloop: virtual threads the event loop carries (null: they run as virtual). */
    private LoopScheduler coloop;
    /**
     * Loop only: coloop works (requests, log handlers) that have not
     * ended, at most {@link #coloopLimit} (jvm_queue); their threads are
     * kept for the next ones (LoopScheduler.idle). A plain count, not a
     * semaphore: they start on the loop and end on it, the only carrier.
     */
    private int coloopLive;
    private int coloopLimit;
    /** As a coloop work ends, on the loop (a carried thread runs nowhere else): one object for all. */
    private final Runnable coloopEnded = () -> coloopLive--;
    /**
     * Loop: the coloop task whose first slice runs now, inside {@link #submit}
     * (volatile: another thread may answer for it later), and whether it
     * answered in that slice.
     */
    private volatile Task inline;
    private volatile boolean inlineReady;
    /**
     * Loop only: a coloop task that answered in its first slice, kept for
     * the next coloop request ({@link #recycle}, {@link #task}): 96 B a
     * request less, the one object coloop made over loop mode
     * (bench/results/2026-11-28-coloop-task.md). One is enough: such a
     * task is over before the next request begins.
     */
    private Task spare;

    private static final ExecutorService PRODUCERS = Executors.newCachedThreadPool(daemon("nginx-jvm-body"));

    /**
     * The threads that run abort callbacks ({@link Request#onAbort}), never
     * the event loop (they may block): a few daemon threads, made by
     * {@link #configure} (on the thread that blocks nginx's signals: one made
     * later by the event loop would take them) and kept. The queue holds at
     * most one entry per request that was aborted, plus the callbacks
     * registered after it: bounded by the tasks in flight (jvm_queue), not
     * by the clients.
     */
    final ThreadPoolExecutor aborts;
    static final int ABORT_THREADS = 2;

    Tasks(Runnable waker) {
        this(waker, () -> { });
    }

    Tasks(Runnable waker, Runnable beforeHandlers) {
        this.waker = waker;
        this.beforeHandlers = beforeHandlers;
        java.util.concurrent.ThreadFactory f = daemon("nginx-jvm-abort");
        this.aborts = new ThreadPoolExecutor(ABORT_THREADS, ABORT_THREADS, 60, TimeUnit.SECONDS,
                new java.util.concurrent.LinkedBlockingQueue<>(),
                r -> f.newThread(() -> {
                    beforeHandlers.run();
                    r.run();
                }));
    }

    private static java.util.concurrent.ThreadFactory daemon(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    /**
     * Makes the pool and, if asked, the virtual-thread executor. Returns null,
     * or why virtual threads cannot be had (a JDK older than 21).
     */
    String configure(int poolSize, int queueSize, boolean useVirtual) {
        return configure(poolSize, 0, queueSize, useVirtual, false);
    }

    /**
     * As above; virtual threads run on {@code carrierCount} carriers of
     * their own (0: on the JDK's scheduler); with {@code useColoop} the
     * event loop's virtual threads (jvm_mode coloop): when this JVM cannot
     * have them, one [warn] says why and those locations run as jvm_mode
     * virtual.
     */
    String configure(int poolSize, int carrierCount, int queueSize, boolean useVirtual,
                     boolean useColoop) {
        String error = configureThreads(poolSize, queueSize, useVirtual || useColoop);
        if (useColoop && error == null) {
            String[] why = new String[1];
            coloop = LoopScheduler.open(waker, why, LoopScheduler.NATIVE);
            if (coloop == null) {
                Log.warn("nginx.jvm", "jvm_mode coloop cannot be had in this JVM: " + why[0]
                        + "; its locations run as jvm_mode virtual");
            } else {
                LoopWatchdog.start(coloop);
            }
        } else if (useColoop) {
            Log.warn("nginx.jvm", "jvm_mode coloop cannot be had in this JVM: it needs virtual threads"
                    + " (JDK 21 or newer); its locations run as jvm_mode virtual");
        }
        if (error == null && carrierCount > 0) {
            String why = ownCarriers(carrierCount);
            if (why != null) {
                Log.warn("nginx.jvm", "jvm_mode virtual's threads run on the JDK's scheduler: " + why);
            }
        }
        return error;
    }

    /**
     * Virtual threads on {@code count} carriers of the worker's own, through
     * the JDK's internal builder that takes a scheduler (JDK 21 to 25, as
     * coloop's {@link LoopScheduler}); null, or why not, after a self-test:
     * a thread started, parked and unparked through them.
     */
    private String ownCarriers(int count) {
        java.util.concurrent.Executor scheduler = r -> carriers.offer(metered(r));
        AtomicInteger handed = new AtomicInteger();
        java.util.concurrent.ThreadFactory own, probe;
        try {
            own = factory(LoopScheduler.NATIVE.of(scheduler));
            probe = factory(LoopScheduler.NATIVE.of(r -> {
                handed.incrementAndGet();
                scheduler.execute(r);
            }));
        } catch (Throwable e) {
            return "this JDK (" + System.getProperty("java.version") + ") has no virtual-thread"
                    + " builder with a scheduler of its own: " + e;
        }
        java.util.concurrent.ThreadFactory threads = daemon("nginx-jvm-carrier");
        // made now, on the thread that blocks nginx's signals; never ended (the
        // pool's threads are not either): should the self-test fail, they park
        carriers = new Pool(count, Integer.MAX_VALUE / 2, r -> threads.newThread(() -> {
            beforeHandlers.run();
            r.run();
        }));
        AtomicBoolean resumed = new AtomicBoolean();
        Thread t = probe.newThread(() -> {
            LockSupport.parkNanos(1_000_000);
            resumed.set(true);
        });
        try {
            t.start();
            t.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted during the self-test";
        } catch (RuntimeException e) {
            return "a thread on them did not start: " + e;
        }
        if (!resumed.get() || handed.get() < 2) {
            return "a thread did not start, park and resume through them within 5 s (handed to them "
                    + handed.get() + " times)";
        }
        virtual = own;
        onOwnCarriers = true;
        Thread watch = new Thread(() -> {
            for (;;) {
                LockSupport.parkNanos(CARRIERS_WATCH_NANOS);
                if (carriers.compensate(MAX_CARRIERS)) {
                    // a handler that runs long without a pause also holds one: the
                    // count then grows up to MAX_CARRIERS, and the OS shares the cores
                    Log.warn("nginx.jvm", "every carrier of jvm_mode virtual stayed held while others"
                            + " waited (handlers that block where a virtual thread cannot leave its"
                            + " carrier, a native call or a file read, or that run long): one more"
                            + " started, " + carriers.threads() + " now");
                }
            }
        }, "nginx-jvm-vwatch");
        watch.setDaemon(true);
        watch.start();
        return null;
    }

    /**
     * Measured virtual threads on the worker's own carriers ({@link Meter}),
     * by the continuation the JDK hands the scheduler each time the thread
     * is to run (one object for the thread's life); from the thread's start
     * to its end.
     */
    private final java.util.concurrent.ConcurrentHashMap<Runnable, Meter> meters =
            new java.util.concurrent.ConcurrentHashMap<>();
    /** The meter of the virtual thread being started, and the thread starting it (the loop). */
    private Meter startingMeter;
    private Thread startingOn;

    /** A continuation to hand a carrier: measured when its thread's request is. */
    private Runnable metered(Runnable continuation) {
        Meter starting = startingMeter;
        if (starting != null && Thread.currentThread() == startingOn) {
            // its first: the JDK hands it over inside Thread.start(), on the loop
            starting.continuation = continuation;
            meters.put(continuation, starting);
            startingMeter = null;
        }
        if (meters.isEmpty()) {
            return continuation;
        }
        Meter m = meters.get(continuation);
        return m == null ? continuation : () -> m.slice(continuation);
    }

    /** How often the carriers' watch looks, and how many carriers it may have in all (the JDK's 256). */
    static final long CARRIERS_WATCH_NANOS = 100_000_000L;
    static final int MAX_CARRIERS = 256;

    /** Thread.Builder.factory() of a builder (found by reflection: built for JDK 17). */
    private static java.util.concurrent.ThreadFactory factory(Object builder)
            throws ReflectiveOperationException {
        return (java.util.concurrent.ThreadFactory) Class.forName("java.lang.Thread$Builder")
                .getMethod("factory").invoke(builder);
    }

    private String configureThreads(int poolSize, int queueSize, boolean useVirtual) {
        aborts.prestartAllCoreThreads();
        if (poolSize > 0) {
            java.util.concurrent.ThreadFactory threads = daemon("nginx-jvm-pool");
            // made now, on the thread that blocks nginx's signals
            pool = new Pool(poolSize, queueSize, r -> threads.newThread(() -> {
                beforeHandlers.run();
                r.run();
            }));
        }
        if (!useVirtual) {
            return null;
        }
        try {
            virtual = factory(Thread.class.getMethod("ofVirtual").invoke(null));
            virtualLimit = Math.max(1, queueSize);
            virtualSlots = new Semaphore(virtualLimit);
            coloopLimit = Math.max(1, queueSize);
            virtualError = null;
            return null;
        } catch (ReflectiveOperationException e) {
            virtualError = "jvm_mode virtual needs a JDK 21 or newer; this JVM is "
                    + System.getProperty("java.version") + " (set jvm_path)";
            return virtualError;
        }
    }

    /**
     * Loop: the task of a request about to be submitted in {@code mode}
     * (the effective one): the kept one for coloop if there is one
     * ({@link #recycle}), else a new one.
     */
    Task task(long id, int mode, int phase, Object handler, Request request, boolean async) {
        Task t = spare;
        if (t == null || mode != COLOOP) {
            return new Task(id, mode, phase, handler, request, async, this);
        }
        spare = null;
        t.reuse(id, mode, phase, handler, request, async);
        return t;
    }

    /**
     * Loop, after {@link #answeredInline} answered true and {@link #forget}:
     * keeps {@code t} for the next coloop request when nothing can reach
     * it from its request any more. Such a task was never in {@link #live}
     * (no id of the C module's names it), never on the ready or room queue,
     * has no body produced in pieces, no request body still read, and
     * no Responder of an async handler's; its handler's call has returned
     * ({@link Task#returned}: a call that parked after it answered, say on
     * the Abort's lock, still holds it, and the task is left to the GC).
     * What is left is its request's {@link Request#abort}, cut here; a
     * thread of the request's that read it before the cut finds the task
     * is not its request's any more ({@link Abort#renew}).
     */
    void recycle(Task t) {
        if (t.mode != COLOOP || !t.returned() || t.async || t.body != null
                || t.request.upload != null || live.get(t.id) == t) {
            return;
        }
        t.request.abort = null;
        t.release();
        spare = t;
    }

    /**
     * Starts a task; returns null when accepted, otherwise why it was refused
     * (the caller answers 503).
     */
    String submit(Task task, int mode) {
        switch (mode) {
            case POOL:
                if (pool == null) {
                    return "jvm_mode pool without a pool";
                }
                live.put(task.id, task);
                if (!pool.offer(task)) {
                    live.remove(task.id);
                    return "the thread pool's queue is full (jvm_pool_size " + pool.size()
                            + ", jvm_queue " + pool.capacity() + ")";
                }
                return null;
            case COLOOP:
                if (coloop != null) {
                    return submitColoop(task);
                }
                // fall through: this JVM cannot have them (said at start)
            case VIRTUAL:
                if (virtual == null) {
                    return virtualError;
                }
                live.put(task.id, task);
                // own carriers ran beforeHandlers as they started; the JDK's did not
                String refused = startVirtual(onOwnCarriers ? task : () -> {
                    // on the carrier thread: once per carrier, then a check
                    beforeHandlers.run();
                    task.run();
                }, onOwnCarriers ? task.meter : null);
                if (refused != null) {
                    live.remove(task.id);
                }
                return refused;
            default:
                live.put(task.id, task);
                task.run();
                return null;
        }
    }

    /**
     * A coloop task: a virtual thread the loop carries, whose first slice
     * runs now (the caller is the loop), until it parks or answers.
     */
    private String submitColoop(Task task) {
        // its answer in this slice is taken at once (answeredInline)
        boolean once = task.phase == Wire.PHASE_CONTENT && !task.async && task.request.upload == null;
        inline = once ? task : null;
        String refused = startColoop(task, task.what, true);
        if (refused != null) {
            inline = null;
            return refused;
        }
        if (!(once && inlineReady && task.body == null)) {
            // it parked (or streams): the loop comes back for it by its id;
            // nothing from C names it before this call returns
            live.put(task.id, task);
        }
        return null;
    }

    /**
     * Loop: starts {@code work} on a virtual thread, counted until it ends;
     * null, or why not (jvm_queue of them already, or the JDK refused).
     */
    private String startVirtual(Runnable work) {
        return startVirtual(work, null);
    }

    /** As above; on the worker's own carriers its slices are measured into {@code meter} (if not null). */
    private String startVirtual(Runnable work, Meter meter) {
        if (!virtualSlots.tryAcquire()) {
            return "too many requests in flight on virtual threads (jvm_queue "
                    + virtualLimit + ")";
        }
        try {
            Thread t = virtual.newThread(() -> {
                try {
                    work.run();
                } finally {
                    if (meter != null && meter.continuation != null) {
                        meters.remove(meter.continuation);
                    }
                    virtualSlots.release();
                }
            });
            startingMeter = meter;
            startingOn = Thread.currentThread();
            try {
                t.start();
            } finally {
                startingMeter = null;
            }
            return null;
        } catch (RuntimeException e) {
            // the scheduler would not take it (RejectedExecutionException):
            // its place is free again
            virtualSlots.release();
            return "cannot start a virtual thread: " + e;
        }
    }

    /**
     * Loop: starts {@code work} on a carried thread, counted until it ends;
     * null, or why not (jvm_queue of them already, or the JDK refused).
     */
    private String startColoop(Runnable work, String what, boolean now) {
        if (coloopLive >= coloopLimit) {
            return "too many requests in flight on the loop's virtual threads (jvm_queue " + coloopLimit + ")";
        }
        coloopLive++;
        try {
            coloop.start(work, what, now, work instanceof Task ? ((Task) work).meter : null, coloopEnded);
            return null;
        } catch (RuntimeException e) {
            coloopLive--;
            return "cannot start a coloop thread: " + e;
        }
    }

    /**
     * Loop, after {@link #submit}: true when a coloop task answered in its
     * first slice with a response sent at once (the caller sends it as the
     * loop's handlers' are, and forgets the task); otherwise its answer comes
     * through {@link #poll} as any task's.
     */
    boolean answeredInline(Task task) {
        if (inline != task) {
            return false;
        }
        boolean answered = inlineReady;
        inline = null;
        inlineReady = false;
        if (answered && task.body != null) {
            // a body produced in pieces: through the ready queue
            enqueue(task);
            return false;
        }
        return answered;
    }

    /** The loop's pass over the coloop threads to run (when the eventfd woke it). */
    void drain() {
        LoopScheduler s = coloop;
        if (s != null) {
            s.drain();
        }
    }

    /** What jvm_mode {@code mode} runs as in this JVM (coloop falls back to virtual). */
    int effective(int mode) {
        return mode == COLOOP && coloop == null ? VIRTUAL : mode;
    }

    /**
     * Runs {@code work} on a pool or virtual thread with nothing to answer
     * (a log handler); returns null, or why it was refused.
     */
    String detach(Runnable work, int mode) {
        if (mode == COLOOP && coloop != null) {
            return startColoop(work, "jvm_log", false);
        }
        if ((mode == VIRTUAL || mode == COLOOP) && virtual != null) {
            return startVirtual(work);
        }
        if (pool == null) {
            return mode != POOL ? virtualError : "jvm_mode pool without a pool";
        }
        return pool.offer(work) ? null : "the thread pool's queue is full";
    }

    /**
     * The handler answered. A body that may block while produced (a stream,
     * a seq, a writer) is produced on a JVM thread, never on the loop: on the
     * handler's own thread when it answered synchronously off the loop. A
     * writer of an asynchronous handler may go on writing after it returned,
     * until it closes the stream.
     */
    void stream(Task task, Response response) {
        Object body = response.body();
        if (!ResponseEncoder.producedInPieces(body)) {
            // sent at once, or refused by the encoder on the loop (a 500)
            ready(task);
            return;
        }
        if (body instanceof UpstreamCall) {
            // a call's body relayed (nginx.jvm.Upstream): its pieces arrive on
            // the loop, which hands them on as they come, no thread between
            BodySource relay = ((UpstreamCall) body).relay(() -> ready(task));
            if (relay != null) {
                response.body(relay);
                task.body = relay;
                ready(task);
                if (task.cancelled) {
                    task.closeBody();
                }
                return;
            }
        }
        AsyncBody async = body instanceof BodyWriter
                ? new AsyncBody((BodyWriter) body, !task.async, task, this)
                : new AsyncBody(ResponseEncoder.source(response), task, this);
        response.body(async);
        // Either this sees the cancel, or cancel() sees the body and closes it.
        task.body = async;
        ready(task);
        if (task.cancelled) {
            // The request ended before the answer: nobody will read the body.
            async.close();
            async.closeSource();
            return;
        }
        if (task.onHandlerThread() && task.mode != LOOP) {
            async.produce();
        } else {
            PRODUCERS.execute(async::produce);
        }
    }

    /** From any thread: the task has something for the event loop. */
    void ready(Task task) {
        if (task.enqueue()) {
            if (task == inline) {
                // answered in its first slice, on the loop: Worker.submit takes it
                inlineReady = true;
                return;
            }
            enqueue(task);
        }
    }

    private void enqueue(Task task) {
        ready.add(task);
        if (signalled.compareAndSet(false, true)) {
            waker.run();
        }
    }

    /**
     * From the handler's thread: the task's request body has room again, the
     * loop may read on from the client.
     */
    void room(Task task) {
        if (task.enqueueRoom()) {
            room.add(task);
            if (signalled.compareAndSet(false, true)) {
                waker.run();
            }
        }
    }

    /**
     * Event loop: the next ready task's id, or the id plus
     * {@link Wire#POLL_BODY} of one whose body has room again, or 0.
     */
    long poll() {
        signalled.set(false);
        Task t;
        while ((t = ready.poll()) != null) {
            t.dequeued();
            if (!t.cancelled) {
                return t.id;
            }
        }
        while ((t = room.poll()) != null) {
            t.dequeuedRoom();
            if (!t.cancelled) {
                return t.id + Wire.POLL_BODY;
            }
        }
        return 0;
    }

    /**
     * Event loop: the ids {@link #poll} answers, up to {@code max}, into
     * {@code out} (longs in its order, from 0); returns how many.
     */
    int poll(java.nio.ByteBuffer out, int max) {
        int n = 0;
        long id;
        while (n < max && (id = poll()) != 0) {
            out.putLong(8 * n++, id);
        }
        return n;
    }

    Task get(long id) {
        return live.get(id);
    }

    /**
     * Event loop: the client of task {@code id} left before its response
     * was complete (the C module saw it); {@link #cancel} follows.
     */
    void abort(long id, boolean interrupt) {
        Task t = live.get(id);
        if (t != null) {
            // never the event loop's thread (an async handler's call there)
            t.abort(interrupt && t.mode != LOOP);
        }
    }

    /**
     * Loop, after {@link #get}: forgets {@code t} when its encoded answer with
     * {@code status} is all there is (a content response, no body produced
     * in pieces, no request body still read as it comes, not a WebSocket's
     * 101): the request no longer needs its task, and the C module calls no
     * {@link #cancel} for it. Once answered the handler's work is over, so
     * a client leaving while nginx sends that answer aborts nothing
     * (docs/handlers.md, "When the client leaves").
     */
    boolean done(Task t, int status) {
        if (t.phase != Wire.PHASE_CONTENT || t.body != null || t.request.upload != null
                || status < 200) {
            return false;
        }
        live.remove(t.id);
        forget(t);
        return true;
    }

    /** Event loop: the request is over (answered, timed out or gone). */
    boolean cancel(long id) {
        Task t = live.remove(id);
        if (t != null) {
            forget(t);
        }
        return t != null;
    }

    /** Loop: task {@code t}'s request is over (cancelled, or answered in its first slice). */
    void forget(Task t) {
        // not aborted (or aborted just before): its callbacks never run
        t.complete();
        t.cancelled = true;
        t.request.handle = 0;
        Subrequests.abandon(t.request.subrequests);
        t.closeBody();
        t.request.end();
        if (!t.taken && t.mode == POOL) {
            // its place in the queue is free for a request still there
            pool.remove(t);
        }
    }

    /** Requests waiting for a pool thread; any thread. */
    int queued() {
        Pool p = pool;
        return p == null ? 0 : p.queued();
    }
}
