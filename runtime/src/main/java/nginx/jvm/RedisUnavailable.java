package nginx.jvm;

/**
 * Redis could not be reached, or did not answer within the timeout of its
 * {@link Redis} pool: what the Redis session store throws, and
 * {@code nginx.jvm.session/wrap-unavailable} answers with a 503.
 */
public final class RedisUnavailable extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public RedisUnavailable(String message, Throwable cause) {
        super(message, cause);
    }
}
