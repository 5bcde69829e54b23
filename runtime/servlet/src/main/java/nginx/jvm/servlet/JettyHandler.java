package nginx.jvm.servlet;

import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.servlet.jetty.JettyEngine;

/**
 * A nginx.jvm.Handler that owns a Jetty 12.1 Server (ee11 servlets) and
 * hands it every request (the spike: docs/servlet.md). One per worker;
 * serve it off the event loop: servlets block.
 */
public final class JettyHandler implements Handler {
    private final JettyEngine engine;

    public JettyHandler() throws Exception {
        long t0 = System.nanoTime();
        engine = new JettyEngine(App.scratch("jetty"), App.servlet());
        Startup.log("Jetty", t0);
    }

    @Override
    public Response handle(Request request) throws Exception {
        return engine.serve(request);
    }
}
