package nginx.jvm;

import java.io.PrintWriter;
import java.io.StringWriter;

/**
 * A handler's mistake on its way to the error log: what went wrong and, when
 * the handler threw, what it threw. The one place stack traces become text.
 */
final class Failure extends RuntimeException {
    Failure(String message, Throwable cause) {
        super(message, cause, false, false);
    }

    /** The message, then the stack trace of {@code t} when there is one. */
    static String describe(String what, Throwable t) {
        if (t == null) {
            return what;
        }
        StringWriter sw = new StringWriter();
        t.printStackTrace(new PrintWriter(sw));
        return what + ": " + sw.toString().stripTrailing();
    }
}
