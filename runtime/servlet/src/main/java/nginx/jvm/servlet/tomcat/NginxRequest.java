package nginx.jvm.servlet.tomcat;

import org.apache.catalina.connector.Connector;
import org.apache.catalina.connector.Request;

/**
 * Catalina's request, with what a socket would tell and nginx knows: the
 * local address. Coyote asks the processor's socket for it, and ours has
 * none, so {@code getLocalAddr()} was null; it is nginx's $server_addr,
 * read only when the application asks (most never do: the variable costs
 * a hop to the event loop off it).
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
