package nginx.jvm.servlet.session;

/**
 * A session that cannot be saved (an attribute that does not serialize, a
 * store with no room) or read: the message says which and what to do.
 * Tomcat's valve logs it and answers 500 when the response is not sent yet.
 */
public class SharedSessionException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public SharedSessionException(String message, Throwable cause) {
        super(message, cause);
    }

    /** The store cannot be reached (Redis down or too slow): a 503, as the Ring store answers. */
    public static final class Unavailable extends SharedSessionException {
        private static final long serialVersionUID = 1L;

        public Unavailable(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
