package nginx.jvm;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.Charset;
import java.util.Iterator;

/**
 * A response body sent in pieces: nginx asks for the next piece only when the
 * previous one has left for the client, so a large or endless body costs one
 * buffer, not memory for all of it. Each piece is flushed to the client.
 */
abstract class BodySource {
    /**
     * How many empty pieces in a row (an empty element, a read of 0 bytes) one
     * {@link #fill} takes before it gives up for now: a source that yields
     * nothing forever must not keep its caller from noticing that the client
     * left, nor, on the event loop, keep the loop from its other connections.
     */
    static final int EMPTY_TRIES = 1024;

    /**
     * Writes the next piece into {@code out} (from position 0) and returns its
     * length, {@link Wire#NEXT_END} (-1) when the body has ended, or
     * {@link Wire#NEXT_EMPTY} after {@link #EMPTY_TRIES} empty pieces in a row
     * (ask again later). Never returns 0.
     */
    abstract int fill(ByteBuffer out) throws IOException;

    void close() throws IOException {
    }

    /** A byte array too large to send in one piece with the headers. */
    static final class Bytes extends BodySource {
        private final byte[] bytes;
        private int at;

        Bytes(byte[] bytes) {
            this.bytes = bytes;
        }

        @Override
        int fill(ByteBuffer out) {
            if (at == bytes.length) {
                return -1;
            }
            int n = Math.min(out.capacity(), bytes.length - at);
            out.put(0, bytes, at, n);
            at += n;
            return n;
        }
    }

    /** An InputStream, read a buffer at a time and closed at the end. */
    static final class Stream extends BodySource {
        private final InputStream in;
        private byte[] chunk;

        Stream(InputStream in) {
            this.in = in;
        }

        @Override
        int fill(ByteBuffer out) throws IOException {
            if (chunk == null) {
                chunk = new byte[out.capacity()];
            }
            for (int tries = 0; tries < EMPTY_TRIES; tries++) {
                int n = in.read(chunk, 0, Math.min(chunk.length, out.capacity()));
                if (n != 0) {
                    if (n > 0) {
                        out.put(0, chunk, 0, n);
                    }
                    return n < 0 ? Wire.NEXT_END : n;
                }
            }
            return Wire.NEXT_EMPTY;
        }

        @Override
        void close() throws IOException {
            in.close();
        }
    }

    /**
     * Each element of an Iterable in turn: a String, a byte[], or anything
     * else as its toString(); null is empty, as Ring's {@code (str nil)}.
     */
    static final class Elements extends BodySource {
        private static final byte[] EMPTY = new byte[0];

        private final Iterator<?> it;
        private final Charset charset;
        private byte[] rest;
        private int restAt;

        Elements(Iterator<?> it, Charset charset) {
            this.it = it;
            this.charset = charset;
        }

        @Override
        int fill(ByteBuffer out) {
            for (int tries = 0; rest == null || restAt == rest.length; tries++) {
                if (tries == EMPTY_TRIES) {
                    return Wire.NEXT_EMPTY;
                }
                if (!it.hasNext()) {
                    return -1;
                }
                Object e = it.next();
                rest = e == null ? EMPTY
                        : e instanceof byte[] ? (byte[]) e : e.toString().getBytes(charset);
                restAt = 0;
            }
            int n = Math.min(out.capacity(), rest.length - restAt);
            out.put(0, rest, restAt, n);
            restAt += n;
            return n;
        }

        @Override
        void close() throws IOException {
            if (it instanceof AutoCloseable) {
                try {
                    ((AutoCloseable) it).close();
                } catch (IOException | RuntimeException e) {
                    throw e;
                } catch (Exception e) {
                    throw new IOException(e);
                }
            }
        }
    }
}
