package testapp;

import nginx.jvm.AsyncHandler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;

/** Reads variables from a thread of its own, after the handler returned. */
public final class AsyncVars implements AsyncHandler {
    @Override
    public void handle(Request r, Responder responder) {
        Thread t = new Thread(() -> {
            try {
                String a = r.variable("arg_a");
                String unknown;
                try {
                    r.variable("no_such_variable_here");
                    unknown = "no exception";
                } catch (IllegalArgumentException e) {
                    unknown = e.getMessage();
                }
                responder.respond(Response.of(200, "text/plain",
                        "a=" + a + " unknown=" + unknown + " thread="
                        + Thread.currentThread().getName()));
            } catch (Throwable e) {
                responder.raise(e);
            }
        }, "user-thread");
        t.start();
    }
}
