package nginx.jvm;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * OpenTelemetry tracing (docs/operations.md, "Tracing"; docs/internals.md,
 * "Tracing"). On in a worker whose JVM finds it configured the
 * OpenTelemetry way: {@code otel.traces.exporter} (a system property, from
 * jvm_options) or {@code OTEL_TRACES_EXPORTER}, other than "none". Off,
 * nothing of OpenTelemetry is loaded, and a request costs the test of
 * {@link Request#trace} (null). This class names no OpenTelemetry type:
 * {@link TracingSdk} does, and is loaded only once tracing is on.
 */
final class Tracing {
    /** Set once, at the worker's start, before any handler thread exists. */
    static boolean on;
    private static TracingSdk sdk;
    /** Event loop: the requests whose server span is open, by nginx's address. */
    private static final Map<Long, Trace> open = new HashMap<>();

    private Tracing() {
    }

    /** The worker's start (Worker.configure), before Meter.start. */
    static void start() {
        String exporter = setting("otel.traces.exporter");
        if (exporter == null || exporter.trim().isEmpty() || exporter.trim().equals("none")
                || "true".equalsIgnoreCase(setting("otel.sdk.disabled"))) {
            return;
        }
        try {
            Class.forName("io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk", false,
                    Tracing.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            Log.warn("nginx.jvm", "tracing is configured (otel.traces.exporter=" + exporter + ") but the"
                    + " OpenTelemetry SDK is not on the class path: add build/otel-lib/* (make otel-deps) or"
                    + " /usr/share/nginx-jvm/otel-lib/* to jvm_classpath; no request is traced");
            return;
        }
        try {
            sdk = new TracingSdk();
        } catch (Throwable t) {
            System.err.println(Failure.describe("jvm: tracing cannot start (no request is traced)", t));
            return;
        }
        try {
            Natives.tracing();
        } catch (UnsatisfiedLinkError e) {
            // not in a worker (the runtime's own tests)
        }
        on = true;
    }

    /** A system property, else the environment variable the OpenTelemetry way names it. */
    static String setting(String property) {
        String v = System.getProperty(property);
        return v != null ? v : System.getenv(property.toUpperCase(Locale.ROOT).replace('.', '_'));
    }

    /**
     * Event loop, as handler {@code name} is called for nginx's request
     * {@code r}: its server span begins (at nginx's start of the request)
     * and the handler's span with it. A subrequest, or a request whose span
     * is open already (an internal redirect to a second handler), gets none.
     */
    static void begin(Request request, long r, String name) {
        long start = Natives.traceStart(r);
        if (start < 0) {
            return;
        }
        try {
            Trace t = sdk.begin(request, start, name);
            open.put(r, t);
            request.trace = t;
        } catch (Throwable e) {
            System.err.println(Failure.describe("jvm: tracing: a request's span cannot begin", e));
        }
    }

    /** The handler's thread: its span current (Context.makeCurrent); a scope to give {@link #leave}. */
    static Object enter(Trace t) {
        return sdk.enter(t);
    }

    /** The handler's call is over ({@code failed}: what it threw, or null): its span ends. */
    static void leave(Trace t, Object scope, Throwable failed) {
        sdk.leave(t, scope, failed);
    }

    /** Event loop, the log phase of nginx's request {@code r}: its server span ends. */
    static void end(long r) {
        Trace t = open.remove(r);
        if (t != null) {
            sdk.end(t, r);
        }
    }

    /** An nginx variable of the request in its log phase, or null ("-" and empty too). */
    static String variable(long r, String name) {
        byte[] v = Natives.getVariable(r, name.getBytes(StandardCharsets.US_ASCII));
        if (v == null || v.length == 0 || (v.length == 1 && v[0] == '-')) {
            return null;
        }
        return new String(v, StandardCharsets.ISO_8859_1);
    }

    /** Spans the export queue dropped, full (the collector slow or gone); 0 when off. */
    static long dropped() {
        return on ? sdk.dropped() : 0;
    }
}
