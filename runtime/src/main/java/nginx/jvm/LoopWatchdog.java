package nginx.jvm;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Names a coloop handler that holds the event loop: a continuation that
 * runs longer than the threshold without parking (a busy loop, a call into
 * native code that blocks, a class initialiser that waits, a monitor on a
 * JDK before 24) stalls every connection of the worker, and nothing can
 * take the loop back from it. A daemon thread samples what the loop runs
 * ({@link LoopScheduler#running()}, {@link LoopScheduler#slice()}) and writes
 * one [warn] per such slice with the handler's name and its thread's stack
 * at that moment; {@link #held} counts them for jvm_status
 * ({@code nginx_jvm_loop_held_total}).
 *
 * <p>The threshold is {@code -Dnginx.jvm.watchdog=MS} in {@code jvm_options}
 * (default 100; 0 turns the watchdog off). Warnings are written at most
 * once a second; the count has them all.
 */
final class LoopWatchdog implements Runnable {
    static final String PROPERTY = "nginx.jvm.watchdog";
    static final long DEFAULT_MILLIS = 100;
    private static final long WARN_EVERY_NANOS = 1_000_000_000L;

    /** Slices that held the loop beyond the threshold, since the worker started. */
    static final AtomicLong held = new AtomicLong();

    private final LoopScheduler scheduler;
    private final long thresholdNanos;
    private long lastWarned = System.nanoTime() - WARN_EVERY_NANOS;
    private long unwarned;

    private LoopWatchdog(LoopScheduler scheduler, long thresholdMillis) {
        this.scheduler = scheduler;
        this.thresholdNanos = thresholdMillis * 1_000_000L;
    }

    /** Starts the watchdog thread (unless the threshold is 0); the caller blocks nginx's signals. */
    static void start(LoopScheduler scheduler) {
        long ms = threshold();
        if (ms <= 0) {
            return;
        }
        Thread t = new Thread(new LoopWatchdog(scheduler, ms), "nginx-jvm-watchdog");
        t.setDaemon(true);
        t.start();
    }

    static long threshold() {
        String v = System.getProperty(PROPERTY);
        if (v == null || v.isEmpty()) {
            return DEFAULT_MILLIS;
        }
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            Log.warn("nginx.jvm", "jvm: -D" + PROPERTY + "=" + v + " is not a number of milliseconds;"
                    + " the coloop watchdog uses " + DEFAULT_MILLIS);
            return DEFAULT_MILLIS;
        }
    }

    @Override
    public void run() {
        long period = Math.max(1, thresholdNanos / 4_000_000L);
        // the slice seen running at the last sample, since when, and the
        // last one counted: a slice is timed from the first sample that saw
        // it, so it is named between the threshold and a period after it
        long seen = 0, seenSince = 0, counted = 0;
        try {
            while (true) {
                Thread.sleep(period);
                long n = scheduler.slice();
                LoopScheduler.Carried c = scheduler.running();
                long now = System.nanoTime();
                if (c == null || n != scheduler.slice()) {
                    seen = 0;
                    continue;
                }
                if (n != seen) {
                    seen = n;
                    seenSince = now;
                    continue;
                }
                long held = now - seenSince;
                if (held < thresholdNanos || n == counted) {
                    continue;
                }
                counted = n;
                LoopWatchdog.held.incrementAndGet();
                warn(c, held);
            }
        } catch (InterruptedException e) {
            // the worker exits
        }
    }

    private void warn(LoopScheduler.Carried c, long heldNanos) {
        long now = System.nanoTime();
        if (now - lastWarned < WARN_EVERY_NANOS) {
            unwarned++;
            return;
        }
        lastWarned = now;
        StringBuilder b = new StringBuilder(1024);
        b.append("a jvm_mode coloop handler (").append(c.what).append(") has held the event loop for ")
                .append(heldNanos / 1_000_000).append(" ms without parking (threshold ")
                .append(thresholdNanos / 1_000_000).append(" ms, -D").append(PROPERTY)
                .append("): every connection of this worker waits");
        if (unwarned > 0) {
            b.append(" (").append(unwarned).append(" more such since the last warning)");
            unwarned = 0;
        }
        Thread t = c.thread;
        if (t != null) {
            b.append("; ").append(t.getName()).append(" is at:");
            for (StackTraceElement e : t.getStackTrace()) {
                b.append("\n\tat ").append(e);
            }
        }
        Log.warn("nginx.jvm", b.toString());
    }
}
