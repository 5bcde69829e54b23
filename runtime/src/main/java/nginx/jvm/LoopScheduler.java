package nginx.jvm;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.reflect.Constructor;
import java.util.Map;
import java.util.IdentityHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code jvm_mode coloop}: virtual threads whose scheduler is the worker's
 * event loop. The JDK hands this executor a virtual thread's continuation
 * whenever the thread is to run (started, unparked after a sleep, a socket
 * that became ready, a future completed), from whatever thread unparked it;
 * the continuation waits in a queue until the event loop {@link #drain}s it,
 * and then runs on the loop's own thread until the virtual thread parks
 * again or ends. The loop is the only carrier: a carried thread runs only
 * while the loop runs it, so it may call nginx directly ({@link #carried}).
 *
 * <p>JDK 21 to 25 have no public API for a virtual thread's scheduler,
 * only the package-private constructor
 * {@code java.lang.ThreadBuilders$VirtualThreadBuilder(Executor)}. In a
 * worker the C module calls it through JNI ({@link Natives#virtualThreadBuilder}),
 * which needs no {@code --add-opens} (nothing of nginx-jvm does); a plain
 * JVM reaches it by reflection, which needs {@link #OPENS}. {@link #open}
 * tries it and a small self-test (a thread started, parked and unparked
 * through this executor) before any request does: a JDK that lacks it or
 * changed is told in one sentence, and the caller runs those locations as
 * {@code jvm_mode virtual} instead.
 *
 * <p>{@code java --add-opens=java.base/java.lang=ALL-UNNAMED -cp
 * nginx-jvm.jar nginx.jvm.LoopScheduler} runs the same self-test in a
 * plain JVM and says whether that JDK can run coloop.
 */
final class LoopScheduler implements Executor {
    /**
     * The loop's pass runs at most this many continuations, and starts no
     * more after {@link #BUDGET_NANOS}: nginx's other events (a static
     * file, a new connection) come in between, as nginx bounds its own
     * handlers' work per event.
     */
    static final int BUDGET = 64;
    static final long BUDGET_NANOS = 1_000_000;
    /** The option a plain JVM needs to reach the builder by reflection. */
    static final String OPENS = "--add-opens=java.base/java.lang=ALL-UNNAMED";

    /** How the JDK's builder is had: from a scheduler, a Thread.Builder. */
    interface Builders {
        Object of(Executor scheduler) throws Throwable;
    }

    /** In a worker: through JNI, no option needed. */
    static final Builders NATIVE = Natives::virtualThreadBuilder;

    /** In a plain JVM: by reflection, with {@link #OPENS}. */
    static final Builders REFLECTION = scheduler -> {
        Constructor<?> k = Class.forName("java.lang.ThreadBuilders$VirtualThreadBuilder")
                .getDeclaredConstructor(Executor.class);
        k.setAccessible(true);
        return k.newInstance(scheduler);
    };

    /** The scheduler of this worker, for {@link #carried}. */
    private static volatile LoopScheduler worker;

    private final ConcurrentLinkedQueue<Runnable> queue = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean signalled = new AtomicBoolean();
    private volatile Runnable waker;
    /** The thread that drains: the event loop (the self-test's caller until then). */
    private final Thread loop = Thread.currentThread();
    /** The builder's factory: a public interface, so no reflection per thread. */
    private final ThreadFactory threads;

    /**
     * Loop only: the threads this scheduler started that are parked or
     * queued, by the continuation the JDK hands it (a thread that ends in
     * its first slice, as most handlers do, is never listed).
     */
    private final Map<Runnable, Carried> known = new IdentityHashMap<>();
    /** Loop only: the thread being started, whose first continuation is about to come. */
    private Carried starting;
    /** Loop only: that first continuation, kept to run at once instead of queued. */
    private boolean startNow;
    private Runnable first;
    /**
     * How many threads wait for work at most (beyond them, a thread whose
     * work ends ends): what a burst of blocked handlers leaves parked.
     */
    static final int IDLE_MAX = 64;
    /**
     * Loop only: the threads that wait for work, parked in {@link #idle},
     * the last one parked on top (its stack is the warmest); none are kept
     * until the self-test passed.
     */
    private final Carried[] idle = new Carried[IDLE_MAX];
    private int idleCount;
    private int idleMax;
    /**
     * The thread whose continuation the loop runs now (null: none), and the
     * number of that slice, for the watchdog, which samples them: written
     * with release stores (plain stores on x86), not volatile ones, and no
     * clock read per slice, since every request pays for them.
     */
    private Carried running;
    private long slice;
    /** Loop only: slices begun so far (each slice's number). */
    private long slices;
    private static final VarHandle RUNNING, SLICE;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            RUNNING = l.findVarHandle(LoopScheduler.class, "running", Carried.class);
            SLICE = l.findVarHandle(LoopScheduler.class, "slice", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * A thread this scheduler started: what it serves now, for the
     * watchdog's warning and Meter; and what the thread runs (it is the
     * thread's Runnable: no wrapper object per thread). The thread is kept
     * between works: once one ends, the thread parks in {@link #idle} until
     * {@link #start} hands it the next (as pool mode's threads wait for
     * theirs), so that a request which does not block costs an unpark and a
     * park of a thread that exists, not a new virtual thread (296 B in the
     * JDK, bench/results/2026-11-27-alloc.md). Its fields are the loop's:
     * the thread runs only while the loop carries it.
     */
    static final class Carried implements Runnable {
        /** Written by the loop before the work's first slice; the watchdog reads it. */
        String what;
        private Runnable work;
        /** Run as the work ends, on the loop (null: nothing). */
        private Runnable onEnd;
        /** Its request's cost, measured slice by slice (null: not measured). */
        Meter meter;
        volatile Thread thread;
        Runnable continuation;
        /** Loop only: in {@link #known}; the thread is over. */
        boolean listed;
        boolean ended;
        /** Where it waits between works (null: {@link #CHILD}, never run). */
        private final LoopScheduler scheduler;

        Carried(String what) {
            this.what = what;
            this.scheduler = null;
        }

        Carried(LoopScheduler scheduler) {
            this.scheduler = scheduler;
        }

        @Override
        public void run() {
            Thread self = Thread.currentThread();
            ClassLoader loader = self.getContextClassLoader();
            try {
                do {
                    try {
                        work.run();
                    } catch (Throwable t) {
                        // a Task answers for its own failures; this thread goes on
                        Log.error("nginx.jvm", "a coloop thread's work failed (" + what + ")", t);
                    } finally {
                        work = null;
                        meter = null;
                        Runnable e = onEnd;
                        onEnd = null;
                        if (e != null) {
                            e.run();
                        }
                    }
                    // what the work changed of its thread goes back, as far as
                    // pool mode's threads do: the interrupt flag (idle() clears
                    // it) and the context class loader; ThreadLocals stay
                    // (docs/handlers.md, "jvm_mode coloop")
                    if (self.getContextClassLoader() != loader) {
                        self.setContextClassLoader(loader);
                    }
                } while (scheduler.idle(this));
            } finally {
                ended = true;
            }
        }
    }

    /** A continuation of a virtual thread a carried thread started (they inherit the scheduler). */
    static final Carried CHILD = new Carried("a virtual thread started by a coloop handler");

    private LoopScheduler(Builders how) throws Throwable {
        Object builder = how.of(this);
        Class<?> b = Class.forName("java.lang.Thread$Builder");
        // one name for all: a numbered one costs a string and a counter per request
        b.getMethod("name", String.class).invoke(builder, "nginx-jvm-coloop");
        threads = (ThreadFactory) b.getMethod("factory").invoke(builder);
    }

    /**
     * On the event loop: the scheduler, after the self-test; {@code why[0]}
     * says why not when it answers null.
     */
    static LoopScheduler open(Runnable waker, String[] why, Builders how) {
        LoopScheduler s;
        try {
            s = new LoopScheduler(how);
        } catch (ClassNotFoundException | NoSuchMethodException | NoClassDefFoundError
                 | NoSuchMethodError e) {
            why[0] = "this JDK (" + System.getProperty("java.version") + ") has no virtual-thread builder"
                    + " with a scheduler of its own (JDK 21 to 25 have one): " + e;
            return null;
        } catch (RuntimeException e) {
            if (how == REFLECTION) {
                // InaccessibleObjectException, a JDK 9+ class: java.lang is not opened to us
                why[0] = "the JVM was started without " + OPENS + " (" + e.getMessage() + ")";
            } else {
                why[0] = "this JDK (" + System.getProperty("java.version") + ") refused the"
                        + " virtual-thread builder: " + e;
            }
            return null;
        } catch (Throwable e) {
            why[0] = "this JDK (" + System.getProperty("java.version") + ") refused the virtual-thread"
                    + " builder: " + e;
            return null;
        }
        why[0] = s.selfTest();
        if (why[0] != null) {
            return null;
        }
        s.waker = waker;
        s.idleMax = IDLE_MAX;
        worker = s;
        return s;
    }

    /**
     * Starts, parks and unparks one thread through this executor, on the
     * calling thread (the loop): null, or what went wrong.
     */
    private String selfTest() {
        AtomicReference<Thread> ran = new AtomicReference<>();
        AtomicBoolean resumed = new AtomicBoolean();
        Thread t;
        try {
            t = start(() -> {
                ran.set(Thread.currentThread());
                LockSupport.park();
                resumed.set(true);
            }, "the self-test", false);
        } catch (Throwable e) {
            return "a thread of the builder did not start: " + e;
        }
        if (queue.size() != 1) {
            return "this JDK (" + System.getProperty("java.version") + ") did not hand the new thread"
                    + " to the scheduler";
        }
        drain();
        if (ran.get() != t || resumed.get()) {
            return "the thread did not run on the scheduler's thread until it parked";
        }
        LockSupport.unpark(t);
        if (queue.size() != 1) {
            return "an unparked thread did not come back through the scheduler";
        }
        drain();
        if (!resumed.get() || !known.isEmpty()) {
            return "the thread did not resume and end on the scheduler's thread";
        }
        return null;
    }

    /**
     * On the event loop: starts {@code work} on a new carried thread, named
     * {@code what} in the watchdog's warnings; with {@code now}, runs it at
     * once until it first parks or ends (the caller is the loop, where it
     * would run anyway), else at the loop's next pass.
     */
    Thread start(Runnable work, String what, boolean now) {
        return start(work, what, now, null);
    }

    /**
     * As above, the slices after the first measured into {@code meter}
     * (the first, run at once, is its caller's: the loop measures it).
     */
    Thread start(Runnable work, String what, boolean now, Meter meter) {
        return start(work, what, now, meter, null);
    }

    /**
     * As above; {@code onEnd} runs on the loop as the work ends, whatever
     * way it does. The work runs on a thread that waits in {@link #idle} if
     * there is one, else on a new one; the thread is answered.
     */
    Thread start(Runnable work, String what, boolean now, Meter meter, Runnable onEnd) {
        Carried c = idleCount > 0 ? idle[--idleCount] : null;
        boolean fresh = c == null;
        if (fresh) {
            c = new Carried(this);
        } else {
            idle[idleCount] = null;
        }
        c.what = what;
        c.meter = meter;
        c.onEnd = onEnd;
        c.work = work;
        starting = c;
        // at once only from the loop's own code: a carried thread that starts
        // one (a subrequest's handler) is a virtual thread, and a continuation
        // runs only on a platform thread (the JDK's unpark hands it over from
        // the carrier, which execute() cannot tell from the loop)
        startNow = now && Thread.currentThread() == loop;
        try {
            if (fresh) {
                Thread t = threads.newThread(c);
                c.thread = t;
                t.start();
            } else {
                // its continuation comes to execute() (unless a stray unpark
                // queued it already: it then runs this work at the next drain)
                LockSupport.unpark(c.thread);
            }
        } catch (RuntimeException | Error e) {
            c.work = null;
            c.onEnd = null;
            c.meter = null;
            if (!fresh) {
                // still parked, with nothing to do: it waits on
                idle[idleCount++] = c;
            }
            throw e;
        } finally {
            starting = null;
            startNow = false;
        }
        Runnable r = first;
        if (r != null) {
            first = null;
            run(r, c);
        }
        return c.thread;
    }

    /**
     * On the loop, on carried thread {@code c} whose work ended: it waits,
     * parked, for {@link #start} to hand it the next; false when
     * {@link #IDLE_MAX} wait already (the thread then ends).
     */
    private boolean idle(Carried c) {
        if (idleCount >= idleMax) {
            return false;
        }
        c.what = "an idle coloop thread";
        idle[idleCount++] = c;
        do {
            // an interrupt meant for its last work (or a stray one) neither
            // reaches the next nor keeps it from parking
            Thread.interrupted();
            LockSupport.park();
        } while (c.work == null);
        Thread.interrupted();
        return true;
    }

    /** Threads waiting for work (tests). */
    int idle() {
        return idleCount;
    }

    /**
     * The worker's scheduler: null when no location of the worker is
     * {@code jvm_mode coloop}, or its JVM cannot have one (they then run as
     * virtual). Its {@link #start} is for the event loop only.
     */
    static LoopScheduler current() {
        return worker;
    }

    /**
     * On the event loop: an executor whose tasks each start a carried thread
     * named {@code what}, and run it at once until it first parks (so a
     * WebSocket listener that does not block costs what it costs on the
     * loop). Its execute is for the event loop only.
     */
    Executor carrying(String what) {
        return work -> start(work, what, true);
    }

    /**
     * Whether the calling thread is one the worker's scheduler started and
     * runs now: it runs on the event loop. (A virtual thread such a thread
     * started runs there too, but is not known: it hops as any thread.)
     */
    static boolean carried() {
        LoopScheduler s = worker;
        // a plain read: on the loop it is the loop's own last write; on any
        // other thread no value can name the calling thread
        Carried c = s == null ? null : s.running;
        return c != null && c.thread == Thread.currentThread();
    }

    /** The watchdog's sample, from its own thread: what the loop runs (null: nothing). */
    Carried running() {
        return (Carried) RUNNING.getAcquire(this);
    }

    /** The watchdog's sample: the number of the slice the loop runs (or ran last). */
    long slice() {
        return (long) SLICE.getAcquire(this);
    }

    /**
     * Any thread: a virtual thread is to run. Queued for the loop, which is
     * woken unless it will look anyway (it is draining, or a wake-up is owed).
     */
    @Override
    public void execute(Runnable continuation) {
        if (Thread.currentThread() == loop && starting != null) {
            starting.continuation = continuation;
            if (startNow) {
                first = continuation;
                return;
            }
            if (!starting.listed) {
                starting.listed = true;
                known.put(continuation, starting);
            }
        }
        queue.add(continuation);
        if (signalled.compareAndSet(false, true)) {
            Runnable w = waker;
            if (w != null) {
                w.run();
            }
        }
    }

    /**
     * On the event loop, when woken: runs continuations within the budget;
     * the loop is woken again for the rest, so that nginx's other events
     * are served in between.
     */
    int drain() {
        signalled.set(false);
        long end = System.nanoTime() + BUDGET_NANOS;
        int n = 0;
        Runnable r;
        try {
            while (n < BUDGET && (r = queue.poll()) != null) {
                n++;
                Carried c = known.get(r);
                if (c != null && c.meter != null) {
                    // measured on the loop, the carrier, slice by slice
                    Runnable continuation = r;
                    c.meter.slice(() -> run(continuation, c));
                } else {
                    run(r, c == null ? CHILD : c);
                }
                if (System.nanoTime() - end > 0) {
                    break;
                }
            }
        } finally {
            // also when the pass threw: the signal is cleared, and what
            // is left would otherwise wait for another thread's wake-up
            if (!queue.isEmpty() && signalled.compareAndSet(false, true)) {
                Runnable w = waker;
                if (w != null) {
                    w.run();
                }
            }
        }
        return n;
    }

    private void run(Runnable continuation, Carried c) {
        // a slice within a slice (a handler's nginx call that ends in
        // another's start) gives the outer one back its place afterwards
        Carried outer = running;
        long outerSlice = slice;
        SLICE.setRelease(this, ++slices);
        RUNNING.setRelease(this, c);
        try {
            continuation.run();
        } catch (Throwable t) {
            Log.error("nginx.jvm", "a coloop continuation failed", t);
        } finally {
            // the outer slice holds the loop still, under its own number
            RUNNING.setRelease(this, outer);
            SLICE.setRelease(this, outerSlice);
        }
        if (c == CHILD) {
            return;
        }
        if (c.ended) {
            if (c.listed) {
                known.remove(continuation);
            }
        } else if (!c.listed) {
            // parked: its continuation will come back through execute()
            c.listed = true;
            known.put(continuation, c);
        }
    }

    /** Continuations waiting for the loop (tests, jvm_status). */
    int waiting() {
        return queue.size();
    }

    /** The self-test in a plain JVM: prints whether this JDK can run jvm_mode coloop. */
    public static void main(String[] args) {
        String[] why = new String[1];
        LoopScheduler s = open(() -> { }, why, REFLECTION);
        System.out.println(s != null ? "coloop: yes (" + System.getProperty("java.version") + ")"
                : "coloop: no: " + why[0]);
        System.exit(s != null ? 0 : 1);
    }
}
