package nginx.jvm;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A small bounded queue from a producing thread to a consumer, closed by the
 * consumer when it wants no more: a producer blocks while the queue is full
 * (back-pressure) and stops as soon as it is closed, so it never waits for a
 * reader that is gone.
 */
final class Handoff<T> {
    private final BlockingQueue<T> queue;
    private volatile boolean closed;

    Handoff(int capacity) {
        queue = new ArrayBlockingQueue<>(capacity);
    }

    /** Producer: waits for room; false once the queue is closed. */
    boolean put(T item) {
        try {
            while (!closed) {
                if (queue.offer(item, 100, TimeUnit.MILLISECONDS)) {
                    return true;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return false;
    }

    /** Consumer: the next item, or null when none is there yet. */
    T poll() {
        return queue.poll();
    }

    /** Consumer: the next item, waiting for it. */
    T take() throws InterruptedException {
        return queue.take();
    }

    /** Consumer: no more items; what is queued is dropped. */
    void close() {
        closed = true;
        queue.clear();
    }

    boolean isClosed() {
        return closed;
    }
}
