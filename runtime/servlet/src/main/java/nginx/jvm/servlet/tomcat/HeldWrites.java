package nginx.jvm.servlet.tomcat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import nginx.jvm.BodyWriter;
import nginx.jvm.servlet.Answer;

/**
 * What a servlet wrote in non-blocking mode (a WriteListener) that the
 * client could not take yet: a write after {@code isReady()} said true must
 * not block, so the bytes wait here, in pieces the answer's stream takes
 * without waiting, until it has room. {@code isReady()} stays false while
 * any wait, so this holds at most one of the servlet's writes (and the
 * engine's buffer): the servlet, not this, decides how large that is.
 * Used under the processor's lock.
 */
final class HeldWrites {
    private final ArrayDeque<byte[]> pieces = new ArrayDeque<>();

    boolean isEmpty() {
        return pieces.isEmpty();
    }

    /** Keeps {@code b}'s bytes, in pieces of at most what a write may hand over without waiting. */
    void add(ByteBuffer b) {
        while (b.hasRemaining()) {
            byte[] piece = new byte[Math.min(b.remaining(), BodyWriter.Stream.PIECE)];
            b.get(piece);
            pieces.add(piece);
        }
    }

    /**
     * Hands {@code answer} what it takes without waiting; true when nothing
     * is left. Throws when the client is gone (the stream's write fails).
     */
    boolean drain(Answer answer) throws IOException {
        while (!pieces.isEmpty() && answer.writable(null)) {
            answer.write(ByteBuffer.wrap(pieces.poll()));
        }
        return pieces.isEmpty();
    }

    /** The response ends: what is left goes out, waiting for the client as a blocking write does. */
    void drainAll(Answer answer) throws IOException {
        byte[] piece;
        while ((piece = pieces.poll()) != null) {
            answer.write(ByteBuffer.wrap(piece));
        }
    }

    void clear() {
        pieces.clear();
    }
}
