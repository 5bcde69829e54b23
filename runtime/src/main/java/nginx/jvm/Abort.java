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
 *
 * <p>It belongs to one request at a time, its {@link #owner}: a coloop
 * task that answered in its first slice is kept for the next request
 * ({@link Tasks#recycle}), and {@link #renew} then gives it to that one. A
 * request's own calls ({@link #onAbort}, {@link #aborted}) name it, so that
 * those of a request that is over (its handler kept it, or a thread of its
 * read {@link Request#abort} just before the loop cut it) never register
 * with the next request, nor see it aborted.
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

    /**
     * The request it belongs to now (Request passes itself). Written under
     * the lock before {@link #end} goes back to LIVE, so that a thread that
     * reads end first and then this sees a later request's owner along
     * with a later request's end; written without it only once ended
     * (COMPLETED: every call answers false, whatever it reads here).
     */
    private Object owner;

    // guarded by this
    private List<Runnable> registered;
    private Thread handlerThread;
    /** This abort interrupted handlerThread: the flag is cleared before the thread moves on. */
    private boolean interruptSent;

    Abort(Object owner) {
        this.owner = owner;
    }

    /** Where the callbacks run: threads that may block, never the event loop. */
    abstract Executor callbacks();

    /**
     * Loop, once ended and not aborted ({@link #complete}): it is
     * {@code owner}'s from now on, LIVE, with no callback and no handler
     * thread of the last request's; none of its calls reach the new owner.
     */
    final void renew(Object owner) {
        synchronized (this) {
            this.owner = owner;
            registered = null;
            handlerThread = null;
            interruptSent = false;
            end = LIVE;
        }
    }

    /** Loop, once completed: it keeps nothing of its last request until {@link #renew}. */
    final void disown() {
        owner = null;
    }

    /**
     * Whether the calling thread is the one running the handler's call now
     * (between {@link #enter} and {@link #leave}). Read without the lock:
     * only the handler's thread writes itself here, and its own writes are
     * in order for it; any other thread reads another thread or null.
     */
    final boolean onHandlerThread() {
        return handlerThread == Thread.currentThread();
    }

    /** Any thread: see {@link Request#onAbort}; {@code from}: the request asking. */
    final boolean onAbort(Object from, Runnable callback) {
        Objects.requireNonNull(callback, "callback");
        synchronized (this) {
            int e = end;
            if (e == COMPLETED || owner != from) {
                // over, or it serves another request now: from's is over
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

    /** Any thread: whether request {@code from}'s client left; end read first (see {@link #owner}). */
    final boolean aborted(Object from) {
        return end == ABORTED && owner == from;
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
