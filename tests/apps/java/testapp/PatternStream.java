package testapp;

import java.io.InputStream;
import java.util.concurrent.atomic.AtomicInteger;

/** A stream of `size` bytes, byte i being i % 251, made as it is read. */
public final class PatternStream extends InputStream {
    /** How many PatternStreams were closed in this JVM. */
    public static final AtomicInteger CLOSES = new AtomicInteger();

    private final long size;
    private long pos;

    public PatternStream(long size) {
        this.size = size;
    }

    public static int closes() {
        return CLOSES.get();
    }

    @Override
    public int read() {
        return pos < size ? (int) (pos++ % 251) : -1;
    }

    @Override
    public int read(byte[] b, int off, int len) {
        if (pos >= size) {
            return -1;
        }
        int n = (int) Math.min(len, size - pos);
        for (int i = 0; i < n; i++) {
            b[off + i] = (byte) ((pos + i) % 251);
        }
        pos += n;
        return n;
    }

    @Override
    public void close() {
        CLOSES.incrementAndGet();
    }
}
