package nginx.jvm.servlet.jetty;

import java.io.IOException;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import nginx.jvm.WebSocket;
import nginx.jvm.WebSocketListener;
import org.eclipse.jetty.io.AbstractConnection;
import org.eclipse.jetty.io.AbstractEndPoint;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.EofException;
import org.eclipse.jetty.util.BufferUtil;
import org.eclipse.jetty.util.thread.Scheduler;

/**
 * Jetty's EndPoint for a connection a request upgraded (Jetty's WebSocket,
 * which Spring's WebSocket and STOMP use on Boot's Jetty starter, or a
 * servlet's {@code HttpUpgradeHandler}), over nginx-jvm's byte tunnel
 * ({@code Response.tunnel}): nginx sends the 101, then hands over the
 * client's bytes as they come and writes Jetty's as they are. Jetty's
 * connection (its {@code WebSocketConnection}) runs over it unmodified, as
 * over a socket's endpoint.
 *
 * <p>Until the upgrade, it is the endpoint of the request's "connection"
 * ({@link NginxMetaData#getConnection}: Jetty's handshake builds its
 * connection on it); the connection Jetty leaves in
 * {@code HttpStream.UPGRADE_CONNECTION_ATTRIBUTE} is installed when the
 * 101 has left ({@link #tunnel}'s onOpen).
 *
 * <p>Reads: {@link #fill} takes what nginx delivered; a fill interest hears
 * of more on the connector's executor. The tunnel listener's thread waits
 * while more than {@link #MAX_BUFFERED} bytes wait here (a connection that
 * stopped reading), so its queue fills and nginx stops reading from the
 * client. Writes: {@link #flush} hands at most {@link #PIECE} bytes to the
 * tunnel at a time, one piece in flight; the next waits (Jetty's write
 * pending, no thread held) until nginx took it: a client that does not
 * read holds the writer, not memory.
 */
final class NginxEndPoint extends AbstractEndPoint {
    static final int MAX_BUFFERED = 1024 * 1024;
    static final int PIECE = 64 * 1024;

    private final Executor executor;
    private final SocketAddress local;
    private final SocketAddress remote;
    private final Exchange exchange;
    /** The connection the handshake left, installed once the 101 has left. */
    private volatile Connection upgrade;
    private volatile WebSocket socket;

    // what nginx delivered, not yet read (guarded by in)
    private final ArrayDeque<ByteBuffer> in = new ArrayDeque<>();
    private int buffered;
    private boolean eof;

    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicBoolean writePending = new AtomicBoolean();
    private volatile IOException writeFailure;
    private volatile boolean shut;

    NginxEndPoint(Scheduler scheduler, Executor executor, SocketAddress local, SocketAddress remote) {
        super(scheduler);
        this.executor = executor;
        this.local = local;
        this.remote = remote;
        this.exchange = new Exchange(this, executor);
        setConnection(exchange);
    }

    /** The request's "connection": the endpoint's until the upgrade. */
    Connection exchange() {
        return exchange;
    }

    /**
     * The request's response is the 101 of an upgrade to {@code c} (Jetty's
     * {@code UPGRADE_CONNECTION_ATTRIBUTE}): what nginx is to answer, its
     * listener installs {@code c} once the 101 has left.
     */
    WebSocketListener upgradeTo(Connection c) {
        upgrade = c;
        return tunnel;
    }

    private final WebSocketListener tunnel = new WebSocketListener() {
        /** The 101 has left: Jetty's connection takes over, as after its HTTP/1.1 upgrade. */
        @Override
        public void onOpen(WebSocket s) {
            socket = s;
            if (shut) {
                s.close();
                return;
            }
            NginxEndPoint.this.onOpen();
            try {
                upgrade(upgrade);
            } catch (Throwable t) {
                close(t);
            }
        }

        /** Bytes from the client: kept for fill, the fill interest told. */
        @Override
        public void onMessage(WebSocket s, ByteBuffer data) {
            synchronized (in) {
                in.add(data);
                buffered += data.remaining();
            }
            fillable();
            synchronized (in) {
                while (buffered > MAX_BUFFERED && !eof && !shut) {
                    try {
                        in.wait(100);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            }
        }

        /**
         * The connection is gone (the client left, or it closed after what
         * Jetty asked): a fill finds its end once what came is read, as on
         * a socket, and a write fails.
         */
        @Override
        public void onClose(WebSocket s, int code, String reason) {
            synchronized (in) {
                eof = true;
                in.notifyAll();
            }
            if (writeFailure == null) {
                writeFailure = new EofException("the connection closed (" + code + ")");
            }
            fillable();
            wakeWriter();
        }
    };

    private void fillable() {
        if (getFillInterest().isInterested()) {
            executor.execute(() -> getFillInterest().fillable());
        }
    }

    @Override
    protected void needsFillInterest() {
        boolean ready;
        synchronized (in) {
            ready = !in.isEmpty() || eof;
        }
        if (ready) {
            executor.execute(() -> getFillInterest().fillable());
        }
    }

    @Override
    public int fill(ByteBuffer buffer) throws IOException {
        if (isInputShutdown()) {
            return -1;
        }
        int n = 0;
        boolean end;
        synchronized (in) {
            int pos = BufferUtil.flipToFill(buffer);
            try {
                while (buffer.hasRemaining() && !in.isEmpty()) {
                    ByteBuffer b = in.peek();
                    int k = Math.min(b.remaining(), buffer.remaining());
                    ByteBuffer slice = b.duplicate();
                    slice.limit(slice.position() + k);
                    buffer.put(slice);
                    b.position(b.position() + k);
                    if (!b.hasRemaining()) {
                        in.poll();
                    }
                    n += k;
                }
            } finally {
                BufferUtil.flipToFlush(buffer, pos);
            }
            buffered -= n;
            if (n > 0) {
                in.notifyAll();
            }
            end = n == 0 && eof;
        }
        if (n > 0) {
            notIdle();
            return n;
        }
        if (end) {
            shutdownInput();
            return -1;
        }
        return 0;
    }

    @Override
    public boolean flush(ByteBuffer... buffers) throws IOException {
        IOException failed = writeFailure;
        if (failed != null) {
            throw failed;
        }
        if (!isOpen() || isOutputShutdown()) {
            throw new EofException("the upgraded connection is closed");
        }
        long total = 0;
        for (ByteBuffer b : buffers) {
            total += b.remaining();
        }
        if (total == 0) {
            return true;
        }
        WebSocket s = socket;
        if (s == null || inFlight.get() > 0) {
            return false;
        }
        byte[] piece = new byte[(int) Math.min(total, PIECE)];
        int at = 0;
        for (ByteBuffer b : buffers) {
            int k = Math.min(b.remaining(), piece.length - at);
            b.get(piece, at, k);
            at += k;
            if (at == piece.length) {
                break;
            }
        }
        inFlight.incrementAndGet();
        s.sendAsync(ByteBuffer.wrap(piece), new WebSocket.Callback() {
            @Override
            public void succeeded() {
                inFlight.decrementAndGet();
                wakeWriter();
            }

            @Override
            public void failed(Throwable error) {
                if (writeFailure == null) {
                    writeFailure = error instanceof IOException ? (IOException) error : new IOException(error);
                }
                inFlight.decrementAndGet();
                wakeWriter();
            }
        });
        notIdle();
        return total == piece.length;
    }

    /** Jetty's write waits (its state PENDING): it goes on when the piece in flight has gone. */
    @Override
    protected void onIncompleteFlush() {
        writePending.set(true);
        if (inFlight.get() == 0 || writeFailure != null) {
            wakeWriter();
        }
    }

    private void wakeWriter() {
        if (writePending.compareAndSet(true, false)) {
            executor.execute(() -> getWriteFlusher().completeWrite());
        }
    }

    /** nginx closes the connection once what was written has left. */
    @Override
    protected void doClose() {
        shut = true;
        synchronized (in) {
            in.clear();
            buffered = 0;
            in.notifyAll();
        }
        WebSocket s = socket;
        if (s != null) {
            s.close();
        }
        super.doClose();
    }

    @Override
    public Object getTransport() {
        return socket;
    }

    @Override
    public SocketAddress getLocalSocketAddress() {
        return local;
    }

    @Override
    public SocketAddress getRemoteSocketAddress() {
        return remote;
    }

    /** What the endpoint's connection is before the upgrade: the exchange nginx handed over, which reads nothing. */
    static final class Exchange extends AbstractConnection {
        Exchange(NginxEndPoint endPoint, Executor executor) {
            super(endPoint, executor);
        }

        @Override
        public void onFillable() {
        }
    }
}
