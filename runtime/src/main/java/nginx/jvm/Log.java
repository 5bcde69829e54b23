package nginx.jvm;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.LocalDateTime;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The worker's error log, for Java: every entry is an nginx error log line
 * ({@code 2026/11/23 10:00:00 [warn] 1234#1234: jvm: logger: message}),
 * formatted here and written with one {@code write(2)} to file descriptor 2.
 *
 * <p>Why fd 2: nginx points it at its error log in every worker (the first
 * {@code error_log} that is a file, or stderr itself), and again after a
 * {@code USR1} reopen, so Java never needs to know the file, and never calls
 * nginx (JVM threads must not). The file is opened with {@code O_APPEND}, so
 * each entry lands whole after whatever nginx wrote; a lock keeps entries of
 * Java threads whole even when fd 2 is a pipe.
 *
 * <p>The C module passes the log's level at JVM start
 * ({@code -Dnginx.jvm.log=N}, nginx's numbers: 1 emerg ... 8 debug);
 * entries above it are dropped before they are formatted. Without that
 * property (unit tests, tools) the JVM's streams are left alone.
 */
public final class Log {
    /** nginx's levels. */
    public static final int EMERG = 1, ALERT = 2, CRIT = 3, ERROR = 4, WARN = 5, NOTICE = 6,
            INFO = 7, DEBUG = 8;

    private static final String[] NAMES = {
        "stderr", "emerg", "alert", "crit", "error", "warn", "notice", "info", "debug"
    };

    /** The most verbose level written; 0 when logging is not set up (nothing is written). */
    private static volatile int threshold;
    private static final String PID = Long.toString(ProcessHandle.current().pid());
    private static final FileOutputStream OUT = new FileOutputStream(FileDescriptor.err);
    private static final ReentrantLock LOCK = new ReentrantLock();
    /** The time stamp of the second last written, and that second. */
    private static volatile Object[] stamp = {0L, ""};

    private Log() {
    }

    /**
     * Sets up the worker's logging from {@code -Dnginx.jvm.log}: System.out
     * and System.err line by line. Called once, before any handler loads;
     * true when it set them up (then {@link JulHandler} takes
     * java.util.logging: Worker installs it, so this public class never
     * reaches into a package-private one that calls back).
     */
    static boolean install() {
        String level = System.getProperty("nginx.jvm.log");
        if (level == null || threshold != 0) {
            return false;
        }
        try {
            threshold = Math.max(EMERG, Math.min(DEBUG, Integer.parseInt(level)));
        } catch (NumberFormatException e) {
            threshold = WARN;
        }
        System.setOut(new PrintStream(new Lines(NOTICE, "stdout"), true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(new Lines(WARN, "stderr"), true, StandardCharsets.UTF_8));
        return true;
    }

    /** Whether entries of {@code level} are written at all. */
    public static boolean enabled(int level) {
        return level <= threshold;
    }

    /** The most verbose level written (nginx's number), 0 when not set up. */
    public static int threshold() {
        return threshold;
    }

    public static void error(String logger, String message, Throwable t) {
        log(ERROR, logger, message, t);
    }

    public static void warn(String logger, String message) {
        log(WARN, logger, message, null);
    }

    public static void notice(String logger, String message) {
        log(NOTICE, logger, message, null);
    }

    public static void info(String logger, String message) {
        log(INFO, logger, message, null);
    }

    public static void debug(String logger, String message) {
        log(DEBUG, logger, message, null);
    }

    /**
     * One entry: the message, then what {@code t} is and its stack trace (if
     * any; {@link Failure#describe}), as the C module logs a handler's
     * failure. When logging is not set up it goes to System.err.
     */
    public static void log(int level, String logger, String message, Throwable t) {
        if (threshold == 0) {
            // Failure.describe, not t.printStackTrace(): it survives a throwable that cannot be printed
            System.err.println(Failure.describe(logger + ": " + message, t));
            return;
        }
        if (level > threshold) {
            return;
        }
        String text = Failure.describe(message == null ? "null" : message, t);
        write(level, logger, text.getBytes(StandardCharsets.UTF_8), 0, -1);
    }

    /** Writes an entry whose message is {@code len} bytes of {@code msg} (all if len < 0). */
    static void write(int level, String logger, byte[] msg, int off, int len) {
        if (len < 0) {
            len = msg.length - off;
        }
        byte[] head = (prefix(level) + logger + ": ").getBytes(StandardCharsets.UTF_8);
        byte[] line = new byte[head.length + len + 1];
        System.arraycopy(head, 0, line, 0, head.length);
        System.arraycopy(msg, off, line, head.length, len);
        line[line.length - 1] = '\n';
        LOCK.lock();
        try {
            OUT.write(line);
        } catch (IOException e) {
            // Nowhere left to say it.
        } finally {
            LOCK.unlock();
        }
    }

    /** "2026/11/23 10:00:00 [warn] 1234#1234: jvm: ", nginx's layout. */
    private static String prefix(int level) {
        long now = System.currentTimeMillis() / 1000;
        Object[] s = stamp;
        String time;
        if ((Long) s[0] == now) {
            time = (String) s[1];
        } else {
            LocalDateTime t = LocalDateTime.now();
            time = String.format("%04d/%02d/%02d %02d:%02d:%02d", t.getYear(), t.getMonthValue(),
                    t.getDayOfMonth(), t.getHour(), t.getMinute(), t.getSecond());
            stamp = new Object[] {now, time};
        }
        // pid#tid as nginx has it; a JVM thread has no tid nginx knows: the pid again
        return time + " [" + NAMES[level] + "] " + PID + "#" + PID + ": jvm: ";
    }

    /** nginx's name of a level ("warn"), for those who print it. */
    static String name(int level) {
        return NAMES[Math.max(0, Math.min(DEBUG, level))];
    }

    /**
     * System.out or System.err: each line a log entry. A thread's partial line
     * waits in that thread's buffer for its end, so lines of many threads
     * never mix; a line longer than 16 KB is cut.
     */
    private static final class Lines extends OutputStream {
        private static final int MAX = 16 * 1024;
        private final int level;
        private final String name;
        private final ThreadLocal<Buf> buf = ThreadLocal.withInitial(Buf::new);

        Lines(int level, String name) {
            this.level = level;
            this.name = name;
        }

        @Override
        public void write(int b) {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) {
            if (level > threshold) {
                return;
            }
            Buf line = buf.get();
            for (int i = off; i < off + len; i++) {
                byte c = b[i];
                if (c == '\n') {
                    line.emit(level, name);
                } else {
                    line.add(c);
                    if (line.n >= MAX) {
                        line.emit(level, name);
                    }
                }
            }
        }
    }

    private static final class Buf {
        byte[] data = new byte[128];
        int n;

        void add(byte c) {
            if (n == data.length) {
                data = java.util.Arrays.copyOf(data, n * 2);
            }
            data[n++] = c;
        }

        void emit(int level, String name) {
            int len = n > 0 && data[n - 1] == '\r' ? n - 1 : n;
            Log.write(level, name, data, 0, len);
            n = 0;
            if (data.length > 1024) {
                data = new byte[128];
            }
        }
    }
}
