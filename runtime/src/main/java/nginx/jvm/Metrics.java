package nginx.jvm;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * The worker's figures for {@code jvm_status}: requests by mode and status
 * class, in flight, 503s, the handler time histogram (counted on the event
 * loop as responses are encoded), and the JVM's own figures. Each worker
 * publishes them every second into the {@code nginx.jvm.status} dictionary
 * (nginx shared memory), under its pid with a short TTL, so that
 * {@link Status} can add up every live worker's. Counting is always on
 * (a few adds per request); publishing only where jvm_status is configured.
 * The histograms of what requests cost the JVM only where {@link Meter} is on.
 */
final class Metrics {
    /** The dictionary the C module declares for jvm_status. */
    static final String DICT = "nginx.jvm.status";
    /** Upper bounds of the handler time histogram's buckets, in seconds. */
    static final double[] BUCKETS = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
    static final String[] MODES = {"loop", "pool", "virtual", "coloop"};
    /**
     * Upper bounds of the per-request cost histograms' buckets ({@link Meter}:
     * only where the configuration measures): bytes allocated, and CPU seconds.
     */
    static final double[] ALLOC_BUCKETS = {256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
        16777216, 67108864};
    static final double[] CPU_BUCKETS = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
        0.0025, 0.005, 0.01, 0.025, 0.1, 1};
    private static final int PUBLISH_MILLIS = 1000;
    /** A worker's entry outlives a few missed publications, not its worker. */
    private static final long TTL_MILLIS = 3500;

    /** [mode * 5 + class - 1]: responses by mode and status class (1xx..5xx). */
    private static final AtomicLongArray responses = new AtomicLongArray(MODES.length * 5);
    /** Cumulative counts per bucket; the last is +Inf. */
    private static final AtomicLongArray buckets = new AtomicLongArray(BUCKETS.length + 1);
    private static final LongAdder nanos = new LongAdder();
    /** The cost histograms (Meter), counted on the event loop: plain sums would do, kept alike. */
    private static final AtomicLongArray allocBuckets = new AtomicLongArray(ALLOC_BUCKETS.length + 1);
    private static final AtomicLongArray cpuBuckets = new AtomicLongArray(CPU_BUCKETS.length + 1);
    private static final LongAdder allocSum = new LongAdder();
    private static final LongAdder cpuNanos = new LongAdder();
    private static final LongAdder refused = new LongAdder();
    /** Tasks whose client left before the response was complete. */
    private static final LongAdder aborted = new LongAdder();
    static final AtomicInteger inFlight = new AtomicInteger();

    private static volatile SharedDict dict;
    private static volatile Tasks tasks;
    private static String worker = "0";

    private Metrics() {
    }

    /** A response of {@code status} from a handler in {@code mode}, {@code took} ns after it got the request. */
    static void response(int mode, int status, long took) {
        int cls = status / 100;
        if (cls >= 1 && cls <= 5 && mode >= 0 && mode < MODES.length) {
            responses.incrementAndGet(mode * 5 + cls - 1);
        }
        nanos.add(took);
        double seconds = took / 1e9;
        int i = 0;
        while (i < BUCKETS.length && seconds > BUCKETS[i]) {
            i++;
        }
        buckets.incrementAndGet(i);
    }

    /** What a response's request cost the JVM ({@link Meter}): {@code bytes} allocated, {@code nanos} of CPU. */
    static void cost(long bytes, long nanos) {
        allocSum.add(bytes);
        cpuNanos.add(nanos);
        allocBuckets.incrementAndGet(bucket(ALLOC_BUCKETS, bytes));
        cpuBuckets.incrementAndGet(bucket(CPU_BUCKETS, nanos / 1e9));
    }

    private static int bucket(double[] bounds, double v) {
        int i = 0;
        while (i < bounds.length && v > bounds[i]) {
            i++;
        }
        return i;
    }

    static void aborted() {
        aborted.increment();
    }

    static void refused() {
        refused.increment();
    }

    /** Starts publishing when jvm_status is configured (its dictionary exists). */
    static void start(Tasks t) {
        worker = System.getProperty("nginx.jvm.worker", "0");
        tasks = t;
        try {
            dict = SharedDict.named(DICT);
        } catch (RuntimeException e) {
            return;                 // no jvm_status: nothing to publish
        }
        publish();
        Timers.every(PUBLISH_MILLIS, Timers.Where.THREAD, Metrics::publish);
    }

    static SharedDict dict() {
        return dict;
    }

    /** This worker's figures into the dictionary, now. Any thread. */
    static void publish() {
        SharedDict d = dict;
        if (d != null) {
            d.put("w:" + ProcessHandle.current().pid(), snapshot(), TTL_MILLIS);
            Profile.poll(d);        // a profile another worker was asked for
        }
    }

    /** This worker's figures: one "name value" a line, names as {@link Status} reads them. */
    static String snapshot() {
        StringBuilder b = new StringBuilder(1024);
        line(b, "worker", worker);
        for (int m = 0; m < MODES.length; m++) {
            for (int c = 1; c <= 5; c++) {
                line(b, "responses " + MODES[m] + " " + c + "xx", responses.get(m * 5 + c - 1));
            }
        }
        long cumulative = 0;
        for (int i = 0; i <= BUCKETS.length; i++) {
            cumulative += buckets.get(i);
            line(b, "bucket " + (i < BUCKETS.length ? Double.toString(BUCKETS[i]) : "+Inf"), cumulative);
        }
        line(b, "time_sum", nanos.sum() / 1e9);
        line(b, "time_count", cumulative);
        if (Meter.on) {
            histogram(b, "alloc", ALLOC_BUCKETS, allocBuckets);
            line(b, "alloc_sum", allocSum.sum());
            histogram(b, "cpu", CPU_BUCKETS, cpuBuckets);
            line(b, "cpu_sum", cpuNanos.sum() / 1e9);
        }
        line(b, "in_flight", inFlight.get());
        Tasks t = tasks;
        line(b, "queued", t == null ? 0 : t.queued());
        line(b, "refused", refused.sum());
        line(b, "aborted", aborted.sum());
        line(b, "loop_held", LoopWatchdog.held.get());
        line(b, "trace_dropped", Tracing.dropped());
        UpstreamCall.figures(b);
        MemoryUsage heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
        line(b, "heap_used", heap.getUsed());
        line(b, "heap_committed", heap.getCommitted());
        long gcCount = 0, gcTime = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            gcCount += Math.max(0, gc.getCollectionCount());
            gcTime += Math.max(0, gc.getCollectionTime());
        }
        line(b, "gc_count", gcCount);
        line(b, "gc_seconds", gcTime / 1000.0);
        line(b, "threads", ManagementFactory.getThreadMXBean().getThreadCount());
        line(b, "classes", ManagementFactory.getClassLoadingMXBean().getLoadedClassCount());
        return b.toString();
    }

    /** Cumulative counts as "NAME_bucket LE" lines, and "NAME_count". */
    private static void histogram(StringBuilder b, String name, double[] bounds, AtomicLongArray counts) {
        long cumulative = 0;
        for (int i = 0; i <= bounds.length; i++) {
            cumulative += counts.get(i);
            line(b, name + "_bucket " + le(bounds, i), cumulative);
        }
        line(b, name + "_count", cumulative);
    }

    /** A bucket's bound as Prometheus writes it ("+Inf" for the last). */
    static String le(double[] bounds, int i) {
        if (i >= bounds.length) {
            return "+Inf";
        }
        double v = bounds[i];
        // plain decimals (0.00001, not 1.0E-5), as the latency buckets read
        return v == Math.rint(v) && v >= 1 ? Long.toString((long) v)
                : java.math.BigDecimal.valueOf(v).stripTrailingZeros().toPlainString();
    }

    static void line(StringBuilder b, String name, Object value) {
        b.append(name).append('\t').append(value).append('\n');
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
