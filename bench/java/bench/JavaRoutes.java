package bench;

import java.io.File;
import java.io.InputStream;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * The benchmark suite's routes as a plain Java handler (no Clojure on the
 * class path): the same bytes as bench/ring/bench/routes.clj.
 */
public final class JavaRoutes implements Handler {
    private static final File FILE =
        new File(System.getProperty("bench.file", "bench/index.html"));

    @Override
    public Response handle(Request request) throws Exception {
        switch (request.uri()) {
            case "/hello":
                return Response.of(200, "text/plain", "Hello, Clojure!");
            case "/json":
                return Response.of(200, "application/json", json());
            case "/file":
                return Response.of(200, "text/html", FILE);
            case "/echo":
                return Response.of(200, "application/octet-stream", body(request));
            case "/headers":
                return Response.of(200, "text/plain", Integer.toString(headersLength(request)));
            default:
                return Response.of(404, "text/plain", "not found");
        }
    }

    // About 1 KB of JSON, built anew for every request.
    private static String json() {
        StringBuilder sb = new StringBuilder(1100).append("{\"items\":[");
        for (int i = 0; i < 13; i++) {
            if (i > 0) {
                sb.append(',');
            }
            sb.append("{\"id\":").append(i).append(",\"name\":\"item-").append(i)
              .append("\",\"price\":").append(i * 25)
              .append(",\"in_stock\":").append(i % 2 == 0)
              .append(",\"tags\":[\"bench\",\"json\"]}");
        }
        return sb.append("],\"count\":13}").toString();
    }

    private static byte[] body(Request request) throws Exception {
        if (!request.hasBody()) {
            return new byte[0];
        }
        try (InputStream in = request.body()) {
            return in.readAllBytes();
        }
    }

    private static int headersLength(Request request) {
        int total = 0;
        for (int i = 0; i < 10; i++) {
            String value = request.header("x-bench-" + i);
            if (value != null) {
                total += value.length();
            }
        }
        return total;
    }
}
