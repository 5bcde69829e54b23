package testapp;

import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/** A jvm_init Runnable, and (as a Handler) what it set. */
public final class Init implements Runnable, Handler {
    static volatile String value = "not initialized";
    static volatile int runs;

    @Override
    public void run() {
        runs++;
        value = "initialized by java";
    }

    @Override
    public Response handle(Request r) {
        return Response.of(200, "text/plain", value + " " + runs);
    }
}
