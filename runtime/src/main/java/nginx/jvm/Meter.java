package nginx.jvm;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * What a request cost the JVM, in the JVM's own measures (ThreadMXBean):
 * the bytes allocated and the CPU time of the threads that ran its code,
 * for {@code $jvm_alloc_bytes}, {@code $jvm_cpu_us} and jvm_status's
 * histograms. Off unless the configuration uses one of those (the C module
 * decides at the worker's start, {@link #start} asks it): a thread's CPU
 * time is a system call (0.3-0.7 µs here), twice for each window measured.
 *
 * <p>What is counted, by mode (docs/operations.md says the same):
 * <ul>
 * <li>loop: the whole call on the event loop, from the request's decoding to
 *     its response's encoding;
 * <li>pool: the loop's share (the task's start, its response's encoding)
 *     and the pool thread's run of the handler;
 * <li>virtual, coloop: the loop's share and every slice a carrier ran the
 *     request's virtual thread, measured on the carrier (a virtual thread
 *     has no counters of its own); on the JDK's scheduler (jvm_virtual_carriers
 *     0) there is no carrier of ours to measure, and only the loop's share
 *     is counted;
 * <li>jvm_async: the handler's call on its thread; work on threads it hands
 *     the request to is not counted (nothing ties them to it).
 * </ul>
 *
 * An instance is one request's sums. The figures go to the C module through
 * two slots of its own ({@link Natives#meter}): long bytes, long CPU
 * nanoseconds, written after each call that measured (the C module reads
 * and clears them).
 */
final class Meter {
    /** Written once at the worker's start, before any request. */
    static volatile boolean on;
    private static final com.sun.management.ThreadMXBean MX = mx();
    private static ByteBuffer out;

    /** This request's sums so far, not yet handed to the C module: its threads'. */
    private long alloc, cpu;
    /**
     * The event loop's share, apart: the loop adds it while a pool thread may
     * still add its own (the task's start races its run).
     */
    private long loopAlloc, loopCpu;
    /**
     * The platform thread of the open window (null: none), and its counters
     * when the window opened: a pool thread running the handler, or a
     * carrier running a slice of the request's virtual thread. Closed once,
     * by whoever comes first: the thread itself at the window's end, or the
     * handler answering (from the virtual thread the carrier runs, or an
     * async handler's thread), since the event loop may take the answer
     * before the window's thread gets to close it.
     */
    private volatile Thread window;
    private long from, cpuFrom;
    private static final VarHandle WINDOW;
    /** A virtual thread's on the worker's own carriers: the continuation its slices come as. */
    volatile Runnable continuation;

    static {
        try {
            WINDOW = MethodHandles.lookup().findVarHandle(Meter.class, "window", Thread.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static com.sun.management.ThreadMXBean mx() {
        java.lang.management.ThreadMXBean b = ManagementFactory.getThreadMXBean();
        return b instanceof com.sun.management.ThreadMXBean ? (com.sun.management.ThreadMXBean) b : null;
    }

    /**
     * At the worker's start: turns measuring on where the C module asks for
     * it (the configuration reads $jvm_alloc_bytes, $jvm_cpu_us or has a
     * jvm_status), which gives the slots the figures go to.
     */
    static void start() {
        ByteBuffer slots;
        try {
            slots = Natives.meter();
        } catch (UnsatisfiedLinkError e) {
            return;                 // not in a worker (tests of the runtime)
        }
        if (slots == null) {
            return;
        }
        if (MX == null || !MX.isThreadAllocatedMemorySupported() || !MX.isCurrentThreadCpuTimeSupported()) {
            Log.warn("nginx.jvm", "this JVM cannot measure its threads' allocation and CPU time:"
                    + " $jvm_alloc_bytes and $jvm_cpu_us stay empty");
            return;
        }
        MX.setThreadAllocatedMemoryEnabled(true);
        MX.setThreadCpuTimeEnabled(true);
        out = slots.order(ByteOrder.nativeOrder());
        on = true;
    }

    /** A new request's sums, or null when measuring is off. */
    static Meter open() {
        return on ? new Meter() : null;
    }

    /** The calling platform thread's allocated bytes (-1 on a virtual thread). */
    static long allocNow() {
        return MX.getCurrentThreadAllocatedBytes();
    }

    /** The calling platform thread's CPU time, ns (-1 on a virtual thread). */
    static long cpuNow() {
        return MX.getCurrentThreadCpuTime();
    }

    /** Event loop: adds what the loop spent since it read these counters. */
    void addLoop(long allocFrom, long cpuFrom) {
        long a = allocNow(), c = cpuNow();
        if (allocFrom >= 0 && a >= 0) {
            loopAlloc += a - allocFrom;
        }
        if (cpuFrom >= 0 && c >= 0) {
            loopCpu += c - cpuFrom;
        }
    }

    /**
     * Opens a window on the calling thread; false when it cannot (a virtual
     * thread has no counters; its carrier's window is open, or none can be).
     */
    boolean begin() {
        long a = allocNow();
        if (a < 0 || window != null) {
            return false;
        }
        from = a;
        cpuFrom = cpuNow();
        window = Thread.currentThread();
        return true;
    }

    /** Closes the open window, if any: from its own thread, or any other. */
    void close() {
        Thread t = window;
        if (t == null || !WINDOW.compareAndSet(this, t, null)) {
            return;
        }
        long a, c;
        if (t == Thread.currentThread()) {
            a = allocNow();
            c = cpuNow();
        } else {
            // allocated bytes first: reading the CPU time by id allocates
            a = MX.getThreadAllocatedBytes(t.getId());
            c = MX.getThreadCpuTime(t.getId());
        }
        if (a >= 0) {
            alloc += a - from;
        }
        if (c >= 0 && cpuFrom >= 0) {
            cpu += c - cpuFrom;
        }
    }

    /** A carrier runs one slice of the request's virtual thread, measured on the carrier. */
    void slice(Runnable continuation) {
        boolean open = begin();
        try {
            continuation.run();
        } finally {
            if (open) {
                close();
            }
        }
    }

    /** Event loop, once the request's threads answered: its bytes so far. */
    long alloc() {
        return alloc + loopAlloc;
    }

    long cpu() {
        return cpu + loopCpu;
    }

    /** Event loop: hands the sums to the C module (which adds them to the request's) and starts over. */
    void report() {
        report(alloc(), cpu());
        alloc = 0;
        cpu = 0;
        loopAlloc = 0;
        loopCpu = 0;
    }

    /** Event loop: hands {@code bytes} and {@code nanos} to the C module for the request it called for. */
    static void report(long bytes, long nanos) {
        ByteBuffer b = out;
        b.putLong(0, Math.max(0, bytes));
        b.putLong(8, Math.max(0, nanos));
    }
}
