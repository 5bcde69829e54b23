package nginx.jvm.servlet.jetty;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import nginx.jvm.servlet.EngineUri;
import org.eclipse.jetty.http.HostPortHttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpURI;
import org.eclipse.jetty.http.HttpVersion;
import org.eclipse.jetty.http.MetaData;
import org.eclipse.jetty.http.UriCompliance;
import org.eclipse.jetty.server.AbstractConnector;
import org.eclipse.jetty.server.HttpChannel;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Server;

/**
 * A Jetty Server's connector when nginx is the server: no acceptor thread,
 * no socket, no EndPoint (but an upgraded request's, over nginx's byte
 * tunnel: {@link NginxEndPoint}). Each request nginx parsed goes through Jetty's
 * own HttpChannel (the state machine all of Jetty's protocols share) with
 * {@link NginxStream} as its stream, on the calling thread, into whatever
 * handlers the Server has: a ServletContextHandler of ours
 * ({@link JettyEngine}) or a Spring Boot application's web application
 * (nginx.jvm.servlet.boot.seam). Its connection factory is never used to
 * parse anything: Jetty's channel reaches the Server, the buffer pool, the
 * scheduler and the HttpConfiguration through a connector.
 */
public class NginxConnector extends AbstractConnector {
    private final HttpConfiguration config;
    private final HttpChannel.Factory channels = new HttpChannel.DefaultFactory();
    private final AtomicLong ids = new AtomicLong();
    /**
     * Channels free for the next request: a channel keeps its servlet
     * objects (ServletChannel, the servlet request and response) from one
     * request to the next, as it does for the requests of one keep-alive
     * connection in a standalone Jetty. One that failed is dropped.
     */
    private final ConcurrentLinkedQueue<Channel> idle = new ConcurrentLinkedQueue<>();

    private final class Channel {
        final NginxMetaData metaData = new NginxMetaData(NginxConnector.this, config);
        final HttpChannel channel = channels.newHttpChannel(metaData);
    }

    /**
     * {@code config} is changed for nginx: Date and Server are nginx's to
     * write, and the URI compliance is UNSAFE. nginx already accepted the
     * path and decoded it ($uri): what reaches Jetty is that path encoded
     * again, so the shapes Jetty would refuse (%25, %5C: "ambiguous") are
     * nginx's decision, not the client's. The servlet handlers must decode
     * ambiguous URIs too ({@code setDecodeAmbiguousURIs}).
     */
    public NginxConnector(Server server, HttpConfiguration config) {
        super(server, null, null, null, 0, new HttpConnectionFactory(config));
        config.setSendDateHeader(false);
        config.setSendServerVersion(false);
        config.setSendXPoweredBy(false);
        config.setUriCompliance(UriCompliance.UNSAFE);
        this.config = config;
    }

    @Override
    protected void accept(int acceptorID) {
        throw new UnsupportedOperationException("nginx accepts the connections");
    }

    @Override
    public Object getTransport() {
        return null;
    }

    /**
     * Any thread: serves one request on the calling thread; with a
     * responder answers through it and returns null at once (an async
     * servlet answers later, from Jetty's threads or its own).
     */
    public nginx.jvm.Response serve(nginx.jvm.Request r, nginx.jvm.Responder responder) throws Exception {
        String id = Long.toString(ids.incrementAndGet());
        HttpVersion version = version(r.protocol());
        Channel c = idle.poll();
        if (c == null) {
            c = new Channel();
        }
        c.metaData.reset(id, r, version);
        HttpChannel channel = c.channel;
        Channel free = c;
        NginxStream stream = new NginxStream(channel, id, r, responder, getExecutor(), () -> idle.offer(free));
        channel.setHttpStream(stream);
        HttpFields.Mutable fields = HttpFields.build(r.headerCount() + 1);
        HostPortHttpField host = null;
        for (int i = 0, n = r.headerCount(); i < n; i++) {
            String name = r.headerName(i);
            if (host == null && name.equalsIgnoreCase("host")) {
                // parsed, as Jetty's own parser gives it
                host = new HostPortHttpField(r.headerValue(i));
                fields.add(host);
            } else {
                fields.add(name, r.headerValue(i));
            }
        }
        String path = EngineUri.encode(EngineUri.decodedPath(r));
        String q = r.queryString();
        // the server's name and port are the Host field's (Jetty refuses a
        // URI whose authority differs from it), else nginx's server and the
        // connection's local port, as the Servlet API says
        HttpURI.Mutable u = HttpURI.build().scheme(r.scheme());
        if (host != null && !host.getHost().isEmpty()) {
            u.host(host.getHost());
            if (host.getPort() > 0) {
                u.port(host.getPort());
            }
        } else if (!r.serverName().isEmpty()) {
            u.host(r.serverName()).port(r.serverPort());
        }
        HttpURI uri = u.path(path).query(q).asImmutable();
        long length = -1;
        String cl = r.header("content-length");
        if (cl != null) {
            length = Long.parseLong(cl.trim());
        }
        MetaData.Request meta = new MetaData.Request(System.nanoTime(), r.method(), uri, version, fields, length);
        Runnable task = channel.onRequest(meta);
        channel.getRequest().setAttribute(EngineUri.RAW_URI_ATTRIBUTE, r.uri());
        task.run();
        if (!stream.isOver()) {
            // async: the client may leave while the servlet waits
            r.onAbort(() -> stream.clientLeft(getExecutor()));
        }
        return responder == null ? stream.answer(60_000) : null;
    }

    private static HttpVersion version(String protocol) {
        switch (protocol) {
            case "HTTP/1.0":
                return HttpVersion.HTTP_1_0;
            case "HTTP/2.0":
                return HttpVersion.HTTP_2;
            case "HTTP/3.0":
                return HttpVersion.HTTP_3;
            default:
                return HttpVersion.HTTP_1_1;
        }
    }
}
