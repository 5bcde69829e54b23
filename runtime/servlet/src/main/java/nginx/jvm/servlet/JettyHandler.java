package nginx.jvm.servlet;

import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;
import nginx.jvm.servlet.jetty.JettyEngine;

/**
 * A nginx.jvm.Handler that owns a Jetty 12.1 Server (ee11 servlets) and
 * hands it every request (the spike: runtime/servlet/README.md). One per worker;
 * serve it off the event loop: servlets block.
 */
public final class JettyHandler implements Handler, AsyncHandler {
    private final JettyEngine engine;

    public JettyHandler() throws Exception {
        long t0 = System.nanoTime();
        java.nio.file.Path scratch = App.scratch("jetty");
        engine = new JettyEngine(scratch, App.servlet());
        App.atExit("Jetty", scratch, engine::stop);
        Startup.log("Jetty", "the servlet " + System.getProperty("nginx.jvm.servlet.class", HelloServlet.class.getName()), t0);
    }

    @Override
    public Response handle(Request request) throws Exception {
        return engine.serve(request, null);
    }

    /**
     * With {@code jvm_async on} ({@code --async}): the same on the same
     * thread, but a response the servlet flushes, or writes past its
     * buffer, streams to the client as written.
     */
    @Override
    public void handle(Request request, Responder responder) throws Exception {
        engine.serve(request, responder);
    }
}
