package nginx.jvm;

/**
 * A traced request's spans (objects of {@link TracingSdk}, which alone
 * knows their types) and the handler span's ids, for {@link Request}. It
 * uses nothing: Request, part of the API, reads it without reaching the
 * tracing core (tests/test_layers.py).
 */
final class Trace {
    final Object server;
    final Object handler;
    /** The handler span's context (and the client's baggage): what handler code sees as current. */
    final Object context;
    final String traceId;
    final String spanId;
    /** The W3C traceparent naming the handler span, for its outgoing calls. */
    final String traceparent;

    Trace(Object server, Object handler, Object context, String traceId, String spanId, String traceparent) {
        this.server = server;
        this.handler = handler;
        this.context = context;
        this.traceId = traceId;
        this.spanId = spanId;
        this.traceparent = traceparent;
    }
}
