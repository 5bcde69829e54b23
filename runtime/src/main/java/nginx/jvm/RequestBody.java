package nginx.jvm;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;

/**
 * The request body as nginx read it: parts held in memory (copied with the
 * request description) and parts nginx wrote to a temporary file, read from
 * that file as the handler asks, never all at once.
 */
final class RequestBody extends InputStream {
    /** A segment's kind: held in memory; anything else is in a temporary file. */
    private static final int MEMORY = 0;

    private final byte[] data;
    private int segmentsLeft;
    private int pos;

    // The segment being read.
    private int memAt, memLeft;
    private RandomAccessFile file;
    private long fileLeft;

    private RequestBody(byte[] data, int segments, int pos) {
        this.data = data;
        this.segmentsLeft = segments;
        this.pos = pos;
    }

    static InputStream open(byte[] data, int at) {
        int segments = Wire.getInt(data, at);
        if (segments == 0) {
            return new ByteArrayInputStream(new byte[0]);
        }
        return new RequestBody(data, segments, at + 4);
    }

    /** Moves to the next segment that has bytes; false at the end of the body. */
    private boolean advance() throws IOException {
        while (memLeft == 0 && fileLeft == 0) {
            closeFile();
            if (segmentsLeft == 0) {
                return false;
            }
            segmentsLeft--;
            int kind = Wire.getInt(data, pos);
            int len = Wire.getInt(data, pos + 4);
            if (kind == MEMORY) {
                memAt = pos + 8;
                memLeft = len;
                pos += 8 + len;
            } else {
                String path = new String(data, pos + 8, len, StandardCharsets.UTF_8);
                pos += 8 + len;
                long offset = Wire.getLong(data, pos);
                fileLeft = Wire.getLong(data, pos + 8);
                pos += 16;
                file = new RandomAccessFile(path, "r");
                file.seek(offset);
            }
        }
        return true;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) == 1 ? one[0] & 0xff : -1;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        if (!advance()) {
            return -1;
        }
        if (memLeft > 0) {
            int n = Math.min(len, memLeft);
            System.arraycopy(data, memAt, b, off, n);
            memAt += n;
            memLeft -= n;
            return n;
        }
        int n = file.read(b, off, (int) Math.min(len, fileLeft));
        if (n < 0) {
            throw new IOException("request body temp file ended early");
        }
        fileLeft -= n;
        return n;
    }

    @Override
    public int available() {
        return memLeft;
    }

    private void closeFile() throws IOException {
        if (file != null) {
            file.close();
            file = null;
        }
    }

    @Override
    public void close() throws IOException {
        segmentsLeft = 0;
        memLeft = 0;
        fileLeft = 0;
        closeFile();
    }
}
