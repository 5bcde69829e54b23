package nginx.jvm.servlet;

import java.nio.ByteBuffer;
import java.util.Arrays;

/** A response body kept whole in memory (the seam's buffered path): grown as written. */
public final class BodyBuffer {
    private byte[] bytes = new byte[256];
    private int size;

    public void write(ByteBuffer b) {
        int n = b.remaining();
        ensure(n);
        b.get(bytes, size, n);
        size += n;
    }

    public void write(byte[] b, int off, int n) {
        ensure(n);
        System.arraycopy(b, off, bytes, size, n);
        size += n;
    }

    private void ensure(int n) {
        if (size + n > bytes.length) {
            bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, size + n));
        }
    }

    public int size() {
        return size;
    }

    /** The body, or null when empty; the buffer starts again. */
    public byte[] take() {
        byte[] b = size == 0 ? null : Arrays.copyOf(bytes, size);
        size = 0;
        if (bytes.length > 64 * 1024) {
            bytes = new byte[256];
        }
        return b;
    }
}
