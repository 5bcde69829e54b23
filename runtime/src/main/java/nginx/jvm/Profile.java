package nginx.jvm;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

/**
 * One profile of every worker at once: {@code GET <jvm_status location>/profile}
 * (docs/operations.md, "Profiling"). Each worker is its own JVM, so the
 * worker that takes the request asks the others through jvm_status's
 * dictionary (key {@link #KEY}, which {@link Metrics}' once-a-second
 * publisher of every worker looks at), runs JDK Flight Recorder itself for
 * the same seconds, and merges what each worker wrote (its samples folded
 * into one line a stack) into one flame graph ({@link FlameGraph}).
 *
 * <p>Each worker's part goes back through the same dictionary, compressed
 * (key "p:ID:PID"), bounded to a share of the zone: the heaviest stacks
 * are kept, the rest summed into one line. One profile at a time per
 * nginx: the key is taken with an atomic add.
 */
final class Profile {
    static final String KEY = "profile";
    static final int MAX_SECONDS = 600;
    /** JFR's sampling period for CPU profiles; its profile.jfc uses 10 ms too. */
    static final int PERIOD_MILLIS = 10;

    /** The id of the last profile this worker ran, so that it runs each once. */
    private static volatile String lastId = "";

    private Profile() {
    }

    /** What was asked: seconds, and cpu or alloc. */
    record Ask(String id, int seconds, boolean alloc, long deadlineMillis) {
        String encode() {
            return id + " " + seconds + " " + (alloc ? "alloc" : "cpu") + " " + deadlineMillis;
        }

        static Ask decode(String s) {
            String[] f = s.split(" ");
            return new Ask(f[0], Integer.parseInt(f[1]), f[2].equals("alloc"), Long.parseLong(f[3]));
        }
    }

    /** Parses the query; null and a message in {@code why[0]} when it is wrong. */
    static Ask parse(String query, String[] why) {
        int seconds = 30;
        boolean alloc = false;
        for (String kv : query == null ? new String[0] : query.split("&")) {
            int eq = kv.indexOf('=');
            String k = eq < 0 ? kv : kv.substring(0, eq), v = eq < 0 ? "" : kv.substring(eq + 1);
            switch (k) {
                case "seconds" -> {
                    try {
                        seconds = Integer.parseInt(v);
                    } catch (NumberFormatException e) {
                        seconds = -1;
                    }
                    if (seconds < 1 || seconds > MAX_SECONDS) {
                        why[0] = "seconds must be a whole number from 1 to " + MAX_SECONDS;
                        return null;
                    }
                }
                case "event" -> {
                    if (!v.equals("cpu") && !v.equals("alloc")) {
                        why[0] = "event must be cpu or alloc";
                        return null;
                    }
                    alloc = v.equals("alloc");
                }
                case "format", "" -> {
                }
                default -> {
                    why[0] = "unknown parameter \"" + k + "\" (seconds, event, format)";
                    return null;
                }
            }
        }
        String id = Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        // the others start within a second (their publisher's period), and
        // JFR's first recording in a JVM takes a few seconds to set up on a
        // busy machine: how long the requester waits for them at most
        long deadline = System.currentTimeMillis() + seconds * 1000L + 15_000;
        return new Ask(id, seconds, alloc, deadline);
    }

    /**
     * Takes the dictionary's key for {@code ask}: false when another profile
     * runs (one at a time; it expires at that profile's deadline).
     */
    static boolean claim(SharedDict dict, Ask ask) {
        return dict.add(KEY, ask.encode(), ask.deadlineMillis() - System.currentTimeMillis() + 1000);
    }

    static void release(SharedDict dict, Ask ask) {
        String now = dict.getString(KEY);
        if (ask.encode().equals(now)) {
            dict.delete(KEY);
        }
    }

    /** Every worker, once a second (Metrics' publisher): starts a profile asked of it. */
    static void poll(SharedDict dict) {
        String s = dict.getString(KEY);
        if (s == null) {
            return;
        }
        Ask ask;
        try {
            ask = Ask.decode(s);
        } catch (RuntimeException e) {
            return;
        }
        // too late to be waited for (a worker that just started): no files left behind
        if (!ask.id().equals(lastId)
                && System.currentTimeMillis() + ask.seconds() * 1000L < ask.deadlineMillis()) {
            start(ask);
        }
    }

    /** Runs {@code ask} in this worker, on a thread of its own; once per id. */
    static synchronized Thread start(Ask ask) {
        if (ask.id().equals(lastId)) {
            return null;
        }
        lastId = ask.id();
        Thread t = new Thread(() -> {
            try {
                record(ask);
            } catch (Throwable e) {
                Log.error("nginx.jvm.profile", "the profile " + ask.id() + " failed in this worker", e);
            }
        }, "nginx-jvm profile");
        t.setDaemon(true);
        t.start();
        return t;
    }

    /**
     * Records for the ask's seconds, then writes this worker's samples as
     * folded stacks ("frame;frame;frame count", root first) with a header of
     * "# name value" lines, into {@link #dir}/PID.
     */
    static void record(Ask ask) throws IOException, InterruptedException {
        long pid = ProcessHandle.current().pid();
        long loopId = LoopCalls.loopThreadId();
        long heldBefore = LoopWatchdog.held.get();
        Map<String, Long> folded = new HashMap<>();
        long[] sums = new long[2];      // all, the loop's
        if (ask.alloc() || JFR_SAMPLES) {
            recordJfr(ask, folded, sums, loopId);
        } else {
            sampleStacks(ask, folded, sums, loopId);
        }
        long total = sums[0], loop = sums[1];
        StringBuilder b = new StringBuilder(256);
        b.append("# pid ").append(pid).append('\n');
        b.append("# worker ").append(System.getProperty("nginx.jvm.worker", "0")).append('\n');
        b.append("# total ").append(total).append('\n');
        b.append("# loop ").append(loop).append('\n');
        b.append("# held ").append(LoopWatchdog.held.get() - heldBefore).append('\n');
        b.append("# sampler ").append(ask.alloc() ? "jfr-alloc" : JFR_SAMPLES ? "jfr" : "stacks").append('\n');
        SharedDict dict = Metrics.dict();
        if (System.currentTimeMillis() >= ask.deadlineMillis()) {
            Log.warn("nginx.jvm.profile", "this worker's part of the profile " + ask.id()
                    + " came after the answer: left out");
        } else if (dict != null) {
            int workers = 0;
            for (String key : dict.keys(4096)) {
                workers += key.startsWith("w:") ? 1 : 0;
            }
            byte[] part = fit(b.toString(), folded, (int) Math.min(MAX_PART,
                    dict.capacity() / (2L * Math.max(1, workers))));
            if (!dict.put(partKey(ask, pid), part, ask.deadlineMillis() - System.currentTimeMillis() + 60_000)) {
                Log.warn("nginx.jvm.profile", "no room in " + Metrics.DICT + " for this worker's part of"
                        + " the profile " + ask.id() + " (" + part.length + " bytes)");
            }
        }
    }

    /** The largest part a worker puts into the dictionary, compressed. */
    static final int MAX_PART = 256 * 1024;

    static String partKey(Ask ask, long pid) {
        return "p:" + ask.id() + ":" + pid;
    }

    /**
     * The header and the stacks, gzipped, within {@code limit} bytes: when
     * all do not fit, the heaviest half that does, the rest summed as one
     * "(lighter stacks)" line.
     */
    static byte[] fit(String header, Map<String, Long> folded, int limit) throws IOException {
        List<Map.Entry<String, Long>> stacks = new ArrayList<>(folded.entrySet());
        stacks.sort((x, y) -> Long.compare(y.getValue(), x.getValue()));
        int keep = stacks.size();
        while (true) {
            StringBuilder b = new StringBuilder(header);
            long rest = 0;
            for (int i = 0; i < stacks.size(); i++) {
                if (i < keep) {
                    b.append(stacks.get(i).getKey()).append(' ').append(stacks.get(i).getValue()).append('\n');
                } else {
                    rest += stacks.get(i).getValue();
                }
            }
            if (rest > 0) {
                b.append("(lighter stacks) ").append(rest).append('\n');
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (GZIPOutputStream z = new GZIPOutputStream(out)) {
                z.write(b.toString().getBytes(StandardCharsets.UTF_8));
            }
            if (out.size() <= limit || keep == 0) {
                return out.toByteArray();
            }
            keep /= 2;
        }
    }

    /**
     * JFR's execution sampler suspends a thread with a signal to read its
     * stack; in an nginx worker that fails on JDK 17 (measured: about one
     * sample a second where a plain JVM takes a hundred). JDK 25's sampler
     * reads stacks cooperatively, with no signal (JEP 518), and works, and
     * sees virtual threads; older JDKs take {@link #sampleStacks}.
     */
    static final boolean JFR_SAMPLES = Runtime.version().feature() >= 25;

    private static void recordJfr(Ask ask, Map<String, Long> folded, long[] sums, long loopId)
            throws IOException, InterruptedException {
        Path jfr = Files.createTempFile("nginx-jvm-profile-" + ProcessHandle.current().pid() + "-", ".jfr");
        try {
            try (Recording r = new Recording()) {
                if (ask.alloc()) {
                    // weighted samples of allocations (JDK 16+): what profile.jfc enables
                    r.enable("jdk.ObjectAllocationSample").with("throttle", "300/s");
                } else {
                    r.enable("jdk.ExecutionSample").withPeriod(Duration.ofMillis(PERIOD_MILLIS));
                }
                r.setToDisk(true);
                r.start();
                Thread.sleep(ask.seconds() * 1000L);
                r.stop();
                r.dump(jfr);
            }
            try (RecordingFile f = new RecordingFile(jfr)) {
                while (f.hasMoreEvents()) {
                    RecordedEvent e = f.readEvent();
                    RecordedStackTrace st = e.getStackTrace();
                    if (st == null) {
                        continue;
                    }
                    long weight = ask.alloc() ? Math.max(0, e.getLong("weight")) : 1;
                    RecordedThread t = ask.alloc() ? e.getThread() : e.getThread("sampledThread");
                    boolean onLoop = t != null && t.getJavaThreadId() == loopId;
                    folded.merge(fold(st, t == null ? null : t.getJavaName(), onLoop), weight, Long::sum);
                    sums[0] += weight;
                    sums[1] += onLoop ? weight : 0;
                }
            }
        } finally {
            Files.deleteIfExists(jfr);
        }
    }

    /**
     * The stacks of the threads running Java, read every {@link #PERIOD_MILLIS}
     * ms through ThreadMXBean: each read is a safepoint, so samples lean to
     * where threads reach one, and a carrier's virtual thread is not seen. A
     * thread whose top frame is native (epoll, a socket read: waiting, or in
     * nginx's own C code) is not counted.
     */
    private static void sampleStacks(Ask ask, Map<String, Long> folded, long[] sums, long loopId)
            throws InterruptedException {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long self = Thread.currentThread().getId();
        long end = System.nanoTime() + ask.seconds() * 1_000_000_000L;
        long[] ids = mx.getAllThreadIds();
        long idsAt = System.nanoTime();
        while (System.nanoTime() < end) {
            if (System.nanoTime() - idsAt > 1_000_000_000L) {
                ids = mx.getAllThreadIds();
                idsAt = System.nanoTime();
            }
            for (ThreadInfo info : mx.getThreadInfo(ids, MAX_FRAMES)) {
                if (info == null || info.getThreadId() == self
                        || info.getThreadState() != Thread.State.RUNNABLE) {
                    continue;
                }
                StackTraceElement[] st = info.getStackTrace();
                if (st.length == 0 || st[0].isNativeMethod()) {
                    continue;
                }
                boolean onLoop = info.getThreadId() == loopId;
                StringBuilder b = new StringBuilder(st.length * 40 + 16);
                b.append(threadKind(info.getThreadName(), onLoop));
                for (int i = st.length - 1; i >= 0; i--) {
                    b.append(';').append(clean(st[i].getClassName())).append('.').append(clean(st[i].getMethodName()));
                }
                folded.merge(b.toString(), 1L, Long::sum);
                sums[0]++;
                sums[1] += onLoop ? 1 : 0;
            }
            Thread.sleep(PERIOD_MILLIS);
        }
    }

    /** Deeper frames than this are not read (the root's side is kept by JFR, the top's here). */
    static final int MAX_FRAMES = 128;

    /**
     * A stack as one folded line, root first: the thread's kind, then
     * "Class.method" frames. ';' and ' ' never appear in a name here, so
     * the line splits back cleanly.
     */
    static String fold(RecordedStackTrace st, String threadName, boolean onLoop) {
        List<RecordedFrame> frames = st.getFrames();
        StringBuilder b = new StringBuilder(frames.size() * 40 + 16);
        b.append(threadKind(threadName, onLoop));
        for (int i = frames.size() - 1; i >= 0; i--) {
            RecordedFrame f = frames.get(i);
            b.append(';');
            if (f.getMethod() == null) {
                b.append("(unknown)");
                continue;
            }
            String type = f.getMethod().getType() == null ? "?" : f.getMethod().getType().getName();
            b.append(clean(type)).append('.').append(clean(f.getMethod().getName()));
        }
        if (st.isTruncated()) {
            b.insert(b.indexOf(";") < 0 ? b.length() : b.indexOf(";"), ";(truncated)");
        }
        return b.toString();
    }

    private static String threadKind(String name, boolean onLoop) {
        if (onLoop) {
            return "event loop";
        }
        if (name == null || name.isEmpty()) {
            return "virtual threads";
        }
        // a pool's threads are one root, not one each: their names end in numbers
        return clean(name.replaceAll("[-#\\s]*\\d+$", ""));
    }

    private static String clean(String s) {
        return s.replace(';', ':').replace(' ', '_').replace('\n', '_');
    }

    /** One worker's file, read back. */
    record Part(long pid, String worker, long total, long loop, long held, String sampler,
                Map<String, Long> folded) {
    }

    static Part read(byte[] gzipped) throws IOException {
        String text;
        try (GZIPInputStream z = new GZIPInputStream(new ByteArrayInputStream(gzipped))) {
            text = new String(z.readAllBytes(), StandardCharsets.UTF_8);
        }
        long pid = 0, total = 0, loop = 0, held = 0;
        String worker = "?", sampler = "?";
        Map<String, Long> folded = new HashMap<>();
        for (String line : text.split("\n")) {
            int sp = line.lastIndexOf(' ');
            if (sp <= 0) {
                continue;
            }
            if (line.startsWith("# ")) {
                String name = line.substring(2, sp), v = line.substring(sp + 1);
                switch (name) {
                    case "pid" -> pid = Long.parseLong(v);
                    case "worker" -> worker = v;
                    case "total" -> total = Long.parseLong(v);
                    case "loop" -> loop = Long.parseLong(v);
                    case "held" -> held = Long.parseLong(v);
                    case "sampler" -> sampler = v;
                    default -> {
                    }
                }
            } else {
                folded.merge(line.substring(0, sp), Long.parseLong(line.substring(sp + 1)), Long::sum);
            }
        }
        return new Part(pid, worker, total, loop, held, sampler, folded);
    }

    /**
     * The requesting worker: waits until every live worker (those publishing
     * figures, {@code pids}) put its part or the deadline passes; reads what
     * came, and removes it.
     */
    static List<Part> collect(SharedDict dict, Ask ask, List<Long> pids) throws IOException, InterruptedException {
        List<Part> parts = new ArrayList<>();
        List<Long> waiting = new ArrayList<>(pids);
        while (true) {
            for (var it = waiting.iterator(); it.hasNext(); ) {
                long p = it.next();
                byte[] part = dict.getBytes(partKey(ask, p));
                if (part != null) {
                    dict.delete(partKey(ask, p));
                    parts.add(read(part));
                    it.remove();
                }
            }
            if (waiting.isEmpty() || System.currentTimeMillis() >= ask.deadlineMillis()) {
                break;
            }
            Thread.sleep(100);
        }
        parts.sort((a, b) -> a.worker().compareTo(b.worker()) != 0
                ? a.worker().compareTo(b.worker()) : Long.compare(a.pid(), b.pid()));
        return parts;
    }
}
