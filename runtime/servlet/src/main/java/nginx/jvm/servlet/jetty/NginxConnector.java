package nginx.jvm.servlet.jetty;

import org.eclipse.jetty.server.AbstractConnector;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Server;

/**
 * The Server's connector when nginx is the server: no acceptor thread, no
 * socket, no EndPoint. It is there because Jetty's HttpChannel reaches the
 * Server, the buffer pool, the scheduler and the HttpConfiguration through
 * a connector; its connection factory is never used to parse anything.
 */
final class NginxConnector extends AbstractConnector {
    NginxConnector(Server server, HttpConfiguration config) {
        super(server, null, null, null, 0, new HttpConnectionFactory(config));
    }

    @Override
    protected void accept(int acceptorID) {
        throw new UnsupportedOperationException("nginx accepts the connections");
    }

    @Override
    public Object getTransport() {
        return null;
    }
}
