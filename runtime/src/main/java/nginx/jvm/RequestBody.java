package nginx.jvm;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The request body as nginx read it: parts held in memory (copied with the
 * request description) and parts nginx wrote to a temporary file, read from
 * that file as the handler asks, never all at once.
 *
 * <p>The files are the request's own: {@link #openFiles} opens them on the
 * event loop while the request is described, when {@code /proc/self/fd/N}
 * is still the request's temporary file (nginx closes N when the request
 * ends, and the kernel may give N to another request's file). The request
 * closes them when it ends ({@link Request#end}); a read after that fails
 * with an IOException. A {@link FileChannel} is closed safely under a
 * reader: close waits for reads in progress, later reads fail.
 */
final class RequestBody extends InputStream {
    /** A segment's kind: held in memory; anything else is in a temporary file. */
    private static final int MEMORY = 0;

    private final byte[] data;
    private final FileChannel[] files;
    private final IOException filesError;
    private int segmentsLeft;
    private int pos;
    private int fileIndex;

    // The segment being read.
    private int memAt, memLeft;
    private FileChannel file;
    private long filePos, fileLeft;

    private RequestBody(byte[] data, int segments, int pos, FileChannel[] files, IOException filesError) {
        this.data = data;
        this.segmentsLeft = segments;
        this.pos = pos;
        this.files = files;
        this.filesError = filesError;
    }

    static InputStream open(byte[] data, int at, FileChannel[] files, IOException filesError) {
        int segments = Wire.getInt(data, at);
        if (segments == 0) {
            return new ByteArrayInputStream(new byte[0]);
        }
        return new RequestBody(data, segments, at + 4, files, filesError);
    }

    /**
     * Event loop, while the request is described: opens each file segment's
     * file, in order. Throws when one cannot be opened (none is left open).
     */
    static FileChannel[] openFiles(byte[] data, int at) throws IOException {
        int segments = Wire.getInt(data, at);
        int pos = at + 4;
        FileChannel[] files = new FileChannel[segments];
        int n = 0;
        try {
            for (int i = 0; i < segments; i++) {
                int kind = Wire.getInt(data, pos);
                int len = Wire.getInt(data, pos + 4);
                if (kind == MEMORY) {
                    pos += 8 + len;
                    continue;
                }
                String path = new String(data, pos + 8, len, StandardCharsets.UTF_8);
                pos += 8 + len + 16;
                files[n++] = FileChannel.open(Path.of(path), StandardOpenOption.READ);
            }
        } catch (IOException | RuntimeException e) {
            close(files);
            throw e instanceof IOException ? (IOException) e
                    : new IOException("cannot open the request body's temporary file", e);
        }
        return files;
    }

    /** Closes the files {@link #openFiles} opened; any thread. */
    static void close(FileChannel[] files) {
        for (FileChannel f : files) {
            if (f != null) {
                try {
                    f.close();
                } catch (IOException ignored) {
                    // a file only read from: nothing was lost
                }
            }
        }
    }

    /** Moves to the next segment that has bytes; false at the end of the body. */
    private boolean advance() throws IOException {
        while (memLeft == 0 && fileLeft == 0) {
            file = null;
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
                pos += 8 + len;
                filePos = Wire.getLong(data, pos);
                fileLeft = Wire.getLong(data, pos + 8);
                pos += 16;
                if (files == null) {
                    throw filesError != null
                            ? new IOException("cannot read the request body", filesError)
                            : new IOException("the request body's file was not opened");
                }
                file = files[fileIndex++];
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
        int n;
        try {
            n = file.read(ByteBuffer.wrap(b, off, (int) Math.min(len, fileLeft)), filePos);
        } catch (java.nio.channels.ClosedChannelException e) {
            n = -1;
        }
        if (n <= 0) {
            throw new IOException(file.isOpen() ? "request body temp file ended early"
                    : "the request is over: its body can no longer be read");
        }
        filePos += n;
        fileLeft -= n;
        return n;
    }

    @Override
    public int available() {
        return memLeft;
    }

    /** Ends this stream; the files stay the request's until it ends. */
    @Override
    public void close() {
        segmentsLeft = 0;
        memLeft = 0;
        fileLeft = 0;
        file = null;
    }
}
