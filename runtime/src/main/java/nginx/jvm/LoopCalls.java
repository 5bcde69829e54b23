package nginx.jvm;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * Work that only the event loop may do (reading a request's nginx
 * variables, starting a subrequest), asked for from any thread. On the loop
 * it runs at once; elsewhere it is queued, the loop is woken through the C
 * module's eventfd and runs it before it looks at tasks, and the caller
 * waits for the result. Each caller waits for its own call, so the queue
 * never holds more calls than there are waiting threads.
 */
final class LoopCalls {
    /** How long a JVM thread waits for the loop: far beyond any healthy loop's delay. */
    private static final long WAIT_SECONDS = 30;

    private static final ConcurrentLinkedQueue<Runnable> calls = new ConcurrentLinkedQueue<>();
    private static volatile Thread loop;
    private static volatile Runnable waker;

    private LoopCalls() {
    }

    /** On the event loop, once at start. */
    static void bind(Runnable wake) {
        loop = Thread.currentThread();
        waker = wake;
    }

    /** The event loop's thread's id (JFR names threads by it), or -1 before the start. */
    static long loopThreadId() {
        Thread l = loop;
        return l == null ? -1 : l.getId();
    }

    /** On the event loop's own thread: code here must never block. */
    static boolean onLoop() {
        return Thread.currentThread() == loop;
    }

    /**
     * Refuses a call that waits (for a network peer, a lock held elsewhere)
     * on the event loop's own thread, where it would hold every request of
     * the worker: the one place that says so, for every such call.
     */
    static void refuseOnLoop(String what, String instead) {
        if (onLoop()) {
            throw new IllegalStateException(what + " would block the event loop: " + instead);
        }
    }

    /**
     * On the event loop's thread or a virtual thread it carries (jvm_mode
     * coloop, which runs only while the loop runs it): nginx may be called
     * directly, no hop needed. Such a thread may block (it parks).
     */
    static boolean direct() {
        return Thread.currentThread() == loop || LoopScheduler.carried();
    }

    /** Runs {@code work} on the event loop and answers its result (or throws what it threw). */
    static <T> T call(Supplier<T> work) {
        if (direct()) {
            return work.get();
        }
        Runnable wake = waker;
        if (wake == null) {
            throw new IllegalStateException("not in an nginx worker");
        }
        CompletableFuture<T> f = new CompletableFuture<>();
        post(() -> {
            try {
                f.complete(work.get());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        try {
            return f.get(WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException) {
                throw (RuntimeException) c;
            }
            if (c instanceof Error) {
                throw (Error) c;
            }
            throw new IllegalStateException(c);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the event loop", e);
        } catch (TimeoutException e) {
            throw new IllegalStateException("the event loop did not answer within " + WAIT_SECONDS + " s");
        }
    }

    /** Queues {@code work} for the event loop without waiting; any thread. */
    static void post(Runnable work) {
        calls.add(work);
        Runnable wake = waker;
        if (wake != null) {
            wake.run();
        }
    }

    /** Event loop, when woken: runs what was asked. */
    static void run() {
        Runnable r;
        while ((r = calls.poll()) != null) {
            try {
                r.run();
            } catch (Throwable t) {
                System.err.println(Failure.describe("jvm: a call on the event loop failed", t));
            }
        }
    }
}
