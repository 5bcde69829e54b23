package nginx.jvm;

import java.io.IOException;
import java.io.OutputStream;

/**
 * A response body that writes itself to a stream, for bodies produced by code
 * rather than held in memory. The stream is flushed to the client as it is
 * written and closed by the runtime afterwards.
 *
 * <p>The stream given to {@link #writeTo} is a {@link Stream}: a writer that
 * must not block (an engine's non-blocking writes) asks it whether a write
 * would wait, and a writer whose body goes wrong half-way ends it as failed
 * rather than closing it as if complete.
 */
@FunctionalInterface
public interface BodyWriter {
    void writeTo(OutputStream out) throws IOException;

    /**
     * What {@link #writeTo} writes to. Made by the runtime only.
     */
    abstract class Stream extends OutputStream {
        /** The most a write may hand over when {@link #writable} said it would not wait. */
        public static final int PIECE = 16 * 1024;

        Stream() {
        }

        /**
         * For a writer that must not wait: true when a write of up to
         * {@link #PIECE} bytes would not wait for the client now (or would
         * fail at once: the client left, the body is over); otherwise false,
         * and {@code whenWritable} runs once, when it would. It runs on the
         * event loop or whatever thread made room, so it must only hand work
         * to another thread, never block. A later call replaces the callback
         * of an earlier one that has not run; a null callback only asks.
         */
        public abstract boolean writable(Runnable whenWritable);

        /**
         * Ends the body as failed, never as complete: what was written before
         * goes out, then the client sees the response cut short (HTTP/1.1:
         * the connection closed without the last chunk, or before the
         * Content-Length; HTTP/2 and 3: the stream reset), and {@code error}
         * is logged with its stack trace. Never waits for the client (only
         * for a write under way on another thread). Writes after it throw;
         * a second call, or one after {@link #close}, does nothing.
         */
        public abstract void fail(Throwable error);

        /** Ends the body: complete. Never waits for the client (as {@link #fail}). */
        @Override
        public abstract void close() throws IOException;
    }
}
