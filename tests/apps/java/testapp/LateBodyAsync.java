package testapp;

import nginx.jvm.AsyncHandler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;

/** LateBody's asynchronous twin: a thread of its own reads the body after ?sleep= ms, then answers. */
public final class LateBodyAsync implements AsyncHandler {
    @Override
    public void handle(Request r, Responder responder) {
        String tag = LateBody.param(r, "tag");
        LateBody.record(tag, "ran");
        long ms = LateBody.number(r, "sleep");
        Thread t = new Thread(() -> {
            LateBody.sleep(ms);
            String s = LateBody.summary(r.body());
            LateBody.record(tag, s);
            responder.respond(Response.of(200, "text/plain", s));
        });
        t.setDaemon(true);
        t.start();
    }
}
