package nginx.jvm;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Runs a {@link BodyWriter} on its own thread and hands what it writes to the
 * reader through a small bounded queue: the writer blocks when the client is
 * slow (back-pressure) and fails with an IOException once the reader is closed.
 */
final class Pipe extends InputStream {
    private static final byte[] END = new byte[0];
    private static final int CHUNK = 16 * 1024;

    private static final ExecutorService WRITERS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "nginx-jvm-body-writer");
        t.setDaemon(true);
        return t;
    });

    private final Handoff<byte[]> queue = new Handoff<>(4);
    private volatile Throwable failure;
    private byte[] current;
    private int at;

    static Pipe start(BodyWriter writer) {
        Pipe pipe = new Pipe();
        WRITERS.execute(() -> pipe.run(writer));
        return pipe;
    }

    private void run(BodyWriter writer) {
        try (Out out = new Out()) {
            writer.writeTo(out);
        } catch (Throwable t) {
            if (failure == null) {
                failure = t;
            }
        } finally {
            queue.put(END);
        }
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) == 1 ? one[0] & 0xff : -1;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        while (current == null || at == current.length) {
            if (current == END) {
                return -1;
            }
            try {
                current = queue.take();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException();
            }
            at = 0;
            if (current == END && failure != null) {
                throw new IOException("response body writer failed", failure);
            }
        }
        int n = Math.min(len, current.length - at);
        System.arraycopy(current, at, b, off, n);
        at += n;
        return n;
    }

    @Override
    public void close() {
        queue.close();
    }

    /** The writer's side: buffers small writes, hands over a chunk on flush or when full. */
    private final class Out extends BodyWriter.Stream {
        private byte[] buf = new byte[CHUNK];
        private int n;

        @Override
        public boolean writable(Runnable whenWritable) {
            return failure != null || queue.room(whenWritable);
        }

        /** The reader throws once what was written before is read (read). */
        @Override
        public void fail(Throwable error) {
            if (failure == null) {
                failure = error;
            }
        }

        @Override
        public void write(int b) throws IOException {
            if (n == buf.length) {
                flush();
            }
            buf[n++] = (byte) b;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            while (len > 0) {
                if (n == buf.length) {
                    flush();
                }
                int k = Math.min(len, buf.length - n);
                System.arraycopy(b, off, buf, n, k);
                n += k;
                off += k;
                len -= k;
            }
        }

        @Override
        public void flush() throws IOException {
            if (failure != null) {
                throw new IOException("the response body failed", failure);
            }
            if (n == 0) {
                return;
            }
            byte[] chunk = java.util.Arrays.copyOf(buf, n);
            n = 0;
            if (!queue.put(chunk)) {
                throw new IOException("client connection closed");
            }
        }

        @Override
        public void close() throws IOException {
            if (failure == null) {
                flush();
            }
        }
    }
}
