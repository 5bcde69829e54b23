package nginx.jvm;

/**
 * The handler answered something that is not a response (a Ring handler
 * returning nil or a string, a status out of range, a header value with a
 * line break, ...). Logged as the handler's mistake, without a stack trace,
 * and answered with 500.
 */
public class BadResponseException extends RuntimeException {
    public BadResponseException(String message) {
        super(message, null, false, false);
    }
}
