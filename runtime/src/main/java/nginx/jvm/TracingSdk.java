package nginx.jvm;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.metrics.InstrumentType;
import io.opentelemetry.sdk.metrics.data.AggregationTemporality;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.export.CollectionRegistration;
import io.opentelemetry.sdk.metrics.export.MetricReader;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The OpenTelemetry SDK behind {@link Tracing}, loaded only when tracing is
 * on. The SDK is configured by its own autoconfiguration (otel.* properties,
 * OTEL_* variables) and made the global one, so that a handler's spans made
 * through GlobalOpenTelemetry join the request's trace. Spans leave through
 * the SDK's BatchSpanProcessor: its bounded queue drops (never blocks) when
 * the collector is slow or gone, and its own count of dropped spans is read
 * here, through a metric reader of our own, for the error log.
 */
final class TracingSdk {
    private static final AttributeKey<String> METHOD = AttributeKey.stringKey("http.request.method");
    private static final AttributeKey<String> PATH = AttributeKey.stringKey("url.path");
    private static final AttributeKey<String> QUERY = AttributeKey.stringKey("url.query");
    private static final AttributeKey<String> SCHEME = AttributeKey.stringKey("url.scheme");
    private static final AttributeKey<String> SERVER = AttributeKey.stringKey("server.address");
    private static final AttributeKey<Long> PORT = AttributeKey.longKey("server.port");
    private static final AttributeKey<String> CLIENT = AttributeKey.stringKey("client.address");
    private static final AttributeKey<String> PROTOCOL = AttributeKey.stringKey("network.protocol.version");
    private static final AttributeKey<String> AGENT = AttributeKey.stringKey("user_agent.original");
    private static final AttributeKey<Long> STATUS = AttributeKey.longKey("http.response.status_code");
    private static final AttributeKey<Long> BODY_SIZE = AttributeKey.longKey("http.response.body.size");
    private static final AttributeKey<Long> BYTES_SENT = AttributeKey.longKey("nginx.bytes_sent");
    private static final AttributeKey<Double> REQUEST_TIME = AttributeKey.doubleKey("nginx.request_time");
    private static final AttributeKey<String> UPSTREAM_TIME = AttributeKey.stringKey("nginx.upstream_response_time");
    private static final AttributeKey<Long> CPU = AttributeKey.longKey("nginx.jvm.cpu_us");
    private static final AttributeKey<Long> ALLOC = AttributeKey.longKey("nginx.jvm.alloc_bytes");
    private static final AttributeKey<String> HANDLER = AttributeKey.stringKey("nginx.jvm.handler");
    private static final AttributeKey<Boolean> DROPPED = AttributeKey.booleanKey("dropped");
    /** How often the dropped count is read, and a rise logged. */
    private static final long WARN_EVERY_MS = 5_000;

    private static final TextMapGetter<Request> HEADERS = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Request request) {
            return request.headers().keySet();
        }

        @Override
        public String get(Request request, String name) {
            return request == null ? null : request.header(name);
        }
    };

    private final OpenTelemetrySdk sdk;
    private final Tracer tracer;
    private final TextMapPropagator propagator;
    private final Counts counts = new Counts();

    TracingSdk() {
        // defaults where the user said nothing: tracing is what was asked
        // for, over OTLP/HTTP (the JDK's HttpClient sends it: no gRPC stack)
        Map<String, String> defaults = Map.of("otel.service.name", "nginx-jvm",
                "otel.exporter.otlp.protocol", "http/protobuf",
                "otel.metrics.exporter", "none", "otel.logs.exporter", "none");
        sdk = AutoConfiguredOpenTelemetrySdk.builder()
                .addPropertiesSupplier(() -> defaults)
                .addMeterProviderCustomizer((b, config) -> b.registerMetricReader(counts))
                .setResultAsGlobal()
                .build()
                .getOpenTelemetrySdk();
        tracer = sdk.getTracer("nginx-jvm");
        propagator = sdk.getPropagators().getTextMapPropagator();
        Thread t = new Thread(this::watch, "nginx-jvm-tracing");
        t.setDaemon(true);
        t.start();
    }

    Trace begin(Request request, long startMillis, String name) {
        // the client's (or a front proxy's) traceparent, tracestate and baggage, if any
        Context parent = propagator.extract(Context.root(), request, HEADERS);
        String method = request.method();
        Span server = tracer.spanBuilder(method)
                .setParent(parent)
                .setSpanKind(SpanKind.SERVER)
                .setStartTimestamp(startMillis, TimeUnit.MILLISECONDS)
                .startSpan();
        if (server.isRecording()) {
            server.setAttribute(METHOD, method);
            server.setAttribute(PATH, request.path());
            String q = request.queryString();
            if (q != null) {
                server.setAttribute(QUERY, q);
            }
            server.setAttribute(SCHEME, request.scheme());
            server.setAttribute(SERVER, request.serverName());
            server.setAttribute(PORT, (long) request.serverPort());
            server.setAttribute(CLIENT, request.remoteAddr());
            String p = request.protocol();
            if (p != null && p.startsWith("HTTP/")) {
                server.setAttribute(PROTOCOL, p.substring(5));
            }
            String agent = request.header("user-agent");
            if (agent != null) {
                server.setAttribute(AGENT, agent);
            }
        }
        Context withServer = parent.with(server);
        Span handler = tracer.spanBuilder(name)
                .setParent(withServer)
                .setSpanKind(SpanKind.INTERNAL)
                .setAttribute(HANDLER, name)
                .startSpan();
        SpanContext c = handler.getSpanContext();
        String traceparent = "00-" + c.getTraceId() + "-" + c.getSpanId() + "-" + c.getTraceFlags().asHex();
        return new Trace(server, handler, withServer.with(handler), c.getTraceId(), c.getSpanId(),
                traceparent);
    }

    Object enter(Trace t) {
        return ((Context) t.context).makeCurrent();
    }

    void leave(Trace t, Object scope, Throwable failed) {
        ((Scope) scope).close();
        Span handler = (Span) t.handler;
        if (failed != null) {
            handler.recordException(failed);
            handler.setStatus(StatusCode.ERROR, "the handler threw");
        }
        handler.end();
    }

    void end(Trace t, long r) {
        // an async handler's span, or one whose call still runs (its client gone)
        ((Span) t.handler).end();
        Span server = (Span) t.server;
        if (!server.isRecording()) {
            return;
        }
        long status = number(Tracing.variable(r, "status"));
        if (status > 0) {
            server.setAttribute(STATUS, status);
            if (status >= 500) {
                server.setStatus(StatusCode.ERROR);
            }
        }
        long bytes = number(Tracing.variable(r, "bytes_sent"));
        if (bytes >= 0) {
            server.setAttribute(BYTES_SENT, bytes);
        }
        long body = number(Tracing.variable(r, "body_bytes_sent"));
        if (body >= 0) {
            server.setAttribute(BODY_SIZE, body);
        }
        String time = Tracing.variable(r, "request_time");
        if (time != null) {
            server.setAttribute(REQUEST_TIME, Double.parseDouble(time));
        }
        String upstream = Tracing.variable(r, "upstream_response_time");
        if (upstream != null) {
            server.setAttribute(UPSTREAM_TIME, upstream);
        }
        long cpu = number(Tracing.variable(r, "jvm_cpu_us"));
        if (cpu >= 0) {
            server.setAttribute(CPU, cpu);
        }
        long alloc = number(Tracing.variable(r, "jvm_alloc_bytes"));
        if (alloc >= 0) {
            server.setAttribute(ALLOC, alloc);
        }
        // now, not nginx's $msec: that is the time the event loop last woke,
        // which a long call on the loop leaves behind the handler's own end
        server.end();
    }

    private static long number(String s) {
        if (s == null) {
            return -1;
        }
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    long dropped() {
        return counts.dropped();
    }

    /** Says in the error log, at most every 5 s, that spans were dropped since it last said. */
    private void watch() {
        long said = 0;
        while (true) {
            try {
                Thread.sleep(WARN_EVERY_MS);
            } catch (InterruptedException e) {
                return;
            }
            long n = counts.dropped();
            if (n > said) {
                Log.warn("nginx.jvm", "tracing: " + (n - said) + " spans dropped (" + n + " since the worker"
                        + " started): the export queue was full, the collector slow or gone"
                        + " (otel.exporter.otlp.endpoint, otel.bsp.max.queue.size)");
                said = n;
            }
        }
    }

    /** Reads the BatchSpanProcessor's own "processedSpans" counter, dropped=true. */
    private static final class Counts implements MetricReader {
        private volatile CollectionRegistration registration;

        @Override
        public void register(CollectionRegistration registration) {
            this.registration = registration;
        }

        long dropped() {
            CollectionRegistration reg = registration;
            if (reg == null) {
                return 0;
            }
            long n = 0;
            for (MetricData m : reg.collectAllMetrics()) {
                if (m.getName().equals("processedSpans")) {
                    for (LongPointData p : m.getLongSumData().getPoints()) {
                        if (Boolean.TRUE.equals(p.getAttributes().get(DROPPED))) {
                            n += p.getValue();
                        }
                    }
                }
            }
            return n;
        }

        @Override
        public AggregationTemporality getAggregationTemporality(InstrumentType type) {
            return AggregationTemporality.CUMULATIVE;
        }

        @Override
        public CompletableResultCode forceFlush() {
            return CompletableResultCode.ofSuccess();
        }

        @Override
        public CompletableResultCode shutdown() {
            return CompletableResultCode.ofSuccess();
        }
    }
}
