package nginx.jvm;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.util.ArrayDeque;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A request body handed to its handler while it still arrives
 * ({@code jvm_request_buffering off}): the event loop copies each piece nginx
 * read into a byte array of its own ({@link #offer}), and the handler's
 * thread reads them in order, blocking while none is there.
 *
 * <p>Back-pressure: at most {@link #PIECES} pieces wait here. The piece that
 * fills the queue answers {@link Wire#UPLOAD_FULL}, and the event loop reads
 * no more from the client until the handler has taken half of them; then
 * {@code room} wakes the loop (through the ready queue and the eventfd), so
 * the memory of a request is a few pieces of {@code client_body_buffer_size}
 * however large its body is.
 *
 * <p>Nothing here points into nginx's memory: a piece is copied on the loop
 * before {@link #offer} returns, so a request that nginx frees meanwhile
 * cannot be read through it. When the request is over ({@link #end}) the
 * pieces are dropped and a read throws.
 *
 * <p>A {@link ReentrantLock}, not {@code synchronized}: a virtual thread
 * blocked here unmounts from its carrier on every JDK from 21 on.
 */
final class UploadBody extends InputStream {
    /** The pieces that may wait for the handler. */
    static final int PIECES = 4;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition arrived = lock.newCondition();
    private final ArrayDeque<byte[]> pieces = new ArrayDeque<>(PIECES);
    private final Runnable room;

    // Under the lock.
    private boolean paused;
    private boolean ended;
    /** Written under the lock; read without it by {@link #read}. */
    private volatile boolean closed;
    private String failure;
    private long received;
    /** Runs once when a read would no longer wait ({@link #readable}). */
    private Runnable whenReadable;

    // The reading thread only (close() may come from another).
    private byte[] current;
    private int at;

    /** {@code room}: from the handler's thread, wakes the loop to read again. */
    UploadBody(Runnable room) {
        this.room = room;
    }

    /**
     * Event loop: a piece of the body (possibly empty), and whether it is the
     * last ({@code status} 200), more follow (0), or the body failed with an
     * HTTP status (400 the client left or sent a malformed body, 408
     * client_body_timeout, 413 too large, 500). Answers
     * {@link Wire#UPLOAD_MORE}, {@link Wire#UPLOAD_FULL} or
     * {@link Wire#UPLOAD_DROP} (nobody reads it any more).
     */
    int offer(byte[] piece, int status) {
        Runnable readable = null;
        lock.lock();
        try {
            if (closed) {
                return Wire.UPLOAD_DROP;
            }
            if (piece.length > 0) {
                pieces.add(piece);
                received += piece.length;
            }
            if (status == Wire.UPLOAD_END) {
                ended = true;
            } else if (status != Wire.UPLOAD_GOING && failure == null) {
                failure = failed(status);
            }
            arrived.signalAll();
            readable = readableNow();
            if (pieces.size() >= PIECES && !ended && failure == null) {
                paused = true;
                return Wire.UPLOAD_FULL;
            }
            return Wire.UPLOAD_MORE;
        } finally {
            lock.unlock();
            if (readable != null) {
                readable.run();
            }
        }
    }

    /**
     * For a reader that must not wait (a servlet's ReadListener): true when
     * a read would answer at once (bytes are here, or the body ended,
     * failed or was closed); otherwise false, and {@code callback} runs
     * once when it would, on the event loop: it must only hand work to
     * another thread. A later call replaces an earlier callback; a null one
     * only asks. The reading thread's.
     */
    boolean readable(Runnable callback) {
        lock.lock();
        try {
            if ((current != null && at < current.length) || wouldAnswer()) {
                return true;
            }
            if (callback != null) {
                whenReadable = callback;
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    /** Under the lock: a read takes a piece, or ends or throws, at once. */
    private boolean wouldAnswer() {
        return closed || !pieces.isEmpty() || ended || failure != null;
    }

    /** Under the lock: the callback {@link #readable} left, taken when a read would answer now. */
    private Runnable readableNow() {
        Runnable r = whenReadable;
        if (r != null && wouldAnswer()) {
            whenReadable = null;
            return r;
        }
        return null;
    }

    private String failed(int status) {
        String why;
        switch (status) {
            case 400:
                why = "the client closed the connection or sent a malformed body";
                break;
            case 408:
                why = "the client sent nothing for client_body_timeout";
                break;
            case 413:
                why = "the body is larger than client_max_body_size";
                break;
            default:
                why = "nginx could not read it";
        }
        return "the request body failed after " + received + " bytes (" + status + "): " + why;
    }

    /**
     * Event loop: the request is over (answered, failed or its client gone):
     * the pieces are dropped and the handler's next read throws.
     */
    void end() {
        Runnable readable;
        lock.lock();
        try {
            pieces.clear();
            if (failure == null && !closed) {
                failure = ended ? "the request is over" : "the request ended before its body";
            }
            ended = false;
            arrived.signalAll();
            readable = readableNow();
        } finally {
            lock.unlock();
        }
        if (readable != null) {
            // the reader's next read throws: it learns the request is over
            readable.run();
        }
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        java.util.Objects.checkFromIndexSize(off, len, b.length);
        if (closed) {
            throw new IOException("the request body was closed");
        }
        if (len == 0) {
            return 0;
        }
        if (current == null || at == current.length) {
            if (!next()) {
                return -1;
            }
        }
        int n = Math.min(len, current.length - at);
        System.arraycopy(current, at, b, off, n);
        at += n;
        return n;
    }

    /** Takes the next piece, blocking while none is there; false at the end. */
    private boolean next() throws IOException {
        boolean wake = false;
        lock.lock();
        try {
            for (;;) {
                if (closed) {
                    throw new IOException("the request body was closed");
                }
                byte[] piece = pieces.poll();
                if (piece != null) {
                    current = piece;
                    at = 0;
                    if (paused && pieces.size() <= PIECES / 2) {
                        paused = false;
                        wake = true;
                    }
                    return true;
                }
                current = null;
                if (failure != null) {
                    throw new IOException(failure);
                }
                if (ended) {
                    return false;
                }
                try {
                    arrived.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while reading the request body");
                }
            }
        } finally {
            lock.unlock();
            if (wake) {
                room.run();
            }
        }
    }

    @Override
    public int available() {
        lock.lock();
        try {
            int n = current == null ? 0 : current.length - at;
            for (byte[] p : pieces) {
                n += p.length;
            }
            return n;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The handler wants no more: what is queued is dropped, and the event
     * loop reads the rest of the body and throws it away (woken if it waits
     * for room), so the connection stays usable for the next request.
     */
    @Override
    public void close() {
        boolean wake;
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            pieces.clear();
            wake = paused;
            paused = false;
            arrived.signalAll();
        } finally {
            lock.unlock();
        }
        if (wake) {
            room.run();
        }
    }
}
