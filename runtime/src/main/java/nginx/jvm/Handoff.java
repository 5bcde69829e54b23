package nginx.jvm;

import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A small bounded queue from a producing thread to a consumer, closed by the
 * consumer when it wants no more: a producer blocks while the queue is full
 * (back-pressure) and stops as soon as it is closed, so it never waits for a
 * reader that is gone.
 *
 * <p>A producer that must not wait (the event loop, which is also what
 * drains the queue) {@link #offer}s instead: beyond a full queue it may add
 * up to {@code slackBytes} of byte arrays, so that a burst reaches a client
 * that reads while one that does not costs bounded memory.
 */
final class Handoff<T> {
    private final int capacity;
    private final long slackBytes;
    private final ArrayDeque<T> queue = new ArrayDeque<>();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private long bytes;
    private volatile boolean closed;
    /** Runs once when the queue has room again or is closed ({@link #room}). */
    private Runnable whenRoom;

    Handoff(int capacity) {
        this(capacity, 0);
    }

    Handoff(int capacity, long slackBytes) {
        this.capacity = capacity;
        this.slackBytes = slackBytes;
    }

    /** A byte array's length and what keeping it costs besides; anything else (an end) nothing. */
    private static long weight(Object item) {
        return item instanceof byte[] ? ((byte[]) item).length + 64 : 0;
    }

    /** Producer: waits for room; false once the queue is closed. */
    boolean put(T item) {
        lock.lock();
        try {
            while (!closed && queue.size() >= capacity) {
                changed.await(100, TimeUnit.MILLISECONDS);
            }
            return !closed && add(item);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Producer that never waits: false when the queue is closed, or full and
     * its byte arrays already {@code slackBytes} (an item that is not one,
     * an end, always fits).
     */
    boolean offer(T item) {
        lock.lock();
        try {
            if (closed) {
                return false;
            }
            long w = weight(item);
            if (queue.size() >= capacity && w > 0 && bytes + w > slackBytes) {
                return false;
            }
            return add(item);
        } finally {
            lock.unlock();
        }
    }

    private boolean add(T item) {
        queue.add(item);
        bytes += weight(item);
        changed.signalAll();
        return true;
    }

    /**
     * Producer that must not wait (a servlet's non-blocking writes): true
     * when a {@link #put} would not wait now (the queue has room, or is
     * closed); otherwise false, and {@code callback} runs once when it
     * would, on the consumer's thread (the event loop): it must only hand
     * work to another thread. A later call replaces an earlier callback; a
     * null one only asks.
     */
    boolean room(Runnable callback) {
        lock.lock();
        try {
            if (closed || queue.size() < capacity) {
                return true;
            }
            if (callback != null) {
                whenRoom = callback;
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    /** Under the lock: the callback {@link #room} left, taken when there is room now. */
    private Runnable roomNow() {
        Runnable r = whenRoom;
        if (r != null && (closed || queue.size() < capacity)) {
            whenRoom = null;
            return r;
        }
        return null;
    }

    /** Consumer: the next item, or null when none is there yet. */
    T poll() {
        Runnable room = null;
        lock.lock();
        try {
            T item = queue.poll();
            if (item != null) {
                bytes -= weight(item);
                changed.signalAll();
                room = roomNow();
            }
            return item;
        } finally {
            lock.unlock();
            if (room != null) {
                room.run();
            }
        }
    }

    /** Consumer: the next item, waiting for it. */
    T take() throws InterruptedException {
        Runnable room = null;
        lock.lock();
        try {
            T item;
            while ((item = queue.poll()) == null) {
                changed.await();
            }
            bytes -= weight(item);
            changed.signalAll();
            room = roomNow();
            return item;
        } finally {
            lock.unlock();
            if (room != null) {
                room.run();
            }
        }
    }

    /** Consumer: no more items; what is queued is dropped. */
    void close() {
        Runnable room;
        lock.lock();
        try {
            closed = true;
            queue.clear();
            bytes = 0;
            changed.signalAll();
            room = roomNow();
        } finally {
            lock.unlock();
        }
        if (room != null) {
            // the producer learns on its next write that nobody reads
            room.run();
        }
    }

    boolean isClosed() {
        return closed;
    }
}
