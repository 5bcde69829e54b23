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
        try {
            t.printStackTrace(new PrintWriter(sw));
        } catch (Throwable e) {
            // Its toString() or getMessage() (or a cause's) threw: said
            // without them, since what logs a failure must not fail in turn
            // (a timer's task that threw so would stop Worker.wake() before
            // it names the ready tasks, and their wake-up would be lost).
            return what + ": " + unprintable(t, e);
        }
        return what + ": " + sw.toString().stripTrailing();
    }

    /** {@code t}'s class and frames, when printing it threw {@code e}. */
    private static String unprintable(Throwable t, Throwable e) {
        StringBuilder b = new StringBuilder(t.getClass().getName())
                .append(" (its message could not be read: ").append(e.getClass().getName()).append(')');
        try {
            for (StackTraceElement f : t.getStackTrace()) {
                b.append("\n\tat ").append(f);
            }
        } catch (Throwable ignored) {
            // getStackTrace() overridden to throw too: the class is all there is
        }
        return b.toString();
    }
}
