package nginx.jvm;

/**
 * A handler that answers later, from any thread: for locations with
 * {@code jvm_async on}. It must call exactly one of the responder's methods
 * once; later calls are ignored. If it throws instead, the client gets a 500.
 * If it never answers, {@code jvm_response_timeout} answers 504.
 */
@FunctionalInterface
public interface AsyncHandler {
    void handle(Request request, Responder responder) throws Exception;
}
