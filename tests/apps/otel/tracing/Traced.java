package tracing;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Scope;
import java.nio.charset.StandardCharsets;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * Handlers of tests/test_tracing.py, written against the OpenTelemetry API
 * only (compiled with build/otel-lib): what a handler makes joins the
 * request's trace. Each answers the ids it saw, as "name=value" words.
 */
public final class Traced implements Handler {
    @Override
    public Response handle(Request r) {
        String current = Span.current().getSpanContext().getSpanId();
        Span child = GlobalOpenTelemetry.getTracer("testapp").spanBuilder("child-work").startSpan();
        try (Scope s = child.makeCurrent()) {
            child.setAttribute("testapp.work", "done");
        } finally {
            child.end();
        }
        return text("trace=" + r.traceId() + " span=" + r.spanId() + " current=" + current
                + " child=" + child.getSpanContext().getSpanId() + " traceparent=" + r.traceparent());
    }

    static Response text(String s) {
        return new Response(200).header("Content-Type", "text/plain")
                .body(s.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Answers after ?ms= milliseconds: its client may be gone by then. A
     * child span "slow-started" as it starts and "slow-done" just before
     * it returns say to the test when it runs and when it is over.
     */
    public static final class Slow implements Handler {
        @Override
        public Response handle(Request r) throws InterruptedException {
            GlobalOpenTelemetry.getTracer("testapp").spanBuilder("slow-started").startSpan().end();
            Thread.sleep(Long.parseLong(r.variable("arg_ms")));
            GlobalOpenTelemetry.getTracer("testapp").spanBuilder("slow-done").startSpan().end();
            return text("slept");
        }
    }

    /** Throws: its span's status is ERROR, the request's 500. */
    public static final class Fails implements Handler {
        @Override
        public Response handle(Request r) {
            throw new IllegalStateException("traced failure");
        }
    }
}
