package nginx.jvm.servlet.tomcat;

import java.net.InetAddress;
import java.net.UnknownHostException;

import org.apache.catalina.connector.Connector;
import org.apache.catalina.connector.Request;

/**
 * Catalina's request, with what a socket would tell and nginx knows: the
 * local address and its name. Coyote asks the processor's socket for
 * them, and ours has none, so {@code getLocalAddr()} and
 * {@code getLocalName()} were null (the Servlet TCK's getLocalAddrTest and
 * getLocalNameTest); the address is nginx's $server_addr, read only when
 * the application asks (most never do: the variable costs a hop to the
 * event loop off it), the name that address's (a reverse lookup, as
 * Tomcat's own connectors do).
 */
final class NginxRequest extends Request {
    NginxRequest(Connector connector, org.apache.coyote.Request coyoteRequest) {
        super(connector, coyoteRequest);
    }

    @Override
    public String getLocalAddr() {
        if (localAddr == null
                && getCoyoteRequest().getNote(NginxProcessor.PROCESSOR_NOTE) instanceof NginxProcessor p) {
            localAddr = p.localAddr();
        }
        return localAddr != null ? localAddr : super.getLocalAddr();
    }

    @Override
    public String getLocalName() {
        if (localName == null) {
            String addr = getLocalAddr();
            if (addr != null) {
                try {
                    // what Tomcat's own connectors give: the name of the
                    // socket's local address (a reverse lookup: the hosts
                    // file's, for a loopback address)
                    localName = InetAddress.getByName(addr).getHostName();
                } catch (UnknownHostException e) {
                    localName = addr;
                }
            }
        }
        return localName != null ? localName : super.getLocalName();
    }

    /** The Connector of TomcatEngine: Catalina's requests are {@link NginxRequest}s. */
    static Connector connector(NginxProtocol protocol) {
        return new Connector(protocol) {
            @Override
            public Request createRequest(org.apache.coyote.Request coyoteRequest) {
                return new NginxRequest(this, coyoteRequest);
            }
        };
    }
}
