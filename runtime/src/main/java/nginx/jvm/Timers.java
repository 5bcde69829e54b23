package nginx.jvm;

import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Timers in the worker: a task after a delay, or at a fixed interval, on
 * the worker's event loop (where loop-mode handlers run, and may touch what
 * they touch without locks), on a virtual thread the loop carries (as
 * {@code jvm_mode coloop} handlers run), or on a timer thread.
 *
 * <pre>{@code
 * Timers.Timer t = Timers.every(1000, () -> refreshCache());          // on the loop
 * Timers.after(5000, Timers.Where.THREAD, () -> slowCleanup());        // off the loop
 * Timers.every(60000, Timers.Where.COLOOP, () -> refreshFromDb());     // blocks, parking
 * t.cancel();
 * }</pre>
 *
 * <p>A task on the loop must not block (it stalls every connection of the
 * worker); a task that blocks runs on a timer thread ({@link Where#THREAD},
 * two per worker, shared by every such timer: hand long work to an
 * executor of your own), or, in a worker with a {@code jvm_mode coloop}
 * location, on a virtual thread the loop carries ({@link Where#COLOOP}).
 * An exception is logged to the error log; an interval timer goes on, a
 * one-shot timer is over. An interval timer whose last run has not started
 * yet (a {@code COLOOP} one's: not ended yet) when the next is due skips
 * that one (runs never pile up).
 *
 * <p>Timers are the worker's: each worker runs its own (use a {@link
 * SharedDict} {@code add} with a TTL to run something once across
 * workers). They stop when the worker begins a graceful quit (or a reload
 * makes it quit), and a quit never waits for them. Any thread may start or
 * cancel a timer.
 */
public final class Timers {
    /** Where a timer's task runs. */
    public enum Where {
        /** The worker's event loop. */
        LOOP,
        /** One of the worker's timer threads. */
        THREAD,
        /**
         * A virtual thread the event loop carries, as {@code jvm_mode coloop}
         * runs handlers: the task may block in plain style (JDBC, sleep, an
         * HTTP client), parking while the loop serves others, and may call
         * what loop code may. In a worker without a coloop location (or
         * whose JVM cannot have one) it runs on a timer thread instead.
         */
        COLOOP
    }

    private static volatile ScheduledThreadPoolExecutor scheduler;
    private static volatile Runnable waker;
    /** Loop timers that are due, run by {@link #runDue} on the event loop. */
    private static final ConcurrentLinkedQueue<Timer> due = new ConcurrentLinkedQueue<>();
    private static final AtomicBoolean signalled = new AtomicBoolean();

    private Timers() {
    }

    /** Runs {@code task} once after {@code delayMillis}, on the event loop. */
    public static Timer after(long delayMillis, Runnable task) {
        return after(delayMillis, Where.LOOP, task);
    }

    /** Runs {@code task} once after {@code delayMillis}, where said. */
    public static Timer after(long delayMillis, Where where, Runnable task) {
        return start(delayMillis, 0, where, task);
    }

    /** Runs {@code task} every {@code intervalMillis}, the first time after one interval, on the event loop. */
    public static Timer every(long intervalMillis, Runnable task) {
        return every(intervalMillis, Where.LOOP, task);
    }

    /** Runs {@code task} every {@code intervalMillis}, the first time after one interval, where said. */
    public static Timer every(long intervalMillis, Where where, Runnable task) {
        if (intervalMillis <= 0) {
            throw new IllegalArgumentException("a timer's interval must be positive, not " + intervalMillis);
        }
        return start(intervalMillis, intervalMillis, where, task);
    }

    private static Timer start(long delay, long interval, Where where, Runnable task) {
        Objects.requireNonNull(task, "task");
        Objects.requireNonNull(where, "where");
        if (delay < 0) {
            throw new IllegalArgumentException("a timer's delay must not be negative, not " + delay);
        }
        ScheduledThreadPoolExecutor s = scheduler;
        if (s == null) {
            throw new IllegalStateException("timers run only in an nginx worker,"
                    + " and stop when it begins to quit");
        }
        Timer t = new Timer(task, where, interval > 0);
        Runnable tick = where == Where.THREAD ? t::run : t::queue;
        t.future = interval > 0
                ? s.scheduleAtFixedRate(tick, delay, interval, TimeUnit.MILLISECONDS)
                : s.schedule(tick, delay, TimeUnit.MILLISECONDS);
        return t;
    }

    /** A started timer. */
    public static final class Timer {
        private final Runnable task;
        private final Where where;
        private final boolean repeats;
        private final AtomicBoolean queued = new AtomicBoolean();
        private final AtomicInteger runs = new AtomicInteger();
        private volatile boolean cancelled;
        private volatile ScheduledFuture<?> future;

        Timer(Runnable task, Where where, boolean repeats) {
            this.task = task;
            this.where = where;
            this.repeats = repeats;
        }

        /** Stops the timer: it runs no more (a run under way finishes). False when it was over already. */
        public boolean cancel() {
            boolean was = !cancelled && !(isDone());
            cancelled = true;
            ScheduledFuture<?> f = future;
            if (f != null) {
                f.cancel(false);
            }
            return was;
        }

        /** Cancelled, or a one-shot timer that has run. */
        public boolean isDone() {
            return cancelled || (!repeats && runs.get() > 0);
        }

        public Where where() {
            return where;
        }

        /** On the scheduler: due, for the event loop (once, however late the loop is). */
        private void queue() {
            if (!cancelled && queued.compareAndSet(false, true)) {
                due.add(this);
                if (signalled.compareAndSet(false, true)) {
                    Runnable w = waker;
                    if (w != null) {
                        w.run();
                    }
                }
            }
        }

        /** On the event loop, due: a COLOOP task starts its own thread. */
        private void runDue() {
            if (where != Where.COLOOP) {
                run();
                return;
            }
            LoopScheduler coloop = LoopScheduler.current();
            ScheduledThreadPoolExecutor s = scheduler;
            if (coloop == null && s != null) {
                s.execute(this::run);
            } else if (coloop != null) {
                // queued stays set until the run ends: no second run meanwhile
                try {
                    coloop.start(() -> {
                        try {
                            runTask();
                        } finally {
                            queued.set(false);
                        }
                    }, "a timer", true);
                } catch (Throwable e) {
                    queued.set(false);
                    Log.error("nginx.jvm.Timers", "a timer's thread did not start", e);
                }
            } else {
                queued.set(false);
            }
        }

        private void run() {
            queued.set(false);
            runTask();
        }

        private void runTask() {
            if (cancelled) {
                return;
            }
            runs.incrementAndGet();
            try {
                task.run();
            } catch (Throwable e) {
                Log.error("nginx.jvm.Timers", "a timer's task threw"
                        + (repeats ? " (the timer goes on)" : ""), e);
            }
        }
    }

    /**
     * At worker start, on the event loop with nginx's signals blocked: the
     * timer threads, started now so that they inherit that mask.
     */
    static void start(Runnable wake, int threads) {
        // A wake-up owed by an earlier run (due, never run) would swallow every later one.
        due.clear();
        signalled.set(false);
        waker = wake;
        ScheduledThreadPoolExecutor s = new ScheduledThreadPoolExecutor(threads, r -> {
            Thread t = new Thread(r, "nginx-jvm-timer");
            t.setDaemon(true);
            return t;
        });
        s.setRemoveOnCancelPolicy(true);
        s.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        s.prestartAllCoreThreads();
        scheduler = s;
    }

    /** On the event loop: runs the loop timers that are due. */
    static void runDue() {
        signalled.set(false);
        Timer t;
        while ((t = due.poll()) != null) {
            // the signal is cleared: a timer left in the queue would wait for another's wake-up
            try {
                t.runDue();
            } catch (Throwable e) {
                Log.error("nginx.jvm.Timers", "a timer failed", e);
            }
        }
    }

    /** At worker exit: no timer runs any more. */
    static void stop() {
        ScheduledThreadPoolExecutor s = scheduler;
        scheduler = null;
        if (s != null) {
            s.shutdownNow();
        }
        due.clear();
        signalled.set(false);
    }
}
