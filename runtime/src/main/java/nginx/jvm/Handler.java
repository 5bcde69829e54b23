package nginx.jvm;

/**
 * A request handler for Java users; no Clojure is needed.
 *
 * <p>Named in nginx.conf by its fully qualified class name
 * ({@code jvm_content com.example.Hello;}). The class needs a public no-argument
 * constructor; one instance is made per worker process and shared by every
 * request of that worker, so keep it free of per-request state.
 *
 * <p>An exception thrown here is logged with its stack trace in nginx's error
 * log and the client gets a 500; the worker goes on serving.
 */
@FunctionalInterface
public interface Handler {
    Response handle(Request request) throws Exception;
}
