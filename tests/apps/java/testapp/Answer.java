package testapp;

import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/** Answers ?status=N (200) after ?sleep=MS (0), with the worker's pid in X-Pid. */
public final class Answer implements Handler {
    @Override
    public Response handle(Request r) throws Exception {
        int status = 200;
        long sleep = 0;
        String q = r.queryString() == null ? "" : r.queryString();
        for (String kv : q.split("&")) {
            if (kv.startsWith("status=")) {
                status = Integer.parseInt(kv.substring(7));
            } else if (kv.startsWith("sleep=")) {
                sleep = Long.parseLong(kv.substring(6));
            }
        }
        if (sleep > 0) {
            Thread.sleep(sleep);
        }
        return Response.of(status, "text/plain", "answered " + status)
                .header("X-Pid", Long.toString(ProcessHandle.current().pid()));
    }
}
