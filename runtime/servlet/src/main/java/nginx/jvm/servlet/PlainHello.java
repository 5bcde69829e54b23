package nginx.jvm.servlet;

import java.nio.charset.StandardCharsets;
import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;

/** The reference of the spike's measurements: HelloServlet's answer from a plain nginx.jvm.Handler. */
public final class PlainHello implements Handler, AsyncHandler {
    private static final byte[] HELLO = "hello".getBytes(StandardCharsets.US_ASCII);

    @Override
    public Response handle(Request request) {
        return new Response(200).header("Content-Type", "text/plain").header("X-Servlet", "hello").body(HELLO);
    }

    /** With --async: the same, answered through the responder on the handler's thread. */
    @Override
    public void handle(Request request, Responder responder) {
        responder.respond(handle(request));
    }
}
