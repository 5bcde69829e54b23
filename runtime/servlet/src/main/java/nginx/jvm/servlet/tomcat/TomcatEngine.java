package nginx.jvm.servlet.tomcat;

import jakarta.servlet.Servlet;
import java.nio.file.Path;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.catalina.Context;
import org.apache.catalina.LifecycleException;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;

/**
 * An embedded Tomcat whose only Connector is {@link NginxProtocol}: the
 * Server, Service, Engine, Host and Context of a standalone Tomcat, with no
 * port of its own (no shutdown port either: embedded Tomcat sets -1).
 */
public final class TomcatEngine {
    private final Tomcat tomcat = new Tomcat();
    private final NginxProtocol protocol = new NginxProtocol();
    private final ConcurrentLinkedQueue<NginxProcessor> idle = new ConcurrentLinkedQueue<>();

    public TomcatEngine(Path base, Servlet servlet) throws LifecycleException {
        tomcat.setBaseDir(base.toString());
        Connector connector = new Connector(protocol);
        tomcat.setConnector(connector);
        Context context = tomcat.addContext("", base.toString());
        Tomcat.addServlet(context, "app", servlet).setAsyncSupported(true);
        context.addServletMappingDecoded("/", "app");
        tomcat.start();
    }

    /**
     * Any thread: serves one request on the calling thread; with a
     * responder answers through it (and returns null).
     */
    public nginx.jvm.Response serve(nginx.jvm.Request r, nginx.jvm.Responder responder) throws Exception {
        NginxProcessor p = idle.poll();
        if (p == null) {
            p = new NginxProcessor(protocol.getAdapter());
        }
        try {
            return p.serve(r, responder);
        } finally {
            p.recycle();
            idle.offer(p);
        }
    }

    public void stop() throws LifecycleException {
        tomcat.stop();
        tomcat.destroy();
    }
}
