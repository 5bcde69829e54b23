package nginx.jvm.servlet.jetty;

import jakarta.servlet.Servlet;
import java.nio.file.Path;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import nginx.jvm.servlet.EngineUri;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.ServletHolder;
import org.eclipse.jetty.http.HostPortHttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpURI;
import org.eclipse.jetty.http.HttpVersion;
import org.eclipse.jetty.http.MetaData;
import org.eclipse.jetty.http.UriCompliance;
import org.eclipse.jetty.server.HttpChannel;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * A Jetty 12.1 Server with ee11 servlets whose requests come from nginx:
 * each goes through Jetty's own HttpChannel (the state machine all of
 * Jetty's protocols share) with {@link NginxStream} as its stream, on the
 * calling thread.
 */
public final class JettyEngine {
    private final Server server;
    private final HttpConfiguration config = new HttpConfiguration();
    private final NginxConnector connector;
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
        final NginxMetaData metaData = new NginxMetaData(connector, config);
        final HttpChannel channel = channels.newHttpChannel(metaData);
    }

    public JettyEngine(Path base, Servlet servlet) throws Exception {
        // Jetty's own threads: async dispatches and timeouts only, never a request of nginx's
        QueuedThreadPool threads = new QueuedThreadPool(8, 1);
        threads.setName("jetty");
        server = new Server(threads);
        // nginx writes Date and Server
        config.setSendDateHeader(false);
        config.setSendServerVersion(false);
        config.setSendXPoweredBy(false);
        // nginx already accepted the path and decoded it ($uri): what reaches
        // Jetty is that path encoded again, so the shapes Jetty would refuse
        // (%25, %5C: "ambiguous") are nginx's decision, not the client's
        config.setUriCompliance(UriCompliance.UNSAFE);
        connector = new NginxConnector(server, config);
        server.addConnector(connector);
        ServletContextHandler context = new ServletContextHandler("/");
        context.setTempDirectory(base.toFile());
        ServletHolder holder = new ServletHolder("app", servlet);
        holder.setAsyncSupported(true);
        context.addServlet(holder, "/");
        context.getServletHandler().setDecodeAmbiguousURIs(true);
        server.setHandler(context);
        server.start();
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
        NginxStream stream = new NginxStream(channel, id, r, responder, () -> idle.offer(free));
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
            r.onAbort(() -> stream.clientLeft(server.getThreadPool()));
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

    public void stop() throws Exception {
        server.stop();
    }
}
