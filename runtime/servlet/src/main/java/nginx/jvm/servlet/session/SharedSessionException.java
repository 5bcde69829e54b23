package nginx.jvm.servlet.tomcat;

/**
 * A session that cannot be saved (an attribute that does not serialize, a
 * store with no room) or read: the message says which and what to do. The
 * valve logs it and answers 500 when the response is not sent yet.
 */
class SharedSessionException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    SharedSessionException(String message, Throwable cause) {
        super(message, cause);
    }

    /** The store cannot be reached (Redis down or too slow): a 503, as the Ring store answers. */
    static final class Unavailable extends SharedSessionException {
        private static final long serialVersionUID = 1L;

        Unavailable(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
