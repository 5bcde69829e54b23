package nginx.jvm.servlet;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import nginx.jvm.BodyWriter;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;

/**
 * The response of one request on its way from the engine to nginx, the
 * same for both engines: the engine commits (status and header fields),
 * writes, maybe flushes, and finishes.
 *
 * <p>Synchronous ({@code jvm_async off}: {@link #response} is what the
 * Handler returns), the body is kept whole and nginx sends it with a
 * Content-Length. Asynchronous ({@code jvm_async on}, with a Responder) a
 * response that finishes in one write (the engine's buffer held it all:
 * most pages) is answered whole too; one that writes again or flushes is
 * answered at that moment with a writer, and everything after goes to
 * nginx as written, back-pressure included (a slow client blocks the
 * servlet's writes), chunked unless the servlet set a Content-Length.
 */
public final class Answer {
    private static final long STREAM_WAIT_MS = 60_000;

    private final Request request;
    private final String method;
    private final Responder responder;
    private int status = 500;
    private String[] fields = new String[16];
    private int count;
    private boolean committed;
    private boolean noBody;
    private final BodyBuffer pending = new BodyBuffer();
    private OutputStream stream;
    private boolean finished;
    private Response whole;
    private java.io.File wholeFile;
    private nginx.jvm.WebSocketListener tunnel;
    private final java.util.concurrent.CountDownLatch over = new java.util.concurrent.CountDownLatch(1);

    public Answer(Request request, Responder responder) {
        this.request = request;
        this.method = request.method();
        this.responder = responder;
    }

    public boolean isCommitted() {
        return committed;
    }

    /** The engine committed with {@code status}; its fields follow through {@link #field}. */
    public void commit(int status) {
        this.status = status;
        this.committed = true;
        this.noBody = Fields.noBody(method, status);
    }

    public void field(String name, String value) {
        if (count * 2 == fields.length) {
            fields = Arrays.copyOf(fields, fields.length * 2);
        }
        fields[2 * count] = name;
        fields[2 * count + 1] = value;
        count++;
    }

    public void write(ByteBuffer b) throws IOException {
        if (noBody || finished) {
            b.position(b.limit());
            return;
        }
        if (stream == null && (responder == null || pending.size() == 0)) {
            pending.write(b);
            return;
        }
        if (stream == null) {
            startStream();
        }
        if (b.hasArray()) {
            stream.write(b.array(), b.arrayOffset() + b.position(), b.remaining());
            b.position(b.limit());
        } else {
            byte[] copy = new byte[b.remaining()];
            b.get(copy);
            stream.write(copy);
        }
    }

    /**
     * For the engine's non-blocking writes: true when a {@link #write} of up
     * to {@link BodyWriter.Stream#PIECE} bytes would not wait for the client
     * (before the body streams it is kept or starts the stream, which has
     * room then); otherwise false, and {@code whenWritable} runs once when it
     * would, on the event loop (it must only hand work to another thread). A
     * null callback only asks.
     */
    public boolean writable(Runnable whenWritable) {
        if (stream == null || noBody || finished) {
            return true;
        }
        return ((BodyWriter.Stream) stream).writable(whenWritable);
    }

    /** The servlet flushed: what it wrote goes to the client now (asynchronous only). */
    public void flush() throws IOException {
        if (responder == null || noBody || finished) {
            return;
        }
        if (stream == null) {
            startStream();
        }
        stream.flush();
    }

    /**
     * The body is bytes {@code start} to {@code end} (exclusive) of
     * {@code file}, which the engine asked the connector to send: the whole
     * file of a 200, with nothing written before it, goes to nginx as a
     * file body (sent by sendfile, never read into the JVM); any other part
     * is copied through {@link #write}. {@link #finish} follows.
     */
    public void file(java.io.File file, long start, long end) throws IOException {
        if (noBody || finished) {
            return;
        }
        if (status == 200 && start == 0 && end == file.length() && stream == null
                && pending.size() == 0) {
            wholeFile = file;
            return;
        }
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file.toPath())) {
            ByteBuffer b = ByteBuffer.allocate((int) Math.min(64 * 1024, Math.max(1, end - start)));
            long at = start;
            while (at < end) {
                b.clear().limit((int) Math.min(b.capacity(), end - at));
                int n = ch.read(b, at);
                if (n < 0) {
                    throw new IOException(file + " ended at " + at + ", before " + end);
                }
                at += n;
                b.flip();
                write(b);
            }
        }
    }

    /**
     * The response is the 101 of an upgrade the engine's handler speaks
     * itself: once it has left, nginx carries bytes both ways and
     * {@code listener} has them ({@code Response.tunnel}).
     */
    public void tunnel(nginx.jvm.WebSocketListener listener) {
        tunnel = listener;
    }

    /** The engine is done with the response. */
    public void finish() {
        if (finished) {
            return;
        }
        finished = true;
        if (stream != null) {
            try {
                stream.close();
            } catch (IOException e) {
                // the client left: the body is over either way
            }
            over.countDown();
            return;
        }
        if (tunnel != null && status == 101) {
            whole = fields(Response.tunnel(tunnel), false, false);
            if (responder != null) {
                responder.respond(whole);
            }
            over.countDown();
            return;
        }
        whole = head(noBody, wholeFile != null);
        byte[] body = pending.take();
        if (wholeFile != null) {
            whole.body(wholeFile);
        } else if (!noBody) {
            whole.body(body);
        }
        if (responder != null) {
            responder.respond(whole);
        }
        over.countDown();
    }

    /**
     * The engine failed before it finished: a 500 if nothing was answered
     * yet (the engine's own error page is the usual way, this is the last
     * resort); a streamed body ends as failed: what was written goes out,
     * then the client sees the response cut short, and nginx logs
     * {@code error}.
     */
    public void fail(Throwable error) {
        if (finished) {
            return;
        }
        finished = true;
        if (stream != null) {
            // cut short, never the last chunk: the client must not take it for the whole
            ((BodyWriter.Stream) stream).fail(error);
        } else if (responder != null) {
            responder.raise(error);
        } else {
            whole = null;
        }
        over.countDown();
    }

    /** Synchronous, for an exchange that goes on after the servlet returned (async): waits for its end. */
    public Response await(long timeoutMs) throws IOException {
        try {
            if (!over.await(timeoutMs, TimeUnit.MILLISECONDS)) {
                throw new IOException("the servlet did not complete within " + timeoutMs + " ms");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while the servlet ran");
        }
        return whole;
    }

    /** Synchronous: what the handler returns once the engine finished. */
    public Response response() {
        return whole;
    }

    private Response head(boolean keepLength, boolean file) {
        return fields(new Response(status), keepLength, file);
    }

    private Response fields(Response r, boolean keepLength, boolean file) {
        for (int i = 0; i < count; i++) {
            // a file body's Range is nginx's, which says Accept-Ranges itself
            if (!file || !fields[2 * i].equalsIgnoreCase("Accept-Ranges")) {
                Fields.add(r, fields[2 * i], fields[2 * i + 1], keepLength);
            }
        }
        return r;
    }

    private void startStream() throws IOException {
        Response r = head(true, false);
        CompletableFuture<OutputStream> out = new CompletableFuture<>();
        r.body((BodyWriter) o -> out.complete(o));
        request.onAbort(() -> out.completeExceptionally(new IOException("the client left")));
        responder.respond(r);
        try {
            // nginx-jvm calls the writer at once, on this thread when it is the handler's
            stream = out.get(STREAM_WAIT_MS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while the response started");
        } catch (ExecutionException e) {
            throw new IOException("the response could not start", e.getCause());
        } catch (TimeoutException e) {
            throw new IOException("nginx did not take the response's body within " + STREAM_WAIT_MS + " ms");
        }
        byte[] first = pending.take();
        if (first != null) {
            stream.write(first);
        }
    }
}
