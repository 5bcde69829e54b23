package tracing;

import java.nio.charset.StandardCharsets;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * A subrequest to ?to= (a proxy_pass location): what its upstream answered.
 * It names no OpenTelemetry class: with tracing off, none is loaded.
 */
public final class Sub implements Handler {
    @Override
    public Response handle(Request r) {
        Response sub = r.subrequest(r.variable("arg_to")).join();
        String s = "span=" + r.spanId() + " upstream=" + new String((byte[]) sub.body(), StandardCharsets.UTF_8);
        return new Response(200).header("Content-Type", "text/plain").body(s.getBytes(StandardCharsets.UTF_8));
    }
}
