package bench;

import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;

/** Handlers of bench/phases.py. */
public final class PhaseBench {
    private PhaseBench() {
    }

    /** jvm_access: a header check, as a token check would be. */
    public static final class Check implements Handler {
        @Override
        public Response handle(Request r) {
            return "secret".equals(r.header("x-token")) ? null
                    : Response.of(401, "text/plain", "denied");
        }
    }

    /** jvm_async content: one subrequest, its body answered as it came. */
    public static final class OneCall implements AsyncHandler {
        @Override
        public void handle(Request r, Responder responder) {
            r.subrequest("/internal/data").whenComplete((resp, e) -> {
                if (e != null) {
                    responder.raise(e);
                } else {
                    responder.respond(Response.of(resp.status(), "text/plain", resp.body()));
                }
            });
        }
    }
}
