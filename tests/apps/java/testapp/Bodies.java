package testapp;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.List;
import nginx.jvm.BodyWriter;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/** Every body kind of the Java API, chosen by the last path segment. */
public final class Bodies implements Handler {
    @Override
    public Response handle(Request r) {
        String uri = r.uri();
        String kind = uri.substring(uri.lastIndexOf('/') + 1);
        String q = r.queryString() == null ? "" : r.queryString();
        switch (kind) {
            case "string":
                return Response.of(200, "text/plain; charset=utf-8", "h\u00e9llo java");
            case "latin1":
                return Response.of(200, "text/plain; charset=ISO-8859-1", "h\u00e9llo");
            case "bytes": {
                byte[] b = new byte[256];
                for (int i = 0; i < b.length; i++) {
                    b[i] = (byte) i;
                }
                return Response.of(200, "application/octet-stream", b);
            }
            case "file":
                return Response.of(200, "application/octet-stream",
                        new File(q.substring("path=".length())));
            case "stream":
                return Response.of(200, "application/octet-stream",
                        new PatternStream(Long.parseLong(q.substring("n=".length()))));
            case "closes":
                return Response.of(200, "text/plain", String.valueOf(PatternStream.closes()));
            case "iterable":
                return Response.of(200, "text/plain",
                        List.of("one,", "two,".getBytes(StandardCharsets.UTF_8), "three"));
            case "writer":
                return Response.of(200, "text/plain", (BodyWriter) out -> {
                    for (int i = 0; i < 3; i++) {
                        out.write(("written " + i + "\n").getBytes(StandardCharsets.UTF_8));
                        out.flush();
                    }
                });
            case "created":
                return new Response(201)
                        .header("X-Test", "one")
                        .header("Set-Cookie", "a=1")
                        .header("Set-Cookie", "b=2")
                        .body("created");
            case "nobody":
                return new Response(204);
            case "null":
                return null;
            default:
                return Response.of(404, "text/plain", "no body kind " + kind);
        }
    }
}
