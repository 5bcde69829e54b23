package testapp;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import nginx.jvm.AsyncHandler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;

/** The Java API's async handler: answers from another thread, 50 ms later. */
public class AsyncJava implements AsyncHandler {
    @Override
    public void handle(Request request, Responder responder) {
        CompletableFuture.delayedExecutor(50, TimeUnit.MILLISECONDS).execute(() -> {
            if ("raise".equals(request.queryString())) {
                responder.raise(new IllegalStateException("raised by AsyncJava"));
            } else {
                responder.respond(Response.of(200, "text/plain", "async java " + request.uri()));
            }
        });
    }
}
