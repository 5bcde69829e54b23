package nginx.jvm.servlet.tomcat;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.util.ArrayDeque;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import nginx.jvm.WebSocket;
import org.apache.juli.logging.Log;
import org.apache.juli.logging.LogFactory;
import org.apache.tomcat.util.net.AbstractEndpoint;
import org.apache.tomcat.util.net.ApplicationBufferHandler;
import org.apache.tomcat.util.net.SSLSupport;
import org.apache.tomcat.util.net.SendfileDataBase;
import org.apache.tomcat.util.net.SendfileState;
import org.apache.tomcat.util.net.SocketEvent;
import org.apache.tomcat.util.net.SocketProcessorBase;
import org.apache.tomcat.util.net.SocketWrapperBase;

/**
 * Tomcat's socket, for an upgraded connection, over nginx-jvm's byte
 * tunnel (a {@link WebSocket} from {@code Response.tunnel}): reads are
 * served from the bytes nginx delivered, writes go to nginx as they are.
 * No socket buffer of Tomcat's: a blocking write waits for room in the
 * tunnel's bounded send queue (a client that does not read holds the
 * writer, not memory); a non-blocking one is in flight until nginx takes
 * it, and Tomcat hears "write possible" (OPEN_WRITE) then. No async I/O
 * (hasAsyncIO false): Tomcat's WebSocket uses its plain blocking and
 * non-blocking paths.
 */
final class NginxSocketWrapper extends SocketWrapperBase<WebSocket> {
    private static final Log log = LogFactory.getLog(NginxSocketWrapper.class);

    /**
     * What may wait here for an endpoint that suspended its reading
     * (Tomcat's {@code WsSession.suspend}) before the tunnel's listener
     * waits ({@link #awaitRoom}).
     */
    private static final int MAX_BUFFERED = 1024 * 1024;

    private final WebSocket socket;
    private final NginxTunnel tunnel;
    private final String remote;
    private final int port;
    // the bytes nginx delivered, not yet read (guarded by in)
    private final ArrayDeque<ByteBuffer> in = new ArrayDeque<>();
    private int buffered;
    private boolean eof;
    private final AtomicInteger inFlight = new AtomicInteger();
    private volatile boolean writeInterest;
    private volatile IOException failure;
    private final AtomicBoolean shut = new AtomicBoolean();

    NginxSocketWrapper(WebSocket socket, NginxTunnel tunnel, String remote, int port) {
        super(socket, Endpoint.INSTANCE);
        this.socket = socket;
        this.tunnel = tunnel;
        this.remote = remote;
        this.port = port;
        this.lock = socketLock(this);
    }

    private final Lock lock;

    /**
     * The socket's lock, which Tomcat's WebSocket takes too: the events of
     * the connection run under it, as under Tomcat's SocketProcessor.
     */
    Lock lock() {
        return lock;
    }

    /**
     * getLock() by name: Tomcat 11 declares it a ReentrantLock, 10.1 (Spring
     * Boot 3.5) a Lock, and a call compiled against one is not the other's.
     */
    private static Lock socketLock(SocketWrapperBase<?> wrapper) {
        try {
            return (Lock) SocketWrapperBase.class.getMethod("getLock").invoke(wrapper);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("this Tomcat's socket wrapper has no lock", e);
        }
    }

    // -- what nginx delivered ------------------------------------------------

    /** Bytes from the client, kept for the engine's reads. */
    void received(ByteBuffer data) {
        synchronized (in) {
            in.add(data);
            buffered += data.remaining();
        }
    }

    /**
     * Called on the tunnel listener's thread after a read event: while an
     * endpoint that suspended its reading leaves too much here, that thread
     * waits, the listener's queue fills, and nginx stops reading.
     */
    void awaitRoom() {
        synchronized (in) {
            while (buffered > MAX_BUFFERED && !eof && !shut.get()) {
                try {
                    in.wait(100);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /** The connection is gone: reads find its end once what came is read. */
    void ended(IOException why) {
        synchronized (in) {
            eof = true;
            in.notifyAll();
        }
        if (failure == null) {
            failure = why;
        }
        if (getError() == null) {
            setError(why);
        }
        // a write waiting for room, or in flight, fails now
        wakeWriter();
    }

    boolean isEnded() {
        synchronized (in) {
            return eof;
        }
    }

    @Override
    public int read(boolean block, byte[] b, int off, int len) throws IOException {
        return read(block, ByteBuffer.wrap(b, off, len));
    }

    @Override
    public int read(boolean block, ByteBuffer to) throws IOException {
        synchronized (in) {
            while (block && in.isEmpty() && !eof) {
                try {
                    in.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while reading an upgraded connection");
                }
            }
            int n = 0;
            while (to.hasRemaining() && !in.isEmpty()) {
                ByteBuffer b = in.peek();
                int k = Math.min(b.remaining(), to.remaining());
                ByteBuffer slice = b.duplicate();
                slice.limit(slice.position() + k);
                to.put(slice);
                b.position(b.position() + k);
                if (!b.hasRemaining()) {
                    in.poll();
                }
                n += k;
            }
            buffered -= n;
            if (n > 0) {
                in.notifyAll();
                return n;
            }
            return eof ? -1 : 0;
        }
    }

    @Override
    public boolean isReadyForRead() {
        synchronized (in) {
            return !in.isEmpty() || eof;
        }
    }

    @Override
    public void registerReadInterest() {
        // every delivery is a read event already (NginxTunnel.onMessage)
    }

    @Override
    public void setAppReadBufHandler(ApplicationBufferHandler handler) {
    }

    // -- what the engine writes ------------------------------------------------

    @Override
    protected void writeBlocking(byte[] buf, int off, int len) throws IOException {
        writeBlocking(ByteBuffer.wrap(buf, off, len));
    }

    @Override
    protected void writeBlocking(ByteBuffer from) throws IOException {
        check();
        try {
            // waits while the tunnel's send queue is full
            socket.send(ByteBuffer.wrap(copy(from)));
        } catch (IOException e) {
            fail(e);
            throw e;
        }
    }

    @Override
    protected void writeNonBlocking(byte[] buf, int off, int len) throws IOException {
        writeNonBlocking(ByteBuffer.wrap(buf, off, len));
    }

    @Override
    protected void writeNonBlocking(ByteBuffer from) throws IOException {
        check();
        inFlight.incrementAndGet();
        socket.sendAsync(ByteBuffer.wrap(copy(from)), new WebSocket.Callback() {
            @Override
            public void succeeded() {
                if (inFlight.decrementAndGet() == 0) {
                    wakeWriter();
                }
            }

            @Override
            public void failed(Throwable error) {
                fail(error instanceof IOException ? (IOException) error : new IOException(error));
                inFlight.decrementAndGet();
                wakeWriter();
            }
        });
    }

    @Override
    protected void doWrite(boolean block, ByteBuffer from) throws IOException {
        if (block) {
            writeBlocking(from);
        } else {
            writeNonBlocking(from);
        }
    }

    /** Writes keep their order in the tunnel's queue: a blocking flush has nothing to wait for. */
    @Override
    public boolean flush(boolean block) throws IOException {
        check();
        return !block && inFlight.get() > 0;
    }

    @Override
    protected boolean flushNonBlocking() throws IOException {
        return flush(false);
    }

    @Override
    public boolean hasDataToWrite() {
        return inFlight.get() > 0;
    }

    /** One non-blocking write in flight at a time: its end is the next "write possible". */
    @Override
    public boolean canWrite() {
        return inFlight.get() == 0;
    }

    @Override
    public boolean isReadyForWrite() {
        boolean ready = canWrite();
        if (!ready) {
            registerWriteInterest();
        }
        return ready;
    }

    @Override
    public void registerWriteInterest() {
        writeInterest = true;
        if (inFlight.get() == 0) {
            // the write ended meanwhile
            wakeWriter();
        }
    }

    private void wakeWriter() {
        if (writeInterest) {
            writeInterest = false;
            tunnel.dispatchLater(SocketEvent.OPEN_WRITE);
        }
    }

    private void check() throws IOException {
        IOException e = failure;
        if (e != null) {
            throw e;
        }
        if (shut.get()) {
            throw new IOException("the upgraded connection is closed");
        }
    }

    private void fail(IOException e) {
        if (failure == null) {
            failure = e;
        }
        setError(e);
    }

    private static byte[] copy(ByteBuffer from) {
        byte[] b = new byte[from.remaining()];
        from.get(b);
        return b;
    }

    // -- the connection ----------------------------------------------------------

    /** nginx closes the connection once what was written has left. */
    @Override
    public void close() {
        if (shut.compareAndSet(false, true)) {
            socket.close();
            synchronized (in) {
                in.clear();
                buffered = 0;
                in.notifyAll();
            }
        }
    }

    @Override
    public boolean isClosed() {
        return shut.get();
    }

    @Override
    protected void doClose() {
    }

    @Override
    public boolean hasAsyncIO() {
        return false;
    }

    @Override
    public boolean needSemaphores() {
        return false;
    }

    /** On the engine's threads (a WebSocket's send results, when Tomcat dispatches them). */
    @Override
    public void execute(Runnable runnable) {
        tunnel.execute(runnable);
    }

    /** A resumed read (WsFrameServer.resumeProcessing), or another event Tomcat asks for. */
    @Override
    public void processSocket(SocketEvent event, boolean dispatch) {
        tunnel.dispatchLater(event);
    }

    @Override
    protected void populateRemoteHost() {
        remoteHost = remote;
    }

    @Override
    protected void populateRemoteAddr() {
        remoteAddr = remote;
    }

    @Override
    protected void populateRemotePort() {
        remotePort = 0;
    }

    @Override
    protected void populateLocalName() {
        localName = "localhost";
    }

    @Override
    protected void populateLocalAddr() {
        localAddr = "127.0.0.1";
    }

    @Override
    protected void populateLocalPort() {
        localPort = port;
    }

    @Override
    public SendfileDataBase createSendfileData(String filename, long pos, long length) {
        return null;
    }

    @Override
    public SendfileState processSendfile(SendfileDataBase sendfileData) {
        return SendfileState.ERROR;
    }

    @Override
    public void doClientAuth(SSLSupport sslSupport) {
    }

    @Override
    public SSLSupport getSslSupport() {
        return null;
    }

    @Override
    protected <A> OperationState<A> newOperationState(boolean read, ByteBuffer[] buffers, int offset, int length,
            BlockingMode block, long timeout, TimeUnit unit, A attachment, CompletionCheck check,
            CompletionHandler<Long, ? super A> handler, Semaphore semaphore,
            VectoredIOCompletionHandler<A> completion) {
        throw new UnsupportedOperationException("no async I/O over nginx's tunnel");
    }

    /**
     * What a socket wrapper must name: an endpoint, which here never binds,
     * accepts or runs anything (nginx owns the socket).
     */
    static final class Endpoint extends AbstractEndpoint<WebSocket, Object> {
        static final Endpoint INSTANCE = new Endpoint();

        private Endpoint() {
            setUseAsyncIO(false);
        }

        @Override
        protected InetSocketAddress getLocalAddress() {
            return null;
        }

        @Override
        protected SocketProcessorBase<WebSocket> createSocketProcessor(SocketWrapperBase<WebSocket> wrapper,
                SocketEvent event) {
            throw new UnsupportedOperationException("nginx owns the socket");
        }

        @Override
        public void bind() {
        }

        @Override
        public void startInternal() {
        }

        @Override
        public void stopInternal() {
        }

        @Override
        protected Log getLog() {
            return log;
        }

        @Override
        protected void doCloseServerSocket() {
        }

        @Override
        protected Object serverSocketAccept() {
            throw new UnsupportedOperationException("nginx owns the socket");
        }

        @Override
        protected boolean setSocketOptions(Object socket) {
            return false;
        }

        @Override
        protected void destroySocket(Object socket) {
        }
    }
}
