package nginx.jvm.slf4j;

import nginx.jvm.Log;
import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.LegacyAbstractLogger;
import org.slf4j.helpers.MessageFormatter;

/**
 * A logger writing to nginx's error log: ERROR is [error], WARN [warn],
 * INFO [info], DEBUG and TRACE [debug]. A level the error log hides is
 * answered "disabled", so the caller formats nothing.
 */
final class NginxLogger extends LegacyAbstractLogger {
    private static final long serialVersionUID = 1L;

    NginxLogger(String name) {
        this.name = name;
    }

    static int nginxLevel(Level level) {
        switch (level) {
            case ERROR:
                return Log.ERROR;
            case WARN:
                return Log.WARN;
            case INFO:
                return Log.INFO;
            default:
                return Log.DEBUG;
        }
    }

    private static boolean on(Level level) {
        // outside nginx (no threshold) everything goes to System.err
        return Log.threshold() == 0 || Log.enabled(nginxLevel(level));
    }

    @Override
    public boolean isTraceEnabled() {
        return on(Level.TRACE);
    }

    @Override
    public boolean isDebugEnabled() {
        return on(Level.DEBUG);
    }

    @Override
    public boolean isInfoEnabled() {
        return on(Level.INFO);
    }

    @Override
    public boolean isWarnEnabled() {
        return on(Level.WARN);
    }

    @Override
    public boolean isErrorEnabled() {
        return on(Level.ERROR);
    }

    @Override
    protected String getFullyQualifiedCallerName() {
        return null;
    }

    @Override
    protected void handleNormalizedLoggingCall(Level level, Marker marker, String pattern,
            Object[] arguments, Throwable throwable) {
        Log.log(nginxLevel(level), name, MessageFormatter.basicArrayFormat(pattern, arguments),
                throwable);
    }
}
