package nginx.jvm.servlet.jetty;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import org.eclipse.jetty.http.HttpVersion;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.server.ConnectionMetaData;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.util.Attributes;

/**
 * What Jetty knows of "the connection" of one request: what nginx told us
 * of the client's (its address after realip, TLS or not, the protocol).
 * Its Connection and EndPoint are made only when asked for (an upgrade's
 * handshake builds its connection on the endpoint): a {@link NginxEndPoint}
 * over nginx's byte tunnel, if the request is upgraded.
 */
final class NginxMetaData extends Attributes.Lazy implements ConnectionMetaData {
    private final Connector connector;
    private final HttpConfiguration config;
    private String id;
    private HttpVersion version;
    private boolean secure;
    private SocketAddress remote;
    private SocketAddress local;
    private Connection connection;

    NginxMetaData(Connector connector, HttpConfiguration config) {
        this.connector = connector;
        this.config = config;
    }

    /**
     * The "connection" of the next request: the metadata lives as long as
     * the HttpChannel made with it (which keeps servlet objects from one
     * request to the next, as a keep-alive connection's channel does), and
     * says what nginx knows of each request's client in turn.
     */
    void reset(String id, nginx.jvm.Request r, HttpVersion version) {
        clearAttributes();
        this.id = id;
        this.version = version;
        this.secure = r.isHttps();
        this.remote = InetSocketAddress.createUnresolved(r.remoteAddr(), 0);
        this.local = InetSocketAddress.createUnresolved(r.serverName(), r.serverPort());
        this.connection = null;
    }

    @Override
    public String getId() {
        return id;
    }

    @Override
    public HttpConfiguration getHttpConfiguration() {
        return config;
    }

    @Override
    public HttpVersion getHttpVersion() {
        return version;
    }

    @Override
    public String getProtocol() {
        return version.asString();
    }

    @Override
    public Connection getConnection() {
        if (connection == null) {
            connection = new NginxEndPoint(connector.getScheduler(), connector.getExecutor(), local, remote).exchange();
        }
        return connection;
    }

    @Override
    public Connector getConnector() {
        return connector;
    }

    @Override
    public boolean isPersistent() {
        return true;
    }

    @Override
    public boolean isSecure() {
        return secure;
    }

    @Override
    public SocketAddress getRemoteSocketAddress() {
        return remote;
    }

    @Override
    public SocketAddress getLocalSocketAddress() {
        return local;
    }
}
