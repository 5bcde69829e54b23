package nginx.jvm.servlet.jetty;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import nginx.jvm.BodyWriter;
import nginx.jvm.servlet.Answer;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.MetaData;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.HttpChannel;
import org.eclipse.jetty.server.HttpStream;
import org.eclipse.jetty.util.Callback;

/**
 * Jetty's side of one request: the HttpStream its HttpChannel reads the
 * request body from and sends the response to, as each of Jetty's own
 * protocols (HTTP/1.1, HTTP/2, FastCGI) has one. Here the body comes from
 * nginx-jvm's Request and the response goes to nginx through an
 * {@link Answer}: whole when Jetty sends it in one go (its buffer held it
 * all), streamed when Jetty sends before the end (a flush, a full buffer).
 *
 * <p>Neither reads nor writes hold a thread while they wait for the
 * client (a servlet's ReadListener and WriteListener): a read with no
 * body come yet answers nothing, and {@link #demand} has nginx-jvm call
 * back when some has ({@code Request.bodyReadable}, a body read as it
 * arrives: {@code jvm_request_buffering off}); a send goes to nginx a
 * piece at a time while the response's queue has room, and waits for the
 * next room without a thread ({@code BodyWriter.Stream.writable}), its
 * Jetty callback completed once all of it is queued. Those callbacks come
 * on the event loop: the work they resume runs on the connector's
 * executor (Jetty's thread pool).
 *
 * <p>The end goes to nginx when the exchange is over ({@link #succeeded}),
 * not with Jetty's last send: Jetty's session handler wraps this stream and
 * writes the request's session to the store (or deletes it, invalidated)
 * in its own {@code succeeded()}, before ours. A client that has the whole
 * answer may ask another worker at once, and must find the store as this
 * request left it (runtime/servlet/README.md, Sessions).
 */
final class NginxStream implements HttpStream {
    private static final int PIECE = 16 * 1024;

    private final HttpChannel channel;
    private final String id;
    private final nginx.jvm.Request request;
    private final Executor executor;
    private final InputStream body;
    private boolean bodyEnded;
    private final Answer answer;
    private long idleTimeout = 60_000;
    private final CountDownLatch done = new CountDownLatch(1);
    private volatile Throwable failure;
    /** Guarded by this: the exchange ended well, its channel goes back for reuse. */
    private boolean over;
    /** Jetty sent its last: the end waits for the exchange's, its session stored. */
    private boolean endHeld;
    /** Guarded by this: the send waiting for room, which {@link #cancelSend} may fail. */
    private Send waiting;
    /** The response is an upgrade's 101: the channel stays with the upgraded connection. */
    private boolean upgraded;

    private final Runnable release;

    /**
     * {@code release}: runs when the exchange ended well, its channel
     * recycled and free for another; {@code executor}: where a read or a
     * send that waited for the client goes on.
     */
    NginxStream(HttpChannel channel, String id, nginx.jvm.Request r, nginx.jvm.Responder responder,
                Executor executor, Runnable release) {
        this.channel = channel;
        this.release = release;
        this.id = id;
        this.request = r;
        this.executor = executor;
        this.answer = new Answer(r, responder);
        this.body = r.body();
        this.bodyEnded = !r.hasBody();
    }

    @Override
    public String getId() {
        return id;
    }

    @Override
    public Content.Chunk read() {
        if (bodyEnded) {
            return Content.Chunk.EOF;
        }
        if (!request.bodyReadable(null)) {
            // none come yet: Jetty demands, and hears when some has
            return null;
        }
        try {
            byte[] b = new byte[PIECE];
            int n = body.read(b);
            if (n < 0) {
                bodyEnded = true;
                return Content.Chunk.EOF;
            }
            return Content.Chunk.from(ByteBuffer.wrap(b, 0, n), false);
        } catch (IOException e) {
            bodyEnded = true;
            return Content.Chunk.from(e, true);
        }
    }

    /**
     * Jetty wants to hear when a read would give something: at once for a
     * body nginx read whole (memory or a temporary file), or one that ended;
     * otherwise when the next piece comes.
     */
    @Override
    public void demand() {
        if (bodyEnded || request.bodyReadable(() -> executor.execute(this::contentAvailable))) {
            contentAvailable();
        }
    }

    private void contentAvailable() {
        if (isOver()) {
            // a late wake-up: the channel may serve another request by now
            return;
        }
        Runnable task = channel.onContentAvailable();
        if (task != null) {
            task.run();
        }
    }

    @Override
    public void prepareResponse(HttpFields.Mutable headers) {
    }

    @Override
    public void send(MetaData.Request meta, MetaData.Response response, boolean last, ByteBuffer content,
                     Callback callback) {
        if (response != null) {
            answer.commit(response.getStatus());
            for (HttpField f : response.getHttpFields()) {
                answer.field(f.getName(), f.getValue());
            }
            if (response.getStatus() == 101) {
                upgrade();
            }
        }
        new Send(content, last, callback).run();
    }

    /**
     * The response is the 101 of an upgrade: the connection Jetty's handshake
     * left in the request (its WebSocketConnection, on the endpoint of
     * {@link NginxMetaData#getConnection}) takes over once the 101 has left
     * through nginx's byte tunnel ({@code Response.tunnel}), whose listener
     * installs it (NginxEndPoint).
     */
    private void upgrade() {
        Object c = channel.getRequest().getAttribute(UPGRADE_CONNECTION_ATTRIBUTE);
        if (c instanceof Connection && ((Connection) c).getEndPoint() instanceof NginxEndPoint) {
            answer.tunnel(((NginxEndPoint) ((Connection) c).getEndPoint()).upgradeTo((Connection) c));
            upgraded = true;
        }
    }

    /**
     * One of Jetty's sends: its content goes to the answer a piece at a
     * time while the response's queue has room; when it has none, the send
     * waits (no thread held) and goes on, on the executor, when the loop
     * made room. Its callback completes once, when all is queued (then the
     * last send's end is held for {@link #succeeded}), or the client left.
     */
    private final class Send implements Runnable {
        private final ByteBuffer content;
        private final boolean last;
        private final Callback callback;
        private final AtomicBoolean completed = new AtomicBoolean();

        Send(ByteBuffer content, boolean last, Callback callback) {
            this.content = content;
            this.last = last;
            this.callback = callback;
        }

        @Override
        public void run() {
            try {
                while (content != null && content.hasRemaining()) {
                    synchronized (NginxStream.this) {
                        waiting = this;
                    }
                    if (completed.get()) {
                        return;
                    }
                    if (!answer.writable(() -> executor.execute(this))) {
                        return;
                    }
                    ByteBuffer piece = content.slice();
                    piece.limit(Math.min(piece.remaining(), BodyWriter.Stream.PIECE));
                    answer.write(piece);
                    content.position(content.position() + piece.position());
                }
                if (last) {
                    endHeld = true;
                } else {
                    // Jetty sends before the end only when the servlet flushed or filled its buffer
                    answer.flush();
                }
            } catch (IOException e) {
                complete(e);
                return;
            }
            complete(null);
        }

        void complete(Throwable failure) {
            synchronized (NginxStream.this) {
                if (waiting == this) {
                    waiting = null;
                }
            }
            if (!completed.compareAndSet(false, true)) {
                return;
            }
            if (failure == null) {
                callback.succeeded();
            } else {
                callback.failed(failure);
            }
        }
    }

    /**
     * Jetty 12.1's (no @Override: Jetty 12.0's HttpStream, which this
     * source is compiled against too, has none; it fails the write itself).
     * Jetty has forgotten its pending write (the client left) and fails
     * {@code callback} only through the task returned, always: a send that
     * is under way or completing at this moment included, else the write
     * never ends and the servlet's onError never runs. The send, if any,
     * writes no more and completes nothing.
     */
    public Runnable cancelSend(Throwable cause, Callback callback) {
        Send s;
        synchronized (this) {
            s = waiting;
            waiting = null;
        }
        if (s != null) {
            s.completed.set(true);
        }
        return () -> callback.failed(cause);
    }

    @Override
    public long getIdleTimeout() {
        return idleTimeout;
    }

    @Override
    public void setIdleTimeout(long idleTimeoutMs) {
        idleTimeout = idleTimeoutMs;
    }

    @Override
    public boolean isCommitted() {
        return answer.isCommitted();
    }

    @Override
    public Throwable consumeAvailable() {
        return HttpStream.consumeAvailable(this, channel.getConnectionMetaData().getHttpConfiguration());
    }

    /**
     * The client left while the exchange went on (an async servlet): the
     * channel fails as on a connection's error (AsyncListener.onError,
     * reads and writes fail), unless the exchange is over, its channel
     * perhaps serving another request by now.
     */
    void clientLeft(java.util.concurrent.Executor executor) {
        Runnable task;
        synchronized (this) {
            if (over) {
                return;
            }
            task = channel.onFailure(new IOException("the client left"));
        }
        if (task != null) {
            executor.execute(task);
        }
    }

    /** True once the exchange is over (the channel recycled, or failed). */
    boolean isOver() {
        return done.getCount() == 0;
    }

    @Override
    public void succeeded() {
        if (endHeld) {
            answer.finish();
        }
        synchronized (this) {
            over = true;
        }
        if (!upgraded) {
            // an upgraded connection's session may still ask its request (Jetty drops the channel too)
            channel.recycle();
            release.run();
        }
        done.countDown();
    }

    @Override
    public void failed(Throwable x) {
        failure = x;
        answer.fail(x);
        done.countDown();
    }

    /** Synchronous: waits for the exchange's end, then answers what the servlet produced. */
    nginx.jvm.Response answer(long timeoutMs) throws Exception {
        if (!done.await(timeoutMs, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("the servlet did not complete within " + timeoutMs + " ms");
        }
        nginx.jvm.Response r = answer.response();
        if (r == null) {
            throw new IOException("the servlet engine failed", failure);
        }
        return r;
    }
}
