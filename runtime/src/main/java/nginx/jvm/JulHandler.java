package nginx.jvm;

import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * java.util.logging into the error log: the root logger's only handler, its
 * level set from the error log's so that finer records are never made.
 * SEVERE is [error], WARNING [warn], INFO [info], CONFIG and finer [debug].
 */
final class JulHandler extends Handler {
    /** Formats the message's parameters ({0}, ...) as JUL's own handlers do. */
    private static final Formatter MESSAGE = new SimpleFormatter();

    static void install(int threshold) {
        Logger root = LogManager.getLogManager().getLogger("");
        for (Handler h : root.getHandlers()) {
            root.removeHandler(h);
        }
        root.addHandler(new JulHandler());
        root.setLevel(julLevel(threshold));
    }

    /** The finest JUL level whose records the error log shows. */
    static Level julLevel(int threshold) {
        if (threshold >= Log.DEBUG) {
            return Level.ALL;
        }
        if (threshold >= Log.INFO) {
            return Level.INFO;
        }
        if (threshold >= Log.WARN) {
            return Level.WARNING;
        }
        return Level.SEVERE;
    }

    static int nginxLevel(Level level) {
        int v = level.intValue();
        if (v >= Level.SEVERE.intValue()) {
            return Log.ERROR;
        }
        if (v >= Level.WARNING.intValue()) {
            return Log.WARN;
        }
        if (v >= Level.INFO.intValue()) {
            return Log.INFO;
        }
        return Log.DEBUG;
    }

    @Override
    public void publish(LogRecord record) {
        int level = nginxLevel(record.getLevel());
        if (!Log.enabled(level)) {
            return;
        }
        String name = record.getLoggerName() == null ? "jul" : record.getLoggerName();
        Log.log(level, name, MESSAGE.formatMessage(record), record.getThrown());
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
    }
}
