package nginx.jvm.servlet.jetty;

import jakarta.servlet.Servlet;
import java.nio.file.Path;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.ServletHolder;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * A Jetty 12.1 Server with ee11 servlets, one servlet at "/", whose
 * requests come from nginx through {@link NginxConnector}.
 */
public final class JettyEngine {
    private final Server server;
    private final NginxConnector connector;

    public JettyEngine(Path base, Servlet servlet) throws Exception {
        // Jetty's own threads: async dispatches and timeouts only, never a request of nginx's
        QueuedThreadPool threads = new QueuedThreadPool(8, 1);
        threads.setName("jetty");
        server = new Server(threads);
        connector = new NginxConnector(server, new HttpConfiguration());
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

    /** {@link NginxConnector#serve}. */
    public nginx.jvm.Response serve(nginx.jvm.Request r, nginx.jvm.Responder responder) throws Exception {
        return connector.serve(r, responder);
    }

    public void stop() throws Exception {
        server.stop();
    }
}
