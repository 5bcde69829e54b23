package nginx.jvm.servlet.boot.seam;

import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import nginx.jvm.servlet.boot.Bridge;
import nginx.jvm.servlet.tomcat.NginxProtocol;
import org.apache.coyote.Adapter;
import org.apache.coyote.ProtocolHandler;
import org.apache.coyote.UpgradeProtocol;
import org.apache.tomcat.util.net.SSLHostConfig;

/**
 * The protocol of a Spring Boot application's own Connector beneath nginx
 * (Boot makes it from this class's name: {@link NginxConnectorCustomizer}):
 * {@link NginxProtocol}, which listens on nothing, and when the Connector
 * starts, a {@link BootEngine} over the Connector's adapter handed to
 * BootHandler through the {@link Bridge}; when it stops, taken back.
 */
public final class BootProtocol implements ProtocolHandler {
    private final NginxProtocol protocol = new NginxProtocol();
    private volatile BootEngine engine;

    @Override
    public void start() {
        protocol.start();
        BootEngine e = new BootEngine(protocol.getAdapter());
        engine = e;
        Bridge.engine(e);
    }

    @Override
    public void stop() {
        protocol.stop();
        BootEngine e = engine;
        if (e != null) {
            engine = null;
            if (Bridge.active()) {
                Bridge.engine(null);
            }
            e.stop();
        }
    }

    @Override
    public Adapter getAdapter() {
        return protocol.getAdapter();
    }

    @Override
    public void setAdapter(Adapter adapter) {
        protocol.setAdapter(adapter);
    }

    @Override
    public Executor getExecutor() {
        return protocol.getExecutor();
    }

    @Override
    public void setExecutor(Executor executor) {
        protocol.setExecutor(executor);
    }

    @Override
    public ScheduledExecutorService getUtilityExecutor() {
        return protocol.getUtilityExecutor();
    }

    @Override
    public void setUtilityExecutor(ScheduledExecutorService utilityExecutor) {
        protocol.setUtilityExecutor(utilityExecutor);
    }

    @Override
    public void init() {
        protocol.init();
    }

    @Override
    public void pause() {
        protocol.pause();
    }

    @Override
    public void resume() {
        protocol.resume();
    }

    @Override
    public void destroy() {
        protocol.destroy();
    }

    @Override
    public void closeServerSocketGraceful() {
        protocol.closeServerSocketGraceful();
    }

    @Override
    public long awaitConnectionsClose(long waitMillis) {
        return protocol.awaitConnectionsClose(waitMillis);
    }

    @Override
    public boolean isSendfileSupported() {
        return protocol.isSendfileSupported();
    }

    @Override
    public void addSslHostConfig(SSLHostConfig sslHostConfig) {
        protocol.addSslHostConfig(sslHostConfig);
    }

    @Override
    public void addSslHostConfig(SSLHostConfig sslHostConfig, boolean replace) {
        protocol.addSslHostConfig(sslHostConfig, replace);
    }

    @Override
    public SSLHostConfig[] findSslHostConfigs() {
        return protocol.findSslHostConfigs();
    }

    @Override
    public void addUpgradeProtocol(UpgradeProtocol upgradeProtocol) {
        protocol.addUpgradeProtocol(upgradeProtocol);
    }

    @Override
    public UpgradeProtocol[] findUpgradeProtocols() {
        return protocol.findUpgradeProtocols();
    }

    @Override
    public String getId() {
        return protocol.getId();
    }

    /**
     * Connector.getLocalPort reads it (Boot logs it, and makes it
     * {@code local.server.port}): -1, no port of its own.
     */
    public int getLocalPort() {
        return -1;
    }
}
