package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The client's leaving as Worker drives it: Tasks.abort then Tasks.cancel
 * (or cancel alone when the request completed), on the test's thread
 * standing in for the event loop.
 */
@Timeout(30)
class AbortTest {
    private final Tasks tasks = new Tasks(() -> { });
    private long nextId = 1;

    AbortTest() {
        tasks.configure(1, 4, false);
    }

    /** Submits a handler in pool mode; answers its task. */
    private Task submit(Handler handler) {
        Request request = new RequestBytes().path("/t").request();
        Task t = new Task(nextId++, Tasks.POOL, Wire.PHASE_CONTENT, handler, request, false, tasks);
        request.abort = t;
        assertNull(tasks.submit(t, Tasks.POOL));
        return t;
    }

    private void abort(Task t, boolean interrupt) {
        tasks.abort(t.id, interrupt);
        tasks.cancel(t.id);
    }

    @Test
    void theCallbackRunsOnceOnAnAbortThread() throws Exception {
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger calls = new AtomicInteger();
        AtomicReference<String> thread = new AtomicReference<>();
        CountDownLatch called = new CountDownLatch(1);
        Task t = submit(r -> {
            assertTrue(r.onAbort(() -> {
                calls.incrementAndGet();
                thread.set(Thread.currentThread().getName());
                called.countDown();
            }));
            running.countDown();
            release.await();
            return Response.of(200, "text/plain", "late");
        });
        assertTrue(running.await(5, TimeUnit.SECONDS));
        assertFalse(t.request.isAborted());
        abort(t, false);
        tasks.abort(t.id, false);          // forgotten already: nothing
        assertTrue(called.await(5, TimeUnit.SECONDS));
        assertTrue(t.request.isAborted());
        release.countDown();
        Thread.sleep(100);
        assertEquals(1, calls.get());
        assertTrue(thread.get().startsWith("nginx-jvm-abort"), thread.get());
    }

    @Test
    void theInterruptEndsASleepingHandlerAndStaysWithIt() throws Exception {
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch interrupted = new CountDownLatch(1);
        AtomicReference<Thread> first = new AtomicReference<>();
        Task t = submit(r -> {
            first.set(Thread.currentThread());
            running.countDown();
            try {
                Thread.sleep(30_000);
            } catch (InterruptedException e) {
                interrupted.countDown();
                throw e;
            }
            return null;
        });
        assertTrue(running.await(5, TimeUnit.SECONDS));
        long at = System.nanoTime();
        abort(t, true);
        assertTrue(interrupted.await(5, TimeUnit.SECONDS));
        assertTrue(System.nanoTime() - at < TimeUnit.SECONDS.toNanos(1));
        // the pool's only thread serves the next request undisturbed
        CountDownLatch slept = new CountDownLatch(1);
        AtomicReference<Thread> second = new AtomicReference<>();
        Task next = submit(r -> {
            second.set(Thread.currentThread());
            Thread.sleep(200);
            slept.countDown();
            return Response.of(200, "text/plain", "ok");
        });
        assertTrue(slept.await(5, TimeUnit.SECONDS), "the next task was interrupted");
        assertEquals(first.get(), second.get());
        tasks.cancel(next.id);
    }

    @Test
    void withoutInterruptTheHandlerGoesOnAndALateCallbackRunsAtOnce() throws Exception {
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch lateRan = new CountDownLatch(1);
        AtomicInteger outcome = new AtomicInteger();
        Task t = submit(r -> {
            running.countDown();
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (!r.isAborted() && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            outcome.set(Thread.currentThread().isInterrupted() ? 2 : 1);
            assertTrue(r.onAbort(lateRan::countDown));
            return null;
        });
        assertTrue(running.await(5, TimeUnit.SECONDS));
        abort(t, false);
        assertTrue(lateRan.await(5, TimeUnit.SECONDS));
        assertEquals(1, outcome.get());
    }

    @Test
    void aCompletedRequestRunsNoCallback() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(1);
        Task t = submit(r -> {
            r.onAbort(calls::incrementAndGet);
            done.countDown();
            return Response.of(200, "text/plain", "ok");
        });
        assertTrue(done.await(5, TimeUnit.SECONDS));
        Thread.sleep(50);
        tasks.cancel(t.id);                 // the response was complete
        tasks.abort(t.id, true);            // too late: nothing
        assertFalse(t.request.onAbort(calls::incrementAndGet));
        assertFalse(t.request.isAborted());
        Thread.sleep(100);
        assertEquals(0, calls.get());
    }

    @Test
    void aTaskAbortedBeforeItRanNeverRuns() throws Exception {
        CountDownLatch block = new CountDownLatch(1);
        CountDownLatch blocking = new CountDownLatch(1);
        Task busy = submit(r -> {
            blocking.countDown();
            block.await();
            return null;
        });
        assertTrue(blocking.await(5, TimeUnit.SECONDS));
        AtomicInteger ran = new AtomicInteger();
        Task queued = submit(r -> {
            ran.incrementAndGet();
            return null;
        });
        abort(queued, true);
        block.countDown();
        Thread.sleep(100);
        assertEquals(0, ran.get());
        tasks.cancel(busy.id);
    }

    @Test
    void aRequestOnTheLoopCannotBeAborted() {
        Request r = new RequestBytes().path("/t").request();
        assertFalse(r.onAbort(() -> { }));
        assertFalse(r.isAborted());
    }

    @Test
    void aCallbackThatThrowsDoesNotStopTheNext() throws Exception {
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch second = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Task t = submit(r -> {
            r.onAbort(() -> {
                throw new IllegalStateException("on purpose");
            });
            r.onAbort(second::countDown);
            running.countDown();
            release.await();
            return null;
        });
        assertTrue(running.await(5, TimeUnit.SECONDS));
        abort(t, false);
        assertTrue(second.await(5, TimeUnit.SECONDS));
        release.countDown();
    }

    /**
     * A coloop task kept for the next request (Tasks.recycle, then
     * Task.reuse): the request it served before is over, and nothing it
     * does reaches the next one, even through the task itself (a thread of
     * its that read Request.abort before the loop cut it); the next
     * request's abort runs the next request's callbacks only.
     */
    @Test
    void aTaskKeptForTheNextRequestIsTheNextRequestsOnly() throws Exception {
        Handler handler = r -> Response.of(200, "text/plain", "ok");
        Request first = new RequestBytes().path("/first").request();
        Task t = new Task(nextId++, Tasks.COLOOP, Wire.PHASE_CONTENT, handler, first, false, tasks);
        first.abort = t;
        AtomicInteger firstRan = new AtomicInteger();
        assertTrue(first.onAbort(firstRan::incrementAndGet));
        t.run();                            // answered: its call returned
        assertTrue(t.returned());
        tasks.forget(t);                    // over, not aborted
        Abort stale = t;                    // read by a thread of first's before the cut
        first.abort = null;
        t.release();
        assertNull(t.request);

        Request next = new RequestBytes().path("/next").request();
        t.reuse(nextId++, Tasks.COLOOP, Wire.PHASE_CONTENT, handler, next, false);
        next.abort = t;
        assertFalse(t.returned());
        assertNull(t.response());
        AtomicInteger lateRan = new AtomicInteger();
        assertFalse(stale.onAbort(first, lateRan::incrementAndGet));
        assertFalse(first.onAbort(lateRan::incrementAndGet));
        CountDownLatch nextRan = new CountDownLatch(1);
        assertTrue(next.onAbort(nextRan::countDown));
        assertFalse(next.isAborted());

        t.abort(false);                     // next's client leaves
        assertTrue(nextRan.await(5, TimeUnit.SECONDS));
        assertTrue(next.isAborted());
        assertFalse(first.isAborted());
        assertFalse(stale.aborted(first));
        Thread.sleep(100);
        assertEquals(0, firstRan.get());
        assertEquals(0, lateRan.get());
    }
}
