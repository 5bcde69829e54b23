package nginx.jvm;

/**
 * Sees the status and header fields of every response of its location
 * ({@code jvm_header_filter Class}), whoever made it (a static file,
 * {@code proxy_pass}, a JVM handler), before nginx sends them. It answers the
 * response to send instead (its status and header fields; a body is ignored)
 * or null to leave it as it is. Called on the event loop, whatever
 * {@code jvm_mode} says: nginx cannot suspend a header filter. An exception is
 * logged with its stack trace and the client gets a 500 instead.
 */
@FunctionalInterface
public interface HeaderFilter {
    Response filter(Request request, Response response) throws Exception;
}
