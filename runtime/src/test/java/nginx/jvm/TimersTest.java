package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Timers with a stand-in event loop: this test's thread runs what is due when woken. */
class TimersTest {
    private final Semaphore woken = new Semaphore(0);

    @BeforeEach
    void start() {
        Timers.start(woken::release, 2);
    }

    @AfterEach
    void stop() {
        Timers.stop();
    }

    /** The event loop: waits to be woken, then runs the due timers. */
    private void loop(long millis) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        long left;
        while ((left = end - System.nanoTime()) > 0) {
            if (woken.tryAcquire(left, TimeUnit.NANOSECONDS)) {
                Timers.runDue();
            }
        }
    }

    @Test
    void oneShotRunsOnceOnTheLoop() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        AtomicReference<Thread> on = new AtomicReference<>();
        Timers.Timer t = Timers.after(30, () -> {
            runs.incrementAndGet();
            on.set(Thread.currentThread());
        });
        assertFalse(t.isDone());
        loop(200);
        assertEquals(1, runs.get());
        assertEquals(Thread.currentThread(), on.get());
        assertTrue(t.isDone());
        assertFalse(t.cancel(), "over already");
    }

    @Test
    void intervalGoesOnUntilCancelled() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        Timers.Timer t = Timers.every(20, runs::incrementAndGet);
        loop(300);
        int n = runs.get();
        assertTrue(n >= 5 && n <= 16, "runs: " + n);
        assertTrue(t.cancel());
        loop(100);
        int after = runs.get();
        loop(100);
        assertEquals(after, runs.get());
        assertTrue(t.isDone());
    }

    @Test
    void anExceptionIsLoggedAndTheIntervalGoesOn() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        Timers.Timer t = Timers.every(20, () -> {
            runs.incrementAndGet();
            throw new IllegalStateException("timer-boom");
        });
        loop(200);
        assertTrue(runs.get() >= 3, "runs: " + runs.get());
        t.cancel();
    }

    @Test
    void anExceptionThatCannotBePrintedIsLoggedAndTheOthersRun() throws Exception {
        // its getMessage() throws: logging it threw, which took the loop's
        // pass over its timers with it
        AtomicInteger runs = new AtomicInteger(), others = new AtomicInteger();
        Timers.Timer t = Timers.every(20, () -> {
            runs.incrementAndGet();
            throw new WorkerTest.Unprintable();
        });
        Timers.Timer o = Timers.every(20, others::incrementAndGet);
        loop(200);
        assertTrue(runs.get() >= 3, "runs: " + runs.get());
        assertTrue(others.get() >= 3, "others: " + others.get());
        t.cancel();
        o.cancel();
    }

    @Test
    void threadTimersRunOffTheLoop() throws Exception {
        AtomicReference<Thread> on = new AtomicReference<>();
        Semaphore ran = new Semaphore(0);
        Timers.after(10, Timers.Where.THREAD, () -> {
            on.set(Thread.currentThread());
            ran.release();
        });
        assertTrue(ran.tryAcquire(2, TimeUnit.SECONDS));
        assertNotEquals(Thread.currentThread(), on.get());
        assertTrue(on.get().getName().startsWith("nginx-jvm-timer"));
        assertTrue(on.get().isDaemon());
    }

    @Test
    void aSlowLoopDoesNotPileUpRuns() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        Timers.Timer t = Timers.every(5, runs::incrementAndGet);
        Thread.sleep(200);          // the loop is busy: 40 ticks come due
        loop(20);
        assertTrue(runs.get() <= 6, "runs: " + runs.get());
        t.cancel();
    }

    @Test
    void stopEndsEveryTimer() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        Timers.every(10, Timers.Where.THREAD, runs::incrementAndGet);
        Thread.sleep(60);
        Timers.stop();
        Thread.sleep(30);
        int n = runs.get();
        Thread.sleep(60);
        assertEquals(n, runs.get());
        assertThrows(IllegalStateException.class, () -> Timers.after(1, () -> { }));
    }

    @Test
    void aWakeLeftOwingByAStopIsNotCarriedIntoTheNextStart() throws Exception {
        Timers.after(1, () -> { });
        Thread.sleep(50);           // due and signalled, and the loop never runs it
        Timers.stop();
        Timers.start(woken::release, 2);
        AtomicInteger runs = new AtomicInteger();
        Timers.after(10, runs::incrementAndGet);
        loop(200);
        assertEquals(1, runs.get());
    }

    @Test
    void badArguments() {
        assertThrows(IllegalArgumentException.class, () -> Timers.every(0, () -> { }));
        assertThrows(IllegalArgumentException.class, () -> Timers.after(-1, () -> { }));
        assertThrows(NullPointerException.class, () -> Timers.after(1, null));
    }
}
