package testapp;

import java.io.FileWriter;
import java.io.IOException;
import java.io.Writer;
import java.util.Map;
import nginx.jvm.Handler;
import nginx.jvm.HeaderFilter;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.VariableHandler;

/** Handlers of the rewrite, access, header filter, log and jvm_set tests. */
public final class Phases {
    private Phases() {
    }

    static String thread() {
        Thread t = Thread.currentThread();
        return t.getName().isEmpty() ? "virtual" : t.getName();
    }

    /** Access: X-Token "secret" passes; ?user=banned is 403; else 401. */
    public static final class Auth implements Handler {
        @Override
        public Response handle(Request r) {
            if ("banned".equals(r.variable("arg_user"))) {
                return Response.of(403, "text/plain", "banned by " + thread());
            }
            if ("secret".equals(r.header("x-token"))) {
                return null;
            }
            return Response.of(401, "text/plain", "denied")
                    .header("WWW-Authenticate", "Bearer realm=\"test\"");
        }
    }

    /** Rewrite: /old/X goes to /new/X?from=old; /old/away redirects. */
    public static final class Rewrite implements Handler {
        @Override
        public Response handle(Request r) {
            String uri = r.variable("uri");
            if (uri.equals("/old/away")) {
                return new Response(302).header("Location", "/elsewhere");
            }
            r.setUri("/new/" + uri.substring("/old/".length()));
            r.setVariable("args", "from=old");
            return null;
        }
    }

    /**
     * Content: for each name of ?n=a,b: "name=value" ("name=null" for none,
     * "name!ExceptionClass: message" when it fails); ?set=name:value sets a
     * variable first; the handler's thread last.
     */
    public static final class Vars implements Handler {
        @Override
        public Response handle(Request r) {
            StringBuilder sb = new StringBuilder();
            String set = r.variable("arg_set");
            if (set != null) {
                String[] kv = set.split(":", 2);
                try {
                    r.setVariable(kv[0], kv[1]);
                } catch (RuntimeException e) {
                    sb.append("set!").append(e.getClass().getSimpleName()).append(": ")
                            .append(e.getMessage()).append('\n');
                }
            }
            String names = r.variable("arg_n");
            if (names != null) {
                for (String n : names.split(",")) {
                    try {
                        String v = r.variable(n);
                        sb.append(n).append('=').append(v).append('\n');
                    } catch (RuntimeException e) {
                        sb.append(n).append('!').append(e.getClass().getSimpleName()).append(": ")
                                .append(e.getMessage()).append('\n');
                    }
                }
                try {
                    Map<String, String> all = r.variables(names.split(",")[0], "request_method");
                    sb.append("batch=").append(all).append('\n');
                } catch (RuntimeException e) {
                    sb.append("batch!").append(e.getMessage()).append('\n');
                }
            }
            sb.append("uri=").append(r.uri()).append('\n');
            sb.append("query=").append(r.queryString()).append('\n');
            sb.append("thread=").append(thread()).append('\n');
            return Response.of(200, "text/plain", sb.toString());
        }
    }

    /** Header filter: marks, drops X-Drop, ETag and Last-Modified; ?teapot: 418. */
    public static final class Filter implements HeaderFilter {
        @Override
        public Response filter(Request r, Response resp) {
            Response out = new Response("1".equals(r.variable("arg_teapot")) ? 418 : resp.status());
            for (int i = 0; i < resp.headerCount(); i++) {
                String n = resp.headerName(i);
                if (n.equalsIgnoreCase("x-drop") || n.equalsIgnoreCase("etag")
                        || n.equalsIgnoreCase("last-modified")) {
                    continue;
                }
                if (n.equalsIgnoreCase("content-type")) {
                    out.header(n, "text/x-filtered");
                    continue;
                }
                out.header(n, resp.headerValue(i));
            }
            out.header("X-Filtered", "status " + resp.status() + " on " + thread());
            out.header("X-Multi", "a");
            out.header("X-Multi", "b");
            return out;
        }
    }

    /** A header filter that throws. */
    public static final class FilterThrows implements HeaderFilter {
        @Override
        public Response filter(Request r, Response resp) {
            throw new IllegalStateException("filter-boom-marker");
        }
    }

    /** Log: one line per request into the file of -Dtestapp.log. */
    public static final class Log implements Handler {
        @Override
        public Response handle(Request r) throws IOException {
            String status;
            try {
                status = r.variable("status");
            } catch (IllegalStateException e) {
                status = "gone";        // off the loop: the request is over
            }
            synchronized (Log.class) {
                try (Writer w = new FileWriter(System.getProperty("testapp.log"), true)) {
                    w.write("java " + r.uri() + " " + r.status() + " " + r.bytesSent() + " "
                            + status + " " + thread() + "\n");
                }
            }
            return null;
        }
    }

    /** jvm_set: "v-" and the X-V header; none without it; X-V "boom" throws. */
    public static final class Var implements VariableHandler {
        @Override
        public String value(Request r) {
            String v = r.header("x-v");
            if ("boom".equals(v)) {
                throw new IllegalStateException("var-boom-marker");
            }
            return v == null ? null : "v-" + v;
        }
    }
}
