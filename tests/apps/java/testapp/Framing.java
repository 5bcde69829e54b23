package testapp;

import java.io.ByteArrayInputStream;
import java.io.File;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import nginx.jvm.Handler;
import nginx.jvm.HeaderFilter;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * Java handlers whose responses must not break the framing of the
 * connection, chosen by the last path segment (as testapp.framing's):
 * file, no-body, status, header, stream, big. Also a rewrite and access
 * handler: it always answers.
 */
public final class Framing implements Handler {
    static String param(Request r, String name) {
        String q = r.queryString() == null ? "" : r.queryString();
        for (String pair : q.split("&")) {
            if (pair.startsWith(name + "=")) {
                return URLDecoder.decode(pair.substring(name.length() + 1), StandardCharsets.ISO_8859_1);
            }
        }
        return null;
    }

    static String param(Request r, String name, String otherwise) {
        String v = param(r, name);
        return v == null ? otherwise : v;
    }

    @Override
    public Response handle(Request r) {
        String uri = r.uri();
        switch (uri.substring(uri.lastIndexOf('/') + 1)) {
            case "file":
                return Response.of(200, "text/plain",
                        new File(param(r, "dir"), param(r, "name") + ".txt"));
            case "no-body":
                return new Response(Integer.parseInt(param(r, "code", "200")))
                        .header("Content-Length", param(r, "length", "100"));
            case "status":
                return new Response(Integer.parseInt(param(r, "code"))).body("not interim");
            case "header":
                return new Response(200).header("X-Test", param(r, "v")).body("ok");
            case "stream":
                return new Response(200).header("Content-Length", param(r, "length"))
                        .body(new ByteArrayInputStream("hello".getBytes(StandardCharsets.UTF_8)));
            case "big": {
                byte[] b = new byte[100000];
                Arrays.fill(b, (byte) 'x');
                return new Response(200).header("Content-Length", param(r, "length")).body(b);
            }
            default:
                return Response.of(404, "text/plain", "no such case");
        }
    }

    /** Sets the field ?name= (X-Test) to ?v=, the status ?code=, Content-Length ?length=. */
    public static final class Filter implements HeaderFilter {
        @Override
        public Response filter(Request r, Response response) {
            String v = param(r, "v");
            String code = param(r, "code");
            String length = param(r, "length");
            Response out = new Response(code == null ? response.status() : Integer.parseInt(code));
            for (int i = 0; i < response.headerCount(); i++) {
                String name = response.headerName(i);
                if (length == null || !name.equalsIgnoreCase("Content-Length")) {
                    out.header(name, response.headerValue(i));
                }
            }
            if (v != null) {
                out.header(param(r, "name", "X-Test"), v);
            }
            if (length != null) {
                out.header("Content-Length", length);
            }
            return out;
        }
    }
}
