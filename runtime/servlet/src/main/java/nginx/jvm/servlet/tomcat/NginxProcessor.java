package nginx.jvm.servlet.tomcat;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.locks.ReentrantLock;
import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.ServletConnection;
import nginx.jvm.Responder;
import nginx.jvm.servlet.Answer;
import nginx.jvm.servlet.EngineUri;
import org.apache.coyote.AbstractProcessor;
import org.apache.coyote.ActionCode;
import org.apache.coyote.Adapter;
import org.apache.coyote.ContinueResponseTiming;
import org.apache.coyote.ErrorState;
import org.apache.coyote.InputBuffer;
import org.apache.coyote.OutputBuffer;
import org.apache.coyote.UpgradeToken;
import org.apache.juli.logging.Log;
import org.apache.juli.logging.LogFactory;
import org.apache.tomcat.util.buf.ByteChunk;
import org.apache.tomcat.util.buf.MessageBytes;
import org.apache.tomcat.util.http.MimeHeaders;
import org.apache.tomcat.util.net.AbstractEndpoint.Handler.SocketState;
import org.apache.tomcat.util.net.ApplicationBufferHandler;
import org.apache.tomcat.util.net.ServletConnectionImpl;
import org.apache.tomcat.util.net.SocketEvent;
import org.apache.tomcat.util.net.SocketWrapperBase;

/**
 * Coyote's side of one request at a time, filled from nginx-jvm's Request
 * rather than parsed from a socket: what AjpProcessor does with an AJP
 * message, done with fields nginx already parsed. Tomcat's CoyoteAdapter
 * then maps and runs the servlet as for any connector.
 *
 * <p>The response goes to nginx through an {@link Answer}: whole, or
 * streamed from the moment the servlet flushes. Async servlets: the events
 * AbstractProcessor would hand to a socket (complete, dispatch, timeout)
 * run Coyote's own processing loop on the engine's async threads.
 *
 * <p>Used by one thread at a time; TomcatHandler keeps a few for reuse,
 * which is what keeps Catalina's request and response objects (notes of
 * Coyote's) from being made anew for every request.
 */
public final class NginxProcessor extends AbstractProcessor {
    private static final Log log = LogFactory.getLog(NginxProcessor.class);

    /**
     * What a processor needs of the engine that keeps it: TomcatEngine's
     * own Tomcat, or a Spring Boot application's (nginx.jvm.servlet.boot).
     */
    public interface Host {
        /** The exchange is over: recycle the processor and keep it for the next. */
        void release(NginxProcessor p);

        /** Runs an async servlet's event (complete, dispatch, timeout). */
        void execute(Runnable event);

        /** An async request begins or ends waiting: its timeout is checked meanwhile. */
        void waiting(NginxProcessor p, boolean yes);

        /** How long a synchronous handler waits for an async servlet. */
        long syncWaitMillis();
    }

    private InputStream body;
    private boolean bodyEnded;
    private final byte[] readBuffer = new byte[16 * 1024];
    /** Non-blocking reads: the bytes read ahead to answer {@code available}, or why the read failed. */
    private ByteBuffer readAhead;
    private IOException readFailure;
    /** Non-blocking writes the client could not take yet. */
    private final HeldWrites held = new HeldWrites();
    private long written;
    private boolean swallow;
    private Answer answer;
    private nginx.jvm.Request current;
    private final Host host;
    private final ReentrantLock lock = new ReentrantLock();
    private boolean finished;
    private String connectionId;
    private boolean secure;

    NginxProcessor(Adapter adapter, TomcatEngine engine) {
        this(adapter, new Host() {
            @Override
            public void release(NginxProcessor p) {
                engine.release(p);
            }

            @Override
            public void execute(Runnable event) {
                engine.execute(event);
            }

            @Override
            public void waiting(NginxProcessor p, boolean yes) {
                engine.waiting(p, yes);
            }

            @Override
            public long syncWaitMillis() {
                return engine.syncWaitMillis();
            }
        });
    }

    public NginxProcessor(Adapter adapter, Host host) {
        super(adapter);
        this.host = host;
        request.setInputBuffer(new In());
        response.setOutputBuffer(new Out());
        request.setNote(PROCESSOR_NOTE, this);
    }

    /**
     * The Coyote request's note that names its processor: what lets
     * {@link NginxRequest} ask nginx for what Coyote would ask a socket.
     * Coyote keeps notes across requests (Catalina's own request is note 1).
     */
    static final int PROCESSOR_NOTE = 31;

    /**
     * The address of the interface the request came in on (nginx's
     * $server_addr), asked of nginx only when the application asks for it
     * ({@code getLocalAddr}: off the event loop, a hop to it); null once
     * the request is over.
     */
    String localAddr() {
        nginx.jvm.Request r = current;
        if (r == null) {
            return null;
        }
        try {
            return r.variable("server_addr");
        } catch (IllegalStateException e) {
            return null;
        }
    }

    /**
     * Runs the request through Tomcat on this thread. Without a responder
     * answers the whole response (waiting for an async servlet to
     * complete); with one, answers it through the responder (streamed when
     * the servlet flushes or writes past its buffer) and returns null.
     * The processor goes back to its engine when the exchange is over:
     * here, or on the thread of the async event that ends it.
     */
    public nginx.jvm.Response serve(nginx.jvm.Request r, Responder responder) throws IOException {
        Answer a = new Answer(r, responder);
        answer = a;
        current = r;
        SocketState state = SocketState.CLOSED;
        lock.lock();
        try {
            state = process(null, SocketEvent.OPEN_READ);
            if (state == SocketState.LONG) {
                // under the lock: no async event can end the exchange before it is counted
                host.waiting(this, true);
                r.onAbort(() -> clientLeft(a));
            }
        } finally {
            lock.unlock();
            if (state != SocketState.LONG && answer == a) {
                // over, or Coyote threw: answered (a 500 at worst) and free
                end();
            }
        }
        if (state == SocketState.LONG) {
            // this processor may already serve another request: only the answer is ours
            return responder == null ? a.await(host.syncWaitMillis()) : null;
        }
        return a.response();
    }

    /**
     * Coyote's own loop (AbstractProcessorLight.process) with no socket:
     * OPEN_READ with no request under way is service(); with an async
     * request under way, a dispatch; then the async post-processing.
     * One event at a time per processor.
     */
    private SocketState run(SocketEvent event) throws IOException {
        lock.lock();
        try {
            return process(null, event);
        } finally {
            lock.unlock();
        }
    }

    /**
     * What AbstractProcessor asks a socket to do for an async request
     * (complete, dispatch, a timeout, an error): done on the engine's
     * async threads instead.
     */
    @Override
    protected void processSocketEvent(SocketEvent event, boolean dispatch) {
        if (event == SocketEvent.ERROR && request.getAttribute(RequestDispatcher.ERROR_EXCEPTION) == null) {
            // dispatch(ERROR) would ask the socket for its error
            request.setAttribute(RequestDispatcher.ERROR_EXCEPTION, new IOException("the request failed"));
        }
        host.execute(() -> {
            SocketState state;
            try {
                state = run(event);
            } catch (Throwable t) {
                log.error("an async servlet event (" + event + ") failed", t);
                state = SocketState.CLOSED;
            }
            if (state != SocketState.LONG) {
                host.waiting(this, false);
                end();
            }
        });
    }

    /**
     * The client of an async request left (nginx-jvm's abort thread).
     * With a ReadListener or WriteListener set, as a connector's socket
     * error does: an ERROR event, whose dispatch calls the listener's
     * onError (then AsyncListener.onError). Without one, an I/O error
     * state, which sends the request the ERROR event itself. (The error
     * state first would lose the listener's onError: Coyote's asyncError
     * clears the non-blocking listeners before its ERROR dispatch.)
     * Ignored when the processor serves another request by now.
     */
    private void clientLeft(Answer a) {
        host.execute(() -> {
            SocketState state;
            lock.lock();
            try {
                if (answer != a || !isAsync()) {
                    return;
                }
                IOException left = new IOException("the client left");
                if (request.getReadListener() == null && response.getWriteListener() == null) {
                    setErrorState(ErrorState.CLOSE_CONNECTION_NOW, left);
                    return;
                }
                request.setAttribute(RequestDispatcher.ERROR_EXCEPTION, left);
                state = process(null, SocketEvent.ERROR);
            } catch (Throwable t) {
                log.error("a non-blocking servlet's error event failed", t);
                state = SocketState.CLOSED;
            } finally {
                lock.unlock();
            }
            if (state != SocketState.LONG) {
                host.waiting(this, false);
                end();
            }
        });
    }

    /** {@code AsyncContext.start}: on the engine's async threads, as on a connector's executor. */
    @Override
    protected void execute(Runnable runnable) {
        host.execute(runnable);
    }

    /** The exchange is over: the answer is given (a 500 if the engine gave none), the processor free. */
    private void end() {
        Answer a = answer;
        if (a != null && !finished) {
            a.fail(failure());
        }
        host.release(this);
    }

    /**
     * Why the engine ended the response without finishing it (an error
     * state: the servlet threw after commit, a non-blocking listener
     * failed, the async timeout with the response committed): the
     * exception the engine has, if any, as the cause.
     */
    private IOException failure() {
        Object cause = request.getAttribute(RequestDispatcher.ERROR_EXCEPTION);
        return new IOException("the servlet engine ended the response: " + getErrorState(),
                cause instanceof Throwable ? (Throwable) cause : null);
    }

    @Override
    protected SocketState service(SocketWrapperBase<?> none) throws IOException {
        nginx.jvm.Request r = current;
        fill(r);
        try {
            getAdapter().service(request, response);
        } catch (Throwable t) {
            log.error("the servlet engine failed on " + r.method() + " " + r.uri(), t);
            response.setStatus(500);
            setErrorState(ErrorState.CLOSE_CLEAN, t);
        }
        if (isAsync()) {
            return SocketState.LONG;
        }
        return finishNow();
    }

    /**
     * {@code HttpServletRequest.upgrade} (Tomcat's WebSocket among others):
     * the handler takes the connection once the 101 has left (NginxTunnel).
     */
    @Override
    protected void doHttpUpgrade(UpgradeToken token) {
        // the 101 the response commits with goes out as a byte tunnel
        answer.tunnel(new NginxTunnel(token, host::execute, current.remoteAddr(), current.serverPort()));
    }

    @Override
    protected SocketState dispatchEndRequest() throws IOException {
        return finishNow();
    }

    /** CLOSED: not OPEN, which would make Coyote's loop look for a pipelined request. */
    private SocketState finishNow() throws IOException {
        if (!finished && getErrorState().isIoAllowed()) {
            action(ActionCode.COMMIT, null);
            finishResponse();
        }
        return SocketState.CLOSED;
    }

    private void fill(nginx.jvm.Request r) {
        request.markStartTime();
        request.setMethod(r.method());
        request.protocol().setString(r.protocol());
        String path = EngineUri.decodedPath(r);
        // set as Strings: CoyoteAdapter then takes decodedURI as decoded and
        // normalised already (its "in-memory protocol handler" case)
        request.requestURI().setString(EngineUri.encode(path));
        request.decodedURI().setString(path);
        String q = r.queryString();
        if (q != null) {
            request.queryString().setString(q);
        }
        secure = r.isHttps();
        request.scheme().setString(r.scheme());
        String remote = r.remoteAddr();
        request.remoteAddr().setString(remote);
        request.peerAddr().setString(remote);
        request.remoteHost().setString(remote);
        request.setLocalPort(r.serverPort());
        MimeHeaders headers = request.getMimeHeaders();
        int n = r.headerCount();
        for (int i = 0; i < n; i++) {
            headers.addValue(r.headerName(i)).setString(r.headerValue(i));
        }
        request.setAttribute(EngineUri.RAW_URI_ATTRIBUTE, r.uri());
        // the server's name and port as the Host field says (populateHost and
        // populatePort when it has none), as every connector of Tomcat's does
        MessageBytes host = headers.getValue("host");
        if (host != null) {
            host.toBytes();     // Tomcat's Host parser reads bytes
        }
        parseHost(host);
        body = r.body();
        bodyEnded = !r.hasBody();
        connectionId = null;
    }

    @Override
    protected void prepareResponse() {
        response.setCommitted(true);
        // Catalina keeps these apart from the header fields until commit
        MimeHeaders headers = response.getMimeHeaders();
        String contentType = response.getContentType();
        if (contentType != null) {
            headers.setValue("Content-Type").setString(contentType);
        }
        String contentLanguage = response.getContentLanguage();
        if (contentLanguage != null) {
            headers.setValue("Content-Language").setString(contentLanguage);
        }
        long contentLength = response.getContentLengthLong();
        if (contentLength >= 0) {
            headers.setValue("Content-Length").setLong(contentLength);
        }
        answer.commit(response.getStatus());
        for (int i = 0, n = headers.size(); i < n; i++) {
            answer.field(headers.getName(i).toString(), headers.getValue(i).toString());
        }
    }

    @Override
    protected void populateHost() {
        request.serverName().setString(current.serverName());
    }

    @Override
    protected void populatePort() {
        request.setServerPort(current.serverPort());
    }

    @Override
    protected void finishResponse() {
        finished = true;
        if (swallow || !getErrorState().isIoAllowed()) {
            // the engine's CLOSE_NOW (ErrorReportValve once the response is
            // committed): a socket's connector stops writing and closes, so
            // the client sees the body cut short, never its end
            answer.fail(failure());
            return;
        }
        // before the client can have the whole answer and ask again
        SharedSessionValve.saveBeforeTheEnd();
        String file = (String) request.getAttribute(SENDFILE_FILENAME);
        if (file != null) {
            // Tomcat's DefaultServlet chose to let the connector send the
            // file (isSendfileSupported) and wrote none of it
            try {
                answer.file(new java.io.File(file), (Long) request.getAttribute(SENDFILE_START),
                        (Long) request.getAttribute(SENDFILE_END));
            } catch (IOException e) {
                log.warn("cannot send " + file + ": " + e);
                answer.fail(e);
                return;
            }
        }
        try {
            // a WriteListener's last writes wait for the client, as a blocking write's would
            held.drainAll(answer);
        } catch (IOException e) {
            answer.fail(e);
            return;
        }
        answer.finish();
    }

    /** Where a servlet's file to send is (Coyote's names, Tomcat 10.1 and 11 alike). */
    private static final String SENDFILE_FILENAME = "org.apache.tomcat.sendfile.filename";
    private static final String SENDFILE_START = "org.apache.tomcat.sendfile.start";
    private static final String SENDFILE_END = "org.apache.tomcat.sendfile.end";

    @Override
    protected void ack(ContinueResponseTiming continueResponseTiming) {
        // nginx answers "100 Continue" itself when it reads the body
    }

    @Override
    protected void earlyHints() {
        // not passed on: nginx-jvm's Response has no 103
    }

    @Override
    protected void flush() throws IOException {
        answer.flush();
    }

    /**
     * With {@code doRead} (a ReadListener's {@code isReady}), reads ahead
     * when a read would not block, as a socket's non-blocking read does:
     * that is also how the end of the body is found, which
     * {@code onAllDataRead} waits for. A read that fails answers 1, so that
     * the servlet reads and gets the failure.
     */
    @Override
    protected int available(boolean doRead) {
        if (readAhead != null) {
            return readAhead.remaining();
        }
        if (readFailure != null) {
            return 1;
        }
        if (bodyEnded) {
            return 0;
        }
        try {
            if (!doRead) {
                return body.available();
            }
            if (!current.bodyReadable(null)) {
                return 0;
            }
            int n = body.read(readBuffer, 0, readBuffer.length);
            if (n < 0) {
                bodyEnded = true;
                return 0;
            }
            readAhead = ByteBuffer.wrap(readBuffer, 0, n);
            return n;
        } catch (IOException e) {
            readFailure = e;
            return 1;
        }
    }

    @Override
    protected void setRequestBody(ByteChunk chunk) {
        // FORM authentication's replay of the saved request body
        body = new ByteArrayInputStream(chunk.getBytes(), chunk.getStart(), chunk.getLength());
        bodyEnded = false;
    }

    @Override
    protected void setSwallowResponse() {
        swallow = true;
    }

    @Override
    protected void disableSwallowRequest() {
        // nginx read (or discards) the body: nothing to swallow here
    }

    @Override
    protected boolean isRequestBodyFullyRead() {
        return bodyEnded && readAhead == null;
    }

    /**
     * A ReadListener waits for more body ({@code jvm_request_buffering off}):
     * nginx-jvm says when a read would not block, and the read event runs
     * Coyote's dispatch ({@code onDataAvailable}, {@code onAllDataRead}).
     */
    @Override
    protected void registerReadInterest() {
        Answer a = answer;
        Runnable ready = () -> nonBlockingEvent(a, SocketEvent.OPEN_READ);
        if (current.bodyReadable(ready)) {
            // came meanwhile: no callback will
            ready.run();
        }
    }

    /**
     * A WriteListener's {@code isReady}: true while nothing waits for the
     * client and the answer's queue has room; otherwise the write event
     * comes when it has ({@code onWritePossible}).
     */
    @Override
    protected boolean isReadyForWrite() {
        try {
            if (held.drain(answer) && answer.writable(null)) {
                return true;
            }
        } catch (IOException e) {
            // the client left: the servlet's next write fails and tells it
            held.clear();
            return true;
        }
        awaitWritable();
        return false;
    }

    private void awaitWritable() {
        Answer a = answer;
        Runnable room = () -> nonBlockingEvent(a, SocketEvent.OPEN_WRITE);
        if (a.writable(room)) {
            room.run();
        }
    }

    /**
     * A read or write event of a ReadListener or WriteListener, on the
     * engine's async threads as other async events; ignored once the
     * processor serves another request.
     */
    private void nonBlockingEvent(Answer a, SocketEvent event) {
        host.execute(() -> {
            SocketState state;
            lock.lock();
            try {
                if (answer != a || !isAsync()) {
                    return;
                }
                state = process(null, event);
            } catch (Throwable t) {
                log.error("a non-blocking servlet event (" + event + ") failed", t);
                state = SocketState.CLOSED;
            } finally {
                lock.unlock();
            }
            if (state != SocketState.LONG) {
                host.waiting(this, false);
                end();
            }
        });
    }

    @Override
    protected boolean isTrailerFieldsReady() {
        return true;
    }

    @Override
    protected ServletConnection getServletConnection() {
        if (connectionId == null) {
            connectionId = Integer.toHexString(System.identityHashCode(request));
        }
        return new ServletConnectionImpl(connectionId, request.protocol().toString(), null, secure);
    }

    /** Before a write event reaches the WriteListener: true while some of its writes still wait. */
    @Override
    protected boolean flushBufferedWrite() throws IOException {
        if (held.drain(answer)) {
            return false;
        }
        awaitWritable();
        return true;
    }

    @Override
    protected Log getLog() {
        return log;
    }

    @Override
    public void pause() {
    }

    @Override
    public ByteBuffer getLeftoverInput() {
        return null;
    }

    @Override
    public void recycle() {
        getAdapter().checkRecycled(request, response);
        super.recycle();
        request.recycle();
        response.recycle();
        body = null;
        readAhead = null;
        readFailure = null;
        held.clear();
        written = 0;
        swallow = false;
        finished = false;
        answer = null;
        current = null;
    }

    private final class In implements InputBuffer {
        @Override
        public int doRead(ApplicationBufferHandler handler) throws IOException {
            ByteBuffer ahead = readAhead;
            if (ahead != null) {
                readAhead = null;
                handler.setByteBuffer(ahead);
                return ahead.remaining();
            }
            if (readFailure != null) {
                throw readFailure;
            }
            if (bodyEnded) {
                return -1;
            }
            int n = body.read(readBuffer, 0, readBuffer.length);
            if (n < 0) {
                bodyEnded = true;
                return -1;
            }
            handler.setByteBuffer(ByteBuffer.wrap(readBuffer, 0, n));
            return n;
        }

        @Override
        public int available() {
            return NginxProcessor.this.available(false);
        }
    }

    private final class Out implements OutputBuffer {
        @Override
        public int doWrite(ByteBuffer chunk) throws IOException {
            if (!response.isCommitted()) {
                // the first write commits, as every connector's output does
                action(ActionCode.COMMIT, null);
            }
            int n = chunk.remaining();
            if (swallow) {
                chunk.position(chunk.limit());
            } else if (response.getWriteListener() != null) {
                // non-blocking: never waits; isReady() is false while any is held
                held.add(chunk);
                held.drain(answer);
            } else {
                answer.write(chunk);
            }
            written += n;
            return n;
        }

        @Override
        public long getBytesWritten() {
            return written;
        }
    }
}
