package nginx.jvm;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Whether a task's client left before its response was complete, and what
 * to do about it: the callbacks of {@link Request#onAbort} and the thread
 * to interrupt (docs/handlers.md, "When the client leaves"). The event loop
 * ends it once, as aborted ({@link #abort}) or completed ({@link #complete});
 * callbacks registered before an abort run once, on the executor's threads
 * (never the event loop's), in the order they were registered; those
 * registered after an abort run at once there, those after completion
 * never. It uses nothing of the runtime but the executor its subclass
 * gives, so that {@link Request} can hold it without reaching into the
 * core. Its one subclass is {@link Task}: a task is its own request's
 * abort, one object per request less (bench/results/2026-11-27-alloc.md).
 */
abstract class Abort {
    private static final System.Logger LOG = System.getLogger("nginx.jvm");
    private static final int LIVE = 0, ABORTED = 1, COMPLETED = 2;

    /** Its own lock ({@code synchronized (this)}): no object of its own per request. */
    /**
     * LIVE until the loop ends it. Changed from LIVE under the lock, except
     * by {@link #complete}: the loop calls that for every request, while the
     * handler's thread may still hold the lock in {@link #leave}, and the
     * loop must not wait for it (profiled: the loop parked there).
     */
    private volatile int end = LIVE;
    private static final VarHandle END;

    static {
        try {
            END = MethodHandles.lookup().findVarHandle(Abort.class, "end", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    // guarded by this
    private List<Runnable> registered;
    private Thread handlerThread;
    /** This abort interrupted handlerThread: the flag is cleared before the thread moves on. */
    private boolean interruptSent;

    /** Where the callbacks run: threads that may block, never the event loop. */
    abstract Executor callbacks();

    /**
     * Whether the calling thread is the one running the handler's call now
     * (between {@link #enter} and {@link #leave}). Read without the lock:
     * only the handler's thread writes itself here, and its own writes are
     * in order for it; any other thread reads another thread or null.
     */
    final boolean onHandlerThread() {
        return handlerThread == Thread.currentThread();
    }

    /** Any thread: see {@link Request#onAbort}. */
    final boolean onAbort(Runnable callback) {
        Objects.requireNonNull(callback, "callback");
        synchronized (this) {
            int e = end;
            if (e == COMPLETED) {
                return false;
            }
            if (e == LIVE) {
                if (registered == null) {
                    registered = new ArrayList<>(2);
                }
                registered.add(callback);
                return true;
            }
        }
        // the client has left already: at once, on a callback thread
        runCallbacks(List.of(callback));
        return true;
    }

    final boolean aborted() {
        return end == ABORTED;
    }

    /**
     * The handler's call begins on this thread, which an abort may interrupt
     * from now on; false when the request is over already (nothing to run).
     */
    final boolean enter() {
        synchronized (this) {
            if (end != LIVE) {
                return false;
            }
            handlerThread = Thread.currentThread();
            return true;
        }
    }

    /** The handler's call is over: no interrupt reaches the thread's next work. */
    final void leave() {
        synchronized (this) {
            handlerThread = null;
            if (interruptSent) {
                interruptSent = false;
                Thread.interrupted();
            }
        }
    }

    /** Event loop: the client left; interrupts the handler's call if asked. */
    final void abort(boolean interrupt) {
        List<Runnable> todo;
        synchronized (this) {
            if (!END.compareAndSet(this, LIVE, ABORTED)) {
                return;
            }
            todo = registered;
            registered = null;
            if (interrupt && handlerThread != null) {
                interruptSent = true;
                handlerThread.interrupt();
            }
        }
        if (todo != null) {
            runCallbacks(todo);
        }
    }

    /**
     * Event loop: the request is over and was not aborted: the callbacks are
     * dropped (a callback registered as this happens is dropped too: it came
     * before the end). Without the lock, see {@link #end}.
     */
    final void complete() {
        END.compareAndSet(this, LIVE, COMPLETED);
    }

    private void runCallbacks(List<Runnable> todo) {
        callbacks().execute(() -> {
            for (Runnable c : todo) {
                try {
                    c.run();
                } catch (Throwable t) {
                    LOG.log(Level.ERROR, "an abort callback threw", t);
                }
                // a callback's interrupt stays its own
                Thread.interrupted();
            }
        });
    }
}
