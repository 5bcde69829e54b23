package testapp;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.HeaderFilter;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;
import nginx.jvm.VariableHandler;
import nginx.jvm.WebSocketListener;

/**
 * The doors test (tests/test_doors.py): each handler does what an ordinary
 * application does, passing a query parameter, already URL-decoded (?v=),
 * on to the door ?d= names, with nothing checked.
 */
public final class Doors {
    private Doors() {
    }

    static String door(Request r) {
        return r.variable("arg_d");
    }

    static String v(Request r) {
        String v = r.variable("arg_v");
        return v == null ? "" : URLDecoder.decode(v, StandardCharsets.ISO_8859_1);
    }

    /** Content: the response's header fields. */
    public static final class Content implements Handler {
        @Override
        public Response handle(Request r) {
            String v = v(r);
            switch (door(r)) {
                case "hv":
                    return Response.of(200, "text/plain", "ok").header("X-Door", "a" + v + "b");
                case "hn":
                    return Response.of(200, "text/plain", "ok").header("X-D" + v, "1");
                case "loc":
                    return new Response(302).header("Location", "/r?" + v);
                case "cookie":
                    return Response.of(200, "text/plain", "ok").header("Set-Cookie", "s=a" + v + "b; Path=/");
                case "ctype":
                    return Response.of(200, "text/plain; x=a" + v + "b", "ok");
                case "ws":
                    return Response.upgrade(new WebSocketListener() { })
                            .header("X-Door", "a" + v + "b");
                case "stream":
                    return new Response(200).header("X-Door", "a" + v + "b")
                            .body(Arrays.asList("o", "k"));
                default:
                    return Response.of(404, "text/plain", "no such door");
            }
        }
    }

    /** jvm_rewrite or jvm_access: a response of the phase. */
    public static final class PhaseResponse implements Handler {
        @Override
        public Response handle(Request r) {
            String v = v(r);
            if ("loc".equals(door(r))) {
                return new Response(302).header("Location", "/r?" + v);
            }
            return Response.of(401, "text/plain", "no")
                    .header("WWW-Authenticate", "Basic realm=\"a" + v + "b\"");
        }
    }

    /** jvm_header_filter: a field added, by value or by name. */
    public static final class Filter implements HeaderFilter {
        @Override
        public Response filter(Request r, Response resp) {
            Response out = new Response(resp.status());
            for (int i = 0; i < resp.headerCount(); i++) {
                out.header(resp.headerName(i), resp.headerValue(i));
            }
            String v = v(r);
            if ("fn".equals(door(r))) {
                return out.header("X-D" + v, "1");
            }
            return out.header("X-Door", "a" + v + "b");
        }
    }

    /** jvm_set. */
    public static final class Var implements VariableHandler {
        @Override
        public String value(Request r) {
            return "a" + v(r) + "b";
        }
    }

    /** jvm_rewrite: the request's variables, URI, args and header fields. */
    public static final class Rewrite implements Handler {
        @Override
        public Response handle(Request r) {
            String v = v(r);
            switch (door(r)) {
                case "args":
                    r.setUri("/up/args");
                    r.setVariable("args", "a=" + v);
                    break;
                case "uri":
                    r.setUri("/up/uri/" + v);
                    break;
                case "setvar":
                    r.setVariable("dv_java", "a" + v + "b");
                    break;
                case "hdr":
                    r.setHeader("X-Door", "a" + v + "b");
                    break;
                case "hdrn":
                    r.setHeader("X-D" + v, "1");
                    break;
                default:
                    return Response.of(404, "text/plain", "no such door");
            }
            return null;
        }
    }

    /** jvm_async on: a subrequest to the upstream, its parts from ?v=. */
    public static final class Sub implements AsyncHandler {
        @Override
        public void handle(Request r, Responder responder) {
            String v = v(r);
            String method = "GET", uri = "/up/sub", args = null;
            Map<String, String> headers = new LinkedHashMap<>();
            switch (door(r)) {
                case "sm":
                    method = "GET" + v;
                    break;
                case "su":
                    uri = "/up/sub/" + v;
                    break;
                case "sa":
                    args = "a=" + v;
                    break;
                case "shn":
                    headers.put("X-D" + v, "1");
                    break;
                case "shv":
                    headers.put("X-Door", "a" + v + "b");
                    break;
                default:
                    responder.respond(Response.of(404, "text/plain", "no such door"));
                    return;
            }
            r.subrequest(method, uri, args, headers, null).whenComplete((sub, e) -> {
                if (e != null) {
                    responder.raise(e);
                } else {
                    responder.respond(Response.of(200, "text/plain", "sub " + sub.status()));
                }
            });
        }
    }
}
