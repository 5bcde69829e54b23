package example;

import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * A plain Java handler: no Clojure needed. Compile against nginx-jvm.jar and
 * serve it:
 *
 * <pre>
 * javac -cp build/nginx-jvm.jar -d build/examples/java examples/java/src/example/Hello.java
 * bin/nginx-jvm run --handler example.Hello --classpath build/examples/java
 * </pre>
 *
 * One instance serves every request of a worker, on the worker's event loop:
 * keep it free of per-request state, and never block in it.
 */
public final class Hello implements Handler {
    private static final String TEXT = "text/plain; charset=utf-8";

    @Override
    public Response handle(Request request) throws Exception {
        String path = request.uri();
        String method = request.method();

        if (path.equals("/") && method.equals("GET")) {
            return Response.of(200, TEXT, "Hello from Java: try /hello, /headers,"
                    + " /count and POST /echo\n");
        }
        if (path.equals("/hello") && method.equals("GET")) {
            String name = request.queryString() == null ? "Java" : request.queryString();
            return Response.of(200, TEXT, "Hello, " + name + "!");
        }
        if (path.equals("/headers") && method.equals("GET")) {
            // headers(): lower-case names, repeated fields joined
            String body = request.headers().entrySet().stream()
                    .map(e -> e.getKey() + ": " + e.getValue() + "\n")
                    .collect(Collectors.joining());
            return Response.of(200, TEXT, body);
        }
        if (path.equals("/count") && method.equals("GET")) {
            // An Iterable body is sent element by element, each one flushed.
            List<String> lines = IntStream.rangeClosed(1, 5)
                    .mapToObj(i -> i + "\n").collect(Collectors.toList());
            return Response.of(200, TEXT, lines)
                    .header("Cache-Control", "no-store");
        }
        if (path.equals("/echo") && method.equals("POST")) {
            // The request body as nginx read it, in memory or from its temp
            // file; small bodies can simply be read whole.
            byte[] body = request.body().readAllBytes();
            String type = request.header("Content-Type");
            return Response.of(200, type != null ? type : "application/octet-stream", body)
                    .header("X-Echo-Length", Integer.toString(body.length));
        }
        return Response.of(404, TEXT, "not found: " + path + "\n");
    }
}
