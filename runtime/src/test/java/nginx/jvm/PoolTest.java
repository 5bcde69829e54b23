package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** jvm_mode pool's queue and threads (Pool), without nginx. */
@Timeout(60)
class PoolTest {
    private static final ThreadFactory DAEMONS = r -> {
        Thread t = new Thread(r, "pool-test");
        t.setDaemon(true);
        return t;
    };

    /** A task that holds its thread until the latch opens. */
    private static Runnable hold(CountDownLatch started, CountDownLatch open) {
        return () -> {
            started.countDown();
            try {
                open.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
    }

    @Test
    void tasksSubmittedTogetherToAParkedThreadTakeNoPlaceOfTheQueue() throws Exception {
        // jvm_pool_size 1, jvm_queue 1: one task runs, one waits, whatever
        // the timing of the parked thread's wake-up (when both come before it
        // takes the first, the first is not counted against the queue; that
        // timing is not forced here: tests/test_offloop.py's full queue met it)
        Pool pool = new Pool(1, 1, DAEMONS);
        for (int i = 0; i < 1000 && pool.free() != 1; i++) {
            Thread.sleep(1);
        }
        Thread.sleep(50);                   // parked, not just looking
        CountDownLatch started = new CountDownLatch(1), open = new CountDownLatch(1);
        CountDownLatch second = new CountDownLatch(1);
        assertTrue(pool.offer(hold(started, open)));
        assertTrue(pool.offer(second::countDown));
        assertFalse(pool.offer(() -> { }));
        assertTrue(started.await(10, TimeUnit.SECONDS));
        assertFalse(pool.offer(() -> { }));
        open.countDown();
        assertTrue(second.await(10, TimeUnit.SECONDS));
    }

    @Test
    void oneThreadRunsTheQueueFirstInFirstOut() throws Exception {
        Pool pool = new Pool(1, 100, DAEMONS);
        CountDownLatch started = new CountDownLatch(1), open = new CountDownLatch(1);
        assertTrue(pool.offer(hold(started, open)));
        assertTrue(started.await(10, TimeUnit.SECONDS));
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(50);
        for (int i = 0; i < 50; i++) {
            int n = i;
            assertTrue(pool.offer(() -> {
                order.add(n);
                done.countDown();
            }));
        }
        assertEquals(50, pool.queued());
        open.countDown();
        assertTrue(done.await(10, TimeUnit.SECONDS));
        for (int i = 0; i < 50; i++) {
            assertEquals(i, order.get(i));
        }
        assertEquals(0, pool.queued());
    }

    @Test
    void aFullQueueRefusesAndARemovedTaskFreesItsPlace() throws Exception {
        Pool pool = new Pool(1, 3, DAEMONS);
        CountDownLatch started = new CountDownLatch(1), open = new CountDownLatch(1);
        pool.offer(hold(started, open));
        assertTrue(started.await(10, TimeUnit.SECONDS));
        AtomicInteger ran = new AtomicInteger();
        Runnable a = ran::incrementAndGet, b = ran::incrementAndGet, c = ran::incrementAndGet;
        assertTrue(pool.offer(a));
        assertTrue(pool.offer(b));
        assertTrue(pool.offer(c));
        assertFalse(pool.offer(ran::incrementAndGet), "the queue holds 3");
        assertTrue(pool.remove(b));
        assertFalse(pool.remove(b), "removed once");
        CountDownLatch last = new CountDownLatch(1);
        assertTrue(pool.offer(last::countDown), "b's place is free");
        open.countDown();
        assertTrue(last.await(10, TimeUnit.SECONDS));
        assertEquals(2, ran.get(), "a and c ran, b never");
    }

    @Test
    void aThrowingTaskLeavesItsThreadForTheNext() throws Exception {
        Pool pool = new Pool(1, 10, DAEMONS);
        pool.offer(() -> {
            throw new IllegalStateException("a task failing on purpose");
        });
        CountDownLatch next = new CountDownLatch(1);
        pool.offer(next::countDown);
        assertTrue(next.await(10, TimeUnit.SECONDS));
    }

    @Test
    void blockingTasksRunSideBySideOnEveryThread() throws Exception {
        Pool pool = new Pool(8, 100, DAEMONS);
        for (int round = 0; round < 20; round++) {
            // eight tasks that end only when all eight run at once
            CountDownLatch together = new CountDownLatch(8), done = new CountDownLatch(8);
            for (int i = 0; i < 8; i++) {
                assertTrue(pool.offer(() -> {
                    together.countDown();
                    try {
                        if (together.await(10, TimeUnit.SECONDS)) {
                            done.countDown();
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }));
            }
            assertTrue(done.await(15, TimeUnit.SECONDS), "round " + round + ": not all eight ran at once");
        }
    }

    /**
     * No task is left in the queue with every thread asleep: bursts from a
     * producer (as the loop submits) and from several, with pauses that let
     * the threads park between them, each task counted once.
     */
    @Test
    void noTaskIsLostBetweenThreadsThatParkAndSubmittersThatDoNotWake() throws Exception {
        Pool pool = new Pool(4, 1_000_000, DAEMONS);
        AtomicLong ran = new AtomicLong(), offered = new AtomicLong();
        int producers = 3, bursts = 400, burst = 50;
        Thread[] ps = new Thread[producers];
        for (int p = 0; p < producers; p++) {
            int seed = p;
            ps[p] = new Thread(() -> {
                java.util.Random random = new java.util.Random(seed);
                for (int i = 0; i < bursts; i++) {
                    for (int j = 0; j < 1 + random.nextInt(burst); j++) {
                        while (!pool.offer(ran::incrementAndGet)) {
                            Thread.onSpinWait();
                        }
                        offered.incrementAndGet();
                    }
                    if (random.nextInt(4) == 0) {
                        // long enough for the threads to find nothing and park
                        try {
                            Thread.sleep(0, 200_000);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                }
            });
            ps[p].start();
        }
        for (Thread p : ps) {
            p.join();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while ((pool.queued() > 0 || ran.get() < offered.get()) && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(0, pool.queued(), "tasks left in the queue with the threads asleep");
        // a last one, after everything has parked, runs too
        Thread.sleep(50);
        CountDownLatch last = new CountDownLatch(1);
        pool.offer(last::countDown);
        assertTrue(last.await(10, TimeUnit.SECONDS), "a submission to a parked pool woke nobody");
        assertEquals(offered.get(), ran.get(), "every task ran once");
    }

    /**
     * The narrowest window: each task is submitted as the only thread ends
     * the one before and goes to sleep, the way a loop submits the next
     * request the moment the last one answered.
     */
    @Test
    void aTaskSubmittedAsTheLastThreadParksIsRun() throws Exception {
        Pool pool = new Pool(1, 10, DAEMONS);
        AtomicLong ran = new AtomicLong();
        for (int i = 0; i < 200_000; i++) {
            assertTrue(pool.offer(ran::incrementAndGet));
            // spun, not slept: the next offer comes within nanoseconds
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (ran.get() <= i) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("task " + i + " stranded in the queue");
                }
                Thread.onSpinWait();
            }
        }
    }

    /**
     * Virtual threads' carriers: with its only thread held, a waiting task
     * gets a thread of its own at the second look (the first only notes
     * the head), never while a thread is free, and never beyond the bound.
     */
    @Test
    void compensateAddsAThreadOnlyWhenAllAreHeldAndTheHeadWaits() throws Exception {
        Pool pool = new Pool(1, Integer.MAX_VALUE / 2, DAEMONS);
        for (int i = 0; i < 1000 && pool.free() != 1; i++) {
            Thread.sleep(1);
        }
        assertFalse(pool.compensate(2), "nothing waits");
        CountDownLatch started = new CountDownLatch(1), open = new CountDownLatch(1);
        assertTrue(pool.offer(hold(started, open)));
        assertTrue(started.await(10, TimeUnit.SECONDS));
        assertFalse(pool.compensate(2), "nothing waits while the one thread is held");
        CountDownLatch second = new CountDownLatch(1), open2 = new CountDownLatch(1);
        CountDownLatch third = new CountDownLatch(1);
        assertTrue(pool.offer(hold(second, open2)));
        assertTrue(pool.offer(third::countDown));
        assertFalse(pool.compensate(2), "the first look at a waiting head only notes it");
        assertTrue(pool.compensate(2), "the head waited since the last look");
        assertEquals(2, pool.threads());
        assertTrue(second.await(10, TimeUnit.SECONDS), "the added thread takes the head");
        // both threads held, the third task waits: the bound stops a third thread
        assertFalse(pool.compensate(2));
        assertFalse(pool.compensate(2));
        assertEquals(2, pool.threads());
        open.countDown();
        open2.countDown();
        assertTrue(third.await(10, TimeUnit.SECONDS));
    }
}
