package tracing;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.instrumentation.javahttpclient.JavaHttpClientTelemetry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * A GET through the JDK's HttpClient wrapped by OpenTelemetry's library
 * instrumentation (tests/test_tracing.py): its CLIENT span is a child of
 * the handler's, current on the handler's thread, and the backend gets a
 * traceparent naming it. The backend is 127.0.0.1, port ?port=.
 */
public final class Http implements Handler {
    private static volatile HttpClient client;

    private static HttpClient client() {
        HttpClient c = client;
        if (c == null) {
            c = JavaHttpClientTelemetry.create(GlobalOpenTelemetry.get())
                    .newHttpClient(HttpClient.newBuilder()
                            .connectTimeout(Duration.ofSeconds(5)).build());
            client = c;
        }
        return c;
    }

    @Override
    public Response handle(Request r) throws Exception {
        URI uri = URI.create("http://127.0.0.1:" + r.variable("arg_port") + "/backend?q=1");
        HttpResponse<String> got = client().send(
                HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        String s = "trace=" + r.traceId() + " span=" + r.spanId() + " status=" + got.statusCode()
                + " answer=" + got.body();
        return new Response(200).header("Content-Type", "text/plain").body(s.getBytes(StandardCharsets.UTF_8));
    }
}
