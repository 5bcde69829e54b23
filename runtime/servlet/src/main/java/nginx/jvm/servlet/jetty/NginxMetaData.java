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
 * There is no Jetty Connection nor EndPoint behind it.
 */
final class NginxMetaData extends Attributes.Lazy implements ConnectionMetaData {
    private final Connector connector;
    private final HttpConfiguration config;
    private final String id;
    private final HttpVersion version;
    private final boolean secure;
    private final SocketAddress remote;
    private final SocketAddress local;

    NginxMetaData(Connector connector, HttpConfiguration config, String id, nginx.jvm.Request r, HttpVersion version) {
        this.connector = connector;
        this.config = config;
        this.id = id;
        this.version = version;
        this.secure = r.isHttps();
        this.remote = InetSocketAddress.createUnresolved(r.remoteAddr(), 0);
        this.local = InetSocketAddress.createUnresolved(r.serverName(), r.serverPort());
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
        return null;
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
