package nginx.jvm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A streamed body produced on a JVM thread and drained by the event loop
 * through a small bounded queue: when the client is slow the queue fills and
 * the producer blocks (back-pressure); when the client is gone the producer's
 * next piece fails and it stops.
 */
final class AsyncBody extends BodySource {
    static final int WAIT = -2;

    private static final int PIECE = 16 * 1024;
    private static final Object END = new Object();

    private final BodySource source;
    private final Task task;
    private final Tasks tasks;
    private final BlockingQueue<Object> queue = new ArrayBlockingQueue<>(4);
    private volatile boolean closed;
    private boolean ended;

    AsyncBody(BodySource source, Task task, Tasks tasks) {
        this.source = source;
        this.task = task;
        this.tasks = tasks;
    }

    /** The producer's side: runs on a JVM thread until the body ends or the client goes. */
    void produce() {
        ByteBuffer piece = ByteBuffer.allocate(PIECE);
        try {
            while (!closed) {
                int n = source.fill(piece);
                if (n < 0) {
                    put(END);
                    break;
                }
                byte[] bytes = new byte[n];
                piece.get(0, bytes, 0, n);
                if (!put(bytes)) {
                    break;
                }
            }
        } catch (Throwable t) {
            put(t);
        } finally {
            closeSource();
        }
    }

    void closeSource() {
        try {
            source.close();
        } catch (Exception ignored) {
            // the body is over either way
        }
    }

    private boolean put(Object item) {
        try {
            while (!closed) {
                if (queue.offer(item, 100, TimeUnit.MILLISECONDS)) {
                    tasks.ready(task);
                    return true;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return false;
    }

    /** The event loop's side: the next piece, {@link #WAIT} if none is ready yet, -1 at the end. */
    @Override
    int fill(ByteBuffer out) throws IOException {
        if (ended) {
            return -1;
        }
        Object item = queue.poll();
        if (item == null) {
            return WAIT;
        }
        if (item == END) {
            ended = true;
            return -1;
        }
        if (item instanceof Throwable) {
            ended = true;
            throw new IOException("the response body failed", (Throwable) item);
        }
        byte[] bytes = (byte[]) item;
        out.put(0, bytes, 0, bytes.length);
        return bytes.length;
    }

    @Override
    void close() {
        closed = true;
        queue.clear();
    }
}
