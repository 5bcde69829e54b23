package nginx.jvm;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A streamed body produced on a JVM thread and drained by the event loop
 * through a small bounded queue: when the client is slow the queue fills and
 * the producer blocks (back-pressure); when the client is gone the producer's
 * next piece fails and it stops.
 *
 * <p>The producer either pulls a {@link BodySource} (a stream, a seq) or is a
 * {@link BodyWriter} writing to {@link #output()}. A writer's body ends when
 * {@code writeTo} returns, or, for an asynchronous handler, when the writer
 * closes the stream: it may go on writing from any thread after
 * {@code writeTo} returned (server-sent events, long polling). Each write is
 * handed to the client at once.
 */
final class AsyncBody extends BodySource {
    private static final int PIECE = BodyWriter.Stream.PIECE;
    /** The pause after a source gave only empty pieces, so that it does not spin a core. */
    private static final long EMPTY_PAUSE_NANOS = 1_000_000;
    private static final Object END = new Object();

    private final BodySource source;
    private final BodyWriter writer;
    private final boolean endsOnReturn;
    private final Task task;
    private final Tasks tasks;
    /**
     * Four pieces for a producer that may wait; a writer on the event loop
     * (a topic's subscriber, a loop timer), which must not, may go 1 MB
     * beyond, so that a burst reaches a client that reads.
     */
    private final Handoff<Object> queue = new Handoff<>(4, 1024 * 1024);
    private boolean ended;

    /** A body pulled from {@code source} on a JVM thread. */
    AsyncBody(BodySource source, Task task, Tasks tasks) {
        this.source = source;
        this.writer = null;
        this.endsOnReturn = true;
        this.task = task;
        this.tasks = tasks;
    }

    /** A body {@code writer} writes; it ends when writeTo returns if {@code endsOnReturn}, else at close. */
    AsyncBody(BodyWriter writer, boolean endsOnReturn, Task task, Tasks tasks) {
        this.source = null;
        this.writer = writer;
        this.endsOnReturn = endsOnReturn;
        this.task = task;
        this.tasks = tasks;
    }

    /** The producer's side: runs on a JVM thread until the body ends or the client goes. */
    void produce() {
        if (writer != null) {
            write();
            return;
        }
        ByteBuffer piece = ByteBuffer.allocate(PIECE);
        try {
            while (!queue.isClosed()) {
                int n = source.fill(piece);
                if (n == Wire.NEXT_EMPTY) {
                    // nothing yet: look again shortly, and stop once the client left
                    LockSupport.parkNanos(EMPTY_PAUSE_NANOS);
                    continue;
                }
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

    private void write() {
        Output out = new Output();
        try {
            writer.writeTo(out);
            if (endsOnReturn) {
                out.close();
            }
        } catch (Throwable t) {
            out.fail(t);
        }
    }

    void closeSource() {
        try {
            if (source != null) {
                source.close();
            }
        } catch (Exception ignored) {
            // the body is over either way
        }
    }

    private boolean put(Object item) {
        if (!(LoopCalls.onLoop() ? queue.offer(item) : queue.put(item))) {
            return false;
        }
        tasks.ready(task);
        return true;
    }

    /** The body's end, complete or failed: never waits (an end always fits the queue). */
    private void end(Object item) {
        if (queue.offer(item)) {
            tasks.ready(task);
        }
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

    /**
     * What a writer writes to: each write goes to the client as a piece of at
     * most a buffer's size (the loop copies a piece into its response buffer);
     * writes block while the queue is full and fail once the client is gone.
     * Safe from any thread, one at a time.
     */
    private final class Output extends BodyWriter.Stream {
        volatile boolean closed;
        /**
         * One writer at a time. A lock, not the monitor: a write that waits
         * for room parks, and on JDK 21 to 23 a virtual thread that parks
         * holding a monitor pins its carrier, for a coloop handler the
         * event loop, which alone makes room.
         */
        private final ReentrantLock lock = new ReentrantLock();

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            lock.lock();
            try {
                if (closed) {
                    throw new IOException("the response body is closed");
                }
                while (len > 0) {
                    int n = Math.min(len, PIECE);
                    if (!put(Arrays.copyOfRange(b, off, off + n))) {
                        throw new IOException(queue.isClosed() ? "the client connection is closed"
                                : "the response body's queue is full: its client reads less than"
                                + " the event loop writes to it");
                    }
                    off += n;
                    len -= n;
                }
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void flush() throws IOException {
            if (queue.isClosed()) {
                throw new IOException("the client connection is closed");
            }
        }

        @Override
        public boolean writable(Runnable whenWritable) {
            return closed || queue.room(whenWritable);
        }

        @Override
        public void close() {
            end(END);
        }

        /** The loop logs {@code error} and ends the response cut short (Worker.next). */
        @Override
        public void fail(Throwable error) {
            end(error);
        }

        private void end(Object item) {
            lock.lock();
            try {
                if (!closed) {
                    closed = true;
                    AsyncBody.this.end(item);
                }
            } finally {
                lock.unlock();
            }
        }
    }
}
