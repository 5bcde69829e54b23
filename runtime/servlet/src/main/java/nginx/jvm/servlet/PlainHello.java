package nginx.jvm.servlet;

import java.nio.charset.StandardCharsets;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/** The reference of the spike's measurements: HelloServlet's answer from a plain nginx.jvm.Handler. */
public final class PlainHello implements Handler {
    private static final byte[] HELLO = "hello".getBytes(StandardCharsets.US_ASCII);

    @Override
    public Response handle(Request request) {
        return new Response(200).header("Content-Type", "text/plain").header("X-Servlet", "hello").body(HELLO);
    }
}
