package nginx.jvm.servlet;

import jakarta.servlet.Servlet;
import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;
import nginx.jvm.servlet.tomcat.TomcatEngine;
import nginx.jvm.servlet.tomcat.Webapp;

/**
 * A nginx.jvm.Handler that owns an embedded Tomcat 11 and hands it every
 * request (runtime/servlet/README.md). It serves the web applications
 * {@code jvm_webapp} names and the launcher's {@code --war} (system
 * properties: {@link App#webapps}), or without one the single servlet
 * {@code -Dnginx.jvm.servlet.class} names.
 * One per worker, made when it starts;
 * serve it off the event loop ({@code jvm_mode pool}, {@code virtual} or
 * {@code coloop}): servlets block.
 */
public final class TomcatHandler implements Handler, AsyncHandler {
    private final TomcatEngine engine;

    public TomcatHandler() throws Exception {
        long t0 = System.nanoTime();
        java.nio.file.Path scratch = App.scratch("tomcat");
        java.util.List<Webapp> apps = App.webapps();
        String what;
        try {
            if (!apps.isEmpty()) {
                what = apps.stream().map(Webapp::toString).collect(java.util.stream.Collectors.joining(", "));
                String unpack = System.getProperty(App.UNPACK);
                engine = new TomcatEngine(scratch, apps,
                        unpack != null ? java.nio.file.Path.of(unpack) : scratch.resolve("webapps"));
            } else {
                Servlet servlet = App.servlet();
                what = "the servlet " + servlet.getClass().getName();
                engine = new TomcatEngine(scratch, servlet);
            }
        } catch (Exception e) {
            App.deleteTree(scratch);
            throw e;
        }
        App.atExit("Tomcat", scratch, engine::stop);
        Startup.log("Tomcat", what, t0);
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
