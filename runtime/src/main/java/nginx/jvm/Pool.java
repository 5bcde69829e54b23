package nginx.jvm;

import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * jvm_mode pool's threads: a fixed number of them taking tasks, first in
 * first out, from a bounded queue the event loop submits to.
 *
 * <p>Why not the JDK's ThreadPoolExecutor: its queue is a lock that the
 * loop and every pool thread take, so the loop parked on it whenever a pool
 * thread held it; and every task woke a parked thread (a futex call by the
 * loop, two switches). Profiled on /hello (issue 21), those were most of what
 * a pool request cost the loop more than a loop request. Here:
 *
 * <ul>
 * <li>the loop never waits: the queue is lock-free and its bound a counter;
 * <li>a thread runs tasks until the queue is empty, and only then parks;
 * <li>a submission wakes a thread only when none is awake and looking
 *     ("searching"); a searcher that finds a task while more wait wakes the
 *     next one first, so that handlers which block still run side by side,
 *     each woken thread waking at most one more.
 * </ul>
 *
 * The lost wake-up is excluded by order: a thread going to sleep puts itself
 * on the idle list, stops counting as a searcher, and then looks at the
 * queue once more; a submitter adds to the queue, then reads the searchers'
 * count. Either the submitter sees no searcher (and wakes an idle thread,
 * this one at the latest), or the sleeper sees the task.
 */
final class Pool {
    private final ConcurrentLinkedQueue<Runnable> queue = new ConcurrentLinkedQueue<>();
    /** Tasks queued and not yet taken: jvm_queue's bound, beyond the free threads. */
    private final AtomicInteger waiting = new AtomicInteger();
    /** Threads awake and not running a task. */
    private final AtomicInteger searching = new AtomicInteger();
    /** Parked threads, the most recently parked first (its caches are the warmest). */
    private final ConcurrentLinkedDeque<Runner> idle = new ConcurrentLinkedDeque<>();
    private final int size;
    private final int capacity;
    private final ThreadFactory threads;
    /** Threads started: {@code size}, and those {@link #compensate} added. */
    private final AtomicInteger started = new AtomicInteger();
    /** {@link #compensate}'s thread only: the head of the queue at its last look. */
    private Runnable lastHead;

    private static final int AWAKE = 0, PARKED = 1;

    private final class Runner implements Runnable {
        final AtomicInteger state = new AtomicInteger(AWAKE);
        volatile Thread thread;

        @Override
        public void run() {
            thread = Thread.currentThread();
            for (;;) {
                Runnable task = queue.poll();
                if (task != null) {
                    waiting.decrementAndGet();
                    if (searching.decrementAndGet() == 0 && !queue.isEmpty()) {
                        wakeOne();
                    }
                    try {
                        task.run();
                    } catch (Throwable t) {
                        // a task answers for its own failures (Task does); this
                        // thread must not die of one
                        Log.error("nginx.jvm", "a pool task failed", t);
                    }
                    searching.incrementAndGet();
                    continue;
                }
                state.set(PARKED);
                idle.addFirst(this);
                searching.decrementAndGet();
                if (!queue.isEmpty() && state.compareAndSet(PARKED, AWAKE)) {
                    // a task came as this thread gave up: it takes it
                    idle.remove(this);
                    searching.incrementAndGet();
                    continue;
                }
                while (state.get() == PARKED) {
                    LockSupport.park(this);
                }
            }
        }
    }

    Pool(int size, int capacity, ThreadFactory threads) {
        this.size = size;
        this.capacity = Math.max(1, capacity);
        this.threads = threads;
        // every thread starts awake and searching: it parks when it finds nothing
        searching.set(size);
        started.set(size);
        for (int i = 0; i < size; i++) {
            threads.newThread(new Runner()).start();
        }
    }

    /**
     * For a pool that carries virtual threads, called every so often by one
     * watching thread: when no thread is free and the task at the head of
     * the queue is the one there at the last look, starts one more thread,
     * up to {@code max} in all, and answers true. A virtual thread blocked
     * where it cannot leave its carrier (a native call, a file read) holds
     * it, and with all of them so held the others would wait however long
     * that lasts; the JDK's scheduler adds a carrier for a file read, and
     * this for any cause. (A continuation is resubmitted as the same
     * object: a virtual thread back at the head by then counts as stuck too,
     * which at worst adds a thread while all are busy.) The threads added
     * stay.
     */
    boolean compensate(int max) {
        Runnable head = queue.peek();
        boolean stuck = head != null && head == lastHead && searching.get() == 0 && idle.isEmpty();
        lastHead = stuck ? null : head;
        if (!stuck || started.get() >= max) {
            return false;
        }
        started.incrementAndGet();
        searching.incrementAndGet();
        threads.newThread(new Runner()).start();
        return true;
    }

    /** Threads started so far. */
    int threads() {
        return started.get();
    }

    /** Any thread, the event loop's mostly: false when the queue is full. */
    boolean offer(Runnable task) {
        int n = waiting.incrementAndGet();
        if (n > capacity && n > capacity + free()) {
            waiting.decrementAndGet();
            return false;
        }
        queue.add(task);
        if (searching.get() == 0) {
            wakeOne();
        }
        return true;
    }

    /**
     * Threads that take a task without it waiting behind a busy one: those
     * awake and looking, and those parked (woken by the submission). The
     * queue's bound counts what waits beyond them, so that tasks submitted
     * together while a thread is still waking do not fill the queue in its
     * stead. Read only when the queue looks full: the idle list's size is a
     * walk of it.
     */
    int free() {
        return searching.get() + idle.size();
    }

    /** Takes {@code task} out of the queue if no thread has taken it yet. */
    boolean remove(Runnable task) {
        if (queue.remove(task)) {
            waiting.decrementAndGet();
            return true;
        }
        return false;
    }

    private void wakeOne() {
        Runner r;
        while ((r = idle.pollFirst()) != null) {
            if (r.state.compareAndSet(PARKED, AWAKE)) {
                // counted before it runs, so that no other submitter wakes a second
                searching.incrementAndGet();
                LockSupport.unpark(r.thread);
                return;
            }
        }
    }

    /** Tasks waiting for a thread. */
    int queued() {
        return Math.max(0, waiting.get());
    }

    int size() {
        return size;
    }

    int capacity() {
        return capacity;
    }
}
