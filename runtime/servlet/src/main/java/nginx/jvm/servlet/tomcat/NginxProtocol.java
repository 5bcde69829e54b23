package nginx.jvm.servlet.tomcat;

import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import org.apache.coyote.Adapter;
import org.apache.coyote.ProtocolHandler;
import org.apache.coyote.UpgradeProtocol;
import org.apache.tomcat.util.net.SSLHostConfig;

/**
 * The Connector's protocol when nginx is the server: it listens on nothing,
 * starts no acceptor, poller or worker thread. Requests come in through
 * {@link NginxProcessor#serve} on the thread nginx-jvm runs the handler on;
 * this only keeps the adapter the Connector gives it (its CoyoteAdapter).
 * A non-null {@link #getId} is what lets a Connector start without a port.
 */
public final class NginxProtocol implements ProtocolHandler {
    private volatile Adapter adapter;
    private Executor executor;
    private ScheduledExecutorService utilityExecutor;

    @Override
    public Adapter getAdapter() {
        return adapter;
    }

    @Override
    public void setAdapter(Adapter adapter) {
        this.adapter = adapter;
    }

    @Override
    public Executor getExecutor() {
        return executor;
    }

    @Override
    public void setExecutor(Executor executor) {
        this.executor = executor;
    }

    @Override
    public ScheduledExecutorService getUtilityExecutor() {
        return utilityExecutor;
    }

    @Override
    public void setUtilityExecutor(ScheduledExecutorService utilityExecutor) {
        this.utilityExecutor = utilityExecutor;
    }

    @Override
    public void init() {
    }

    @Override
    public void start() {
    }

    @Override
    public void pause() {
    }

    @Override
    public void resume() {
    }

    @Override
    public void stop() {
    }

    @Override
    public void destroy() {
    }

    @Override
    public void closeServerSocketGraceful() {
    }

    @Override
    public long awaitConnectionsClose(long waitMillis) {
        return waitMillis;
    }

    /**
     * Yes: Tomcat's DefaultServlet then names a large static file rather
     * than copy it through the response, and a whole one goes out as
     * nginx's own file body (sendfile); {@link NginxProcessor} sends it.
     */
    @Override
    public boolean isSendfileSupported() {
        return true;
    }

    @Override
    public void addSslHostConfig(SSLHostConfig sslHostConfig) {
        throw new UnsupportedOperationException("nginx does TLS");
    }

    @Override
    public void addSslHostConfig(SSLHostConfig sslHostConfig, boolean replace) {
        throw new UnsupportedOperationException("nginx does TLS");
    }

    @Override
    public SSLHostConfig[] findSslHostConfigs() {
        return new SSLHostConfig[0];
    }

    @Override
    public void addUpgradeProtocol(UpgradeProtocol upgradeProtocol) {
        throw new UnsupportedOperationException("nginx does HTTP/2 and HTTP/3");
    }

    @Override
    public UpgradeProtocol[] findUpgradeProtocols() {
        return new UpgradeProtocol[0];
    }

    @Override
    public String getId() {
        return "nginx-jvm";
    }
}
