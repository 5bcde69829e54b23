package nginx.jvm;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A streamed body produced on a JVM thread and drained by the event loop
 * through a small bounded queue: when the client is slow the queue fills and
 * the producer blocks (back-pressure); when the client is gone the producer's
 * next piece fails and it stops.
 */
final class AsyncBody extends BodySource {
    private static final int PIECE = 16 * 1024;
    private static final Object END = new Object();

    private final BodySource source;
    private final Task task;
    private final Tasks tasks;
    private final Handoff<Object> queue = new Handoff<>(4);
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
            while (!queue.isClosed()) {
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
        if (!queue.put(item)) {
            return false;
        }
        tasks.ready(task);
        return true;
    }

    /** The event loop's side: the next piece, {@link Wire#NEXT_WAIT} if none is ready yet, -1 at the end. */
    @Override
    int fill(ByteBuffer out) throws IOException {
        if (ended) {
            return Wire.NEXT_END;
        }
        Object item = queue.poll();
        if (item == null) {
            return Wire.NEXT_WAIT;
        }
        if (item == END) {
            ended = true;
            return Wire.NEXT_END;
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
        queue.close();
    }
}
