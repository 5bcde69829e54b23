package nginx.jvm.servlet;

import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;
import nginx.jvm.servlet.tomcat.TomcatEngine;

/**
 * A nginx.jvm.Handler that owns an embedded Tomcat 11 and hands it every
 * request (the spike: runtime/servlet/README.md). One per worker, made when it starts;
 * serve it off the event loop ({@code jvm_mode pool}, {@code virtual} or
 * {@code coloop}): servlets block.
 */
public final class TomcatHandler implements Handler, AsyncHandler {
    private final TomcatEngine engine;

    public TomcatHandler() throws Exception {
        long t0 = System.nanoTime();
        java.nio.file.Path scratch = App.scratch("tomcat");
        engine = new TomcatEngine(scratch, App.servlet());
        App.atExit("Tomcat", scratch, engine::stop);
        Startup.log("Tomcat", t0);
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
