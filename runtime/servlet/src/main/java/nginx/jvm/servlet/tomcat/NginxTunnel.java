package nginx.jvm.servlet.tomcat;

import java.io.EOFException;
import java.nio.ByteBuffer;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.Lock;
import jakarta.servlet.http.HttpUpgradeHandler;
import jakarta.servlet.http.WebConnection;
import nginx.jvm.WebSocket;
import nginx.jvm.WebSocketListener;
import org.apache.coyote.UpgradeToken;
import org.apache.coyote.http11.upgrade.InternalHttpUpgradeHandler;
import org.apache.coyote.http11.upgrade.UpgradeProcessorBase;
import org.apache.coyote.http11.upgrade.UpgradeProcessorExternal;
import org.apache.coyote.http11.upgrade.UpgradeProcessorInternal;
import org.apache.juli.logging.Log;
import org.apache.juli.logging.LogFactory;
import org.apache.tomcat.ContextBind;
import org.apache.tomcat.InstanceManager;
import org.apache.tomcat.util.ExceptionUtils;
import org.apache.tomcat.util.net.AbstractEndpoint.Handler.SocketState;
import org.apache.tomcat.util.net.SocketEvent;

/**
 * A connection a servlet upgraded ({@code HttpServletRequest.upgrade}:
 * Tomcat's own WebSocket, which Spring's WebSocket and STOMP use, or any
 * {@code HttpUpgradeHandler}), carried by nginx-jvm's byte tunnel
 * ({@code Response.tunnel}): nginx sends the servlet's 101, then hands
 * over the client's bytes as they come and writes the engine's as they
 * are. Tomcat's upgrade processor runs over it unmodified, as its
 * connection handler would run it over a socket (AbstractProtocol's
 * UPGRADING, UPGRADED, SUSPENDED and CLOSED states), with
 * {@link NginxSocketWrapper} for the socket.
 *
 * <p>Events run one at a time per connection under the wrapper's lock, as
 * Tomcat runs a socket's: bytes that came, on the tunnel listener's thread
 * (so a slow endpoint holds that thread, the listener's queue fills, and
 * nginx stops reading from the client); writes possible again and a
 * resumed read, on the engine's threads.
 */
final class NginxTunnel implements WebSocketListener {
    private static final Log log = LogFactory.getLog(NginxTunnel.class);

    private final UpgradeToken token;
    private final Executor executor;
    private final String remoteAddr;
    private final int localPort;
    private NginxSocketWrapper wrapper;
    private UpgradeProcessorBase processor;
    // under the wrapper's lock
    private boolean suspended;
    private boolean over;

    NginxTunnel(UpgradeToken token, Executor executor, String remoteAddr, int localPort) {
        this.token = token;
        this.executor = executor;
        this.remoteAddr = remoteAddr;
        this.localPort = localPort;
    }

    /** The 101 has left: the upgrade handler starts, as after Coyote's UPGRADING. */
    @Override
    public void onOpen(WebSocket socket) {
        wrapper = new NginxSocketWrapper(socket, this, remoteAddr, localPort);
        HttpUpgradeHandler handler = token.getHttpUpgradeHandler();
        Lock lock = wrapper.lock();
        lock.lock();
        try {
            processor = handler instanceof InternalHttpUpgradeHandler
                    ? new UpgradeProcessorInternal(wrapper, token, null)
                    : new UpgradeProcessorExternal(wrapper, token, null);
            ClassLoader old = bind();
            try {
                handler.init((WebConnection) processor);
            } finally {
                unbind(old);
            }
        } catch (Throwable t) {
            ExceptionUtils.handleThrowable(t);
            log.error("the upgraded connection could not start", t);
            end();
        } finally {
            lock.unlock();
        }
    }

    /** Bytes from the client: kept for the engine's reads, then its read event. */
    @Override
    public void onMessage(WebSocket socket, ByteBuffer data) {
        wrapper.received(data);
        dispatch(SocketEvent.OPEN_READ, false);
        wrapper.awaitRoom();
    }

    /**
     * The connection is gone (the client left, or it closed after what the
     * engine asked): a read finds its end, as on a socket, and the engine
     * reports it (a WebSocket's onError and onClose with 1006).
     */
    @Override
    public void onClose(WebSocket socket, int code, String reason) {
        if (wrapper == null) {
            return;
        }
        wrapper.ended(new EOFException("the connection closed (" + code + ")"));
        dispatch(SocketEvent.OPEN_READ, false);
    }

    /** On the engine's threads. */
    void execute(Runnable r) {
        executor.execute(r);
    }

    /** An event from the engine's own threads (a write possible, a read resumed). */
    void dispatchLater(SocketEvent event) {
        try {
            executor.execute(() -> dispatch(event, event == SocketEvent.OPEN_READ));
        } catch (RuntimeException e) {
            // the engine stops: the worker closes its connections
            log.debug("an upgraded connection's event was refused: " + e);
        }
    }

    /** Runs one event through the upgrade processor, as Tomcat's SocketProcessor does. */
    private void dispatch(SocketEvent event, boolean resume) {
        Lock lock = wrapper.lock();
        lock.lock();
        try {
            if (over || processor == null) {
                return;
            }
            if (suspended && event == SocketEvent.OPEN_READ) {
                if (wrapper.isEnded()) {
                    // gone while its endpoint did not read: an error, as a
                    // socket's, since a suspended reader takes no read event
                    event = SocketEvent.ERROR;
                } else if (!resume) {
                    // the endpoint suspended reading: the bytes wait for its resume
                    return;
                }
                suspended = false;
            }
            SocketState state;
            try {
                state = processor.process(wrapper, event);
            } catch (Throwable t) {
                ExceptionUtils.handleThrowable(t);
                log.error("an upgraded connection's " + event + " failed", t);
                state = SocketState.CLOSED;
            }
            if (state == SocketState.SUSPENDED) {
                suspended = true;
            } else if (state == SocketState.CLOSED) {
                end();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * The upgraded connection is over: the handler destroyed as
     * AbstractProtocol's cleanUpIfUpgrade does, and the tunnel closed
     * (nginx closes the connection once what was written has left).
     */
    private void end() {
        if (over) {
            return;
        }
        over = true;
        HttpUpgradeHandler handler = token.getHttpUpgradeHandler();
        InstanceManager instances = token.getInstanceManager();
        ClassLoader old = bind();
        try {
            handler.destroy();
        } catch (Throwable t) {
            ExceptionUtils.handleThrowable(t);
            log.warn("an upgrade handler's destroy failed", t);
        } finally {
            if (instances != null) {
                try {
                    instances.destroyInstance(handler);
                } catch (Throwable t) {
                    ExceptionUtils.handleThrowable(t);
                    log.warn("an upgrade handler could not be released", t);
                }
            }
            unbind(old);
        }
        if (wrapper != null) {
            wrapper.close();
        }
    }

    /** The application's class loader for the handler's init and destroy (none bound without a context). */
    private ClassLoader bind() {
        ContextBind bind = token.getContextBind();
        return token.getInstanceManager() == null || bind == null ? null : bind.bind(false, null);
    }

    private void unbind(ClassLoader old) {
        ContextBind bind = token.getContextBind();
        if (token.getInstanceManager() != null && bind != null) {
            bind.unbind(false, old);
        }
    }
}
