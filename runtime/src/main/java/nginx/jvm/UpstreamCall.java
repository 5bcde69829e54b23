package nginx.jvm;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Flow;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One call of {@link Upstream}'s in flight: the answer's bytes as the C
 * module reads them from the call's end of its socket pair
 * (ngx_http_jvm_client.c), parsed on the event loop (status line, header
 * fields, a chunked or counted body), and the body's bytes queued for its
 * reader, who is this InputStream. Past {@link #HIGH} bytes unread the C
 * module reads no more ({@link #PAUSE}) until the reader is below {@link
 * #LOW} again.
 */
final class UpstreamCall extends InputStream {
    static final int MORE = 0, PAUSE = 1, DROP = 2;
    /** clientData's length when the worker leaves with the call in flight. */
    static final int LEAVING = -2;
    /** clientData's length when a piece of the request's body was written whole. */
    static final int WRITTEN = -3;
    /** A streamed request body's pieces: their size, and how many may wait to be written. */
    private static final int PIECE = 64 * 1024, PIECES = 4;
    private static final java.util.concurrent.ExecutorService UPLOADERS =
            java.util.concurrent.Executors.newCachedThreadPool(r -> {
                Thread t = new Thread(r, "nginx-jvm-call-body");
                t.setDaemon(true);
                return t;
            });
    static final int HIGH = 256 * 1024, LOW = 64 * 1024;
    private static final int HEAD_MAX = 64 * 1024;

    // Event loop only: the calls the C module has, by id.
    private static final Map<Integer, UpstreamCall> calls = new HashMap<>();
    private static int next;
    /** Their number, for any thread. */
    private static final AtomicInteger count = new AtomicInteger();
    /** jvm_status's figures: calls begun, calls that failed (no answer, or a body cut), calls waiting. */
    private static final LongAdder begun = new LongAdder(), failed = new LongAdder();
    private static volatile int waitingNow;
    // Event loop only: the calls that wait for connections to spare.
    private static final ArrayDeque<Waiting> waiting = new ArrayDeque<>();
    private static final int WAITING_MAX = 100_000;
    private static final long RETRY_MS = 5;
    private static boolean retrying;

    private enum State { HEAD, LENGTH, CHUNK_SIZE, CHUNK_DATA, CHUNK_CRLF, TRAILER, UNTIL_END, DONE }

    private final int id;
    private final boolean head;
    private final CompletableFuture<UpstreamCall> future;
    private long handle;
    /** A request body streamed (chunked) by an uploader thread, or null. */
    private InputStream upload;
    private final java.util.concurrent.Semaphore room = new java.util.concurrent.Semaphore(PIECES);
    private volatile boolean over;
    private int status;
    private List<String[]> fields;

    // Event loop only: the parser's state.
    private State state = State.HEAD;
    private ByteArrayOutputStream headBytes = new ByteArrayOutputStream(512);
    private int tail;
    private long remaining;
    private final StringBuilder line = new StringBuilder();

    // Under lock: what the reader has to read.
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition more = lock.newCondition();
    private final ArrayDeque<byte[]> queue = new ArrayDeque<>();
    private int queued;
    private boolean ended;
    private boolean closed;
    private boolean paused;
    private IOException failure;
    private byte[] current;
    private int at;
    /**
     * The body's one reader: the InputStream's reads, a Flow subscriber's
     * delivery, or a response relaying it on the loop (then {@code
     * listener} is told of each arrival, the end and a failure).
     */
    private final AtomicBoolean subscribed = new AtomicBoolean();
    private volatile Runnable listener;

    private UpstreamCall(int id, boolean head, CompletableFuture<UpstreamCall> future) {
        this.id = id;
        this.head = head;
        this.future = future;
    }

    /** Any thread: the call started on the loop; its future. */
    static CompletableFuture<UpstreamCall> start(byte[] name, byte[] method, byte[] target, byte[] fields,
            byte[] body, InputStream upload, boolean head) {
        Waiting w = new Waiting(name, method, target, fields, body, head);
        w.upload = upload;
        if (LoopCalls.direct()) {
            w.begin();
        } else {
            LoopCalls.post(w::begin);
        }
        return w.result;
    }

    /**
     * A call not begun yet: the worker had no connections to spare (three a
     * call, a quarter of worker_connections kept for clients). It waits, in
     * order, until calls end; at most {@link #WAITING_MAX} wait.
     */
    private static final class Waiting {
        final byte[] name, method, target, fields, body;
        final boolean head;
        final CompletableFuture<UpstreamCall> result = new CompletableFuture<>();
        InputStream upload;

        Waiting(byte[] name, byte[] method, byte[] target, byte[] fields, byte[] body, boolean head) {
            this.name = name;
            this.method = method;
            this.target = target;
            this.fields = fields;
            this.body = body;
            this.head = head;
        }

        /** Event loop: begun, or queued behind those that wait. */
        void begin() {
            if (!waiting.isEmpty() || !tryStart()) {
                if (waiting.size() >= WAITING_MAX) {
                    failed.increment();
                    result.completeExceptionally(new IllegalStateException(
                            "too many calls wait for a connection (" + WAITING_MAX + ")"));
                    return;
                }
                waiting.add(this);
                waitingNow = waiting.size();
                retryLater();
            }
        }

        /** Event loop: false when there is no room for it now. */
        boolean tryStart() {
            if (result.isDone()) {
                return true;            // cancelled while it waited
            }
            try {
                UpstreamCall c = new UpstreamCall(id(), head, result);
                c.handle = Natives.clientStart(c.id, name, method, target, fields, body);
                if (c.handle == 0) {
                    return false;
                }
                calls.put(c.id, c);
                count.incrementAndGet();
                begun.increment();
                if (upload != null) {
                    c.upload = upload;
                    UPLOADERS.execute(c::upload);
                }
                // cancelled before the head came (now or later): the call ends
                result.whenComplete((v, e) -> {
                    if (e instanceof CancellationException) {
                        c.close();
                    }
                });
            } catch (Throwable t) {
                failed.increment();
                result.completeExceptionally(t);
            }
            return true;
        }
    }

    /** Event loop, the worker leaving: the calls that wait fail. */
    static void abandonWaiting() {
        Waiting w;
        while ((w = waiting.poll()) != null) {
            failed.increment();
            w.result.completeExceptionally(new java.io.IOException("the worker is leaving"));
        }
        waitingNow = 0;
    }

    /** Event loop: the calls that wait begin while there is room. */
    private static void startWaiting() {
        retrying = false;
        Waiting w;
        while ((w = waiting.peek()) != null && w.tryStart()) {
            waiting.poll();
        }
        waitingNow = waiting.size();
        if (!waiting.isEmpty()) {
            retryLater();
        }
    }

    /**
     * Connections come free when nginx closes them, after a call's end and
     * not always at once: calls that wait are tried again a moment later.
     */
    private static void retryLater() {
        if (!retrying) {
            retrying = true;
            Timers.after(RETRY_MS, UpstreamCall::startWaiting);
        }
    }

    private static int id() {
        do {
            next = next == Integer.MAX_VALUE ? 1 : next + 1;
        } while (calls.containsKey(next));
        return next;
    }

    /** Event loop (Worker.clientData): n bytes of call id's answer in {@code in}; 0 its end, -1 failed. */
    static int data(int id, ByteBuffer in, int n) {
        UpstreamCall c = n > 0 || n == WRITTEN ? calls.get(id) : forget(id);
        if (c == null) {
            return DROP;
        }
        try {
            if (n == WRITTEN) {
                c.room.release();
            } else if (n == LEAVING) {
                c.fail("the worker is leaving");
            } else if (n < 0) {
                c.fail("the connection to nginx failed");
            } else if (n == 0) {
                c.end();
            } else {
                byte[] b = new byte[n];
                Wire.get(in, 0, b, 0, n);
                return c.feed(b, 0, n);
            }
            return MORE;
        } catch (IOException | RuntimeException e) {
            forget(id);
            c.fail(e instanceof IOException ? e.getMessage() : "the answer could not be read: " + e);
            return DROP;
        }
    }

    /** The answer's status, once its head came. */
    int status() {
        return status;
    }

    /** The answer's header fields, name and value, once its head came. */
    List<String[]> fields() {
        return fields;
    }

    /** Event loop: call id is the C module's no more. */
    private static UpstreamCall forget(int id) {
        UpstreamCall c = calls.remove(id);
        if (c != null) {
            c.over = true;
            c.room.release(PIECES);     // an uploader waiting for room sees the end
            count.decrementAndGet();
            if (!waiting.isEmpty() && !retrying) {
                // after the C module freed the call's connections
                retrying = true;
                LoopCalls.post(UpstreamCall::startWaiting);
            }
        }
        return c;
    }

    /** The calls in flight, from any thread. */
    static int inFlight() {
        return count.get();
    }

    /** jvm_status's lines (Metrics.publish): calls in flight, waiting, begun and failed. */
    static void figures(StringBuilder b) {
        Metrics.line(b, "calls_in_flight", count.get());
        Metrics.line(b, "calls_waiting", waitingNow);
        Metrics.line(b, "calls_total", begun.sum());
        Metrics.line(b, "calls_failed", failed.sum());
    }

    // ---- a request body streamed: the uploader's thread ----

    /**
     * Reads the request body and hands it to the loop in chunks (chunked
     * transfer coding), at most {@link #PIECES} not yet written: a backend
     * (or nginx, buffering it) that reads slowly holds the reader back. A
     * body that fails ends the call.
     */
    private void upload() {
        byte[] buf = new byte[PIECE];
        try (InputStream in = upload) {
            for (;;) {
                int k = in.read(buf);
                if (k == 0) {
                    continue;
                }
                byte[] chunk = k < 0 ? "0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1) : chunk(buf, k);
                while (!room.tryAcquire(100, java.util.concurrent.TimeUnit.MILLISECONDS)) {
                    if (over) {
                        return;
                    }
                }
                if (over) {
                    return;
                }
                LoopCalls.post(() -> {
                    if (calls.get(id) == this) {
                        Natives.clientWrite(handle, chunk);
                    }
                });
                if (k < 0) {
                    return;
                }
            }
        } catch (IOException | InterruptedException e) {
            if (!over) {
                fail("the request body failed: " + e);
                close();
            }
        }
    }

    private static byte[] chunk(byte[] b, int k) {
        byte[] size = (Integer.toHexString(k) + "\r\n").getBytes(StandardCharsets.ISO_8859_1);
        byte[] out = new byte[size.length + k + 2];
        System.arraycopy(size, 0, out, 0, size.length);
        System.arraycopy(b, 0, out, size.length, k);
        out[out.length - 2] = '\r';
        out[out.length - 1] = '\n';
        return out;
    }

    // ---- the event loop's side: parsing ----

    private int feed(byte[] b, int off, int len) throws IOException {
        int end = off + len;
        while (off < end) {
            switch (state) {
                case HEAD:
                    off = head(b, off, end);
                    break;
                case LENGTH:
                case CHUNK_DATA:
                case UNTIL_END: {
                    int k = (int) Math.min(end - off, state == State.UNTIL_END ? Long.MAX_VALUE : remaining);
                    offer(java.util.Arrays.copyOfRange(b, off, off + k));
                    off += k;
                    remaining -= k;
                    if (remaining == 0 && state == State.LENGTH) {
                        finish();
                    } else if (remaining == 0 && state == State.CHUNK_DATA) {
                        state = State.CHUNK_CRLF;
                    }
                    break;
                }
                case CHUNK_SIZE:
                case CHUNK_CRLF:
                case TRAILER:
                    off = chunkLine(b, off, end);
                    break;
                default:
                    off = end;              // after the body: nothing more is nginx's
            }
        }
        return pressure();
    }

    /** The status line and header fields, up to the empty line. */
    private int head(byte[] b, int off, int end) throws IOException {
        while (off < end) {
            byte x = b[off++];
            headBytes.write(x);
            tail = tail << 8 | x & 0xff;
            if (tail == 0x0d0a0d0a || (tail & 0xffff) == 0x0a0a) {
                parseHead();
                return off;
            }
            if (headBytes.size() > HEAD_MAX) {
                throw new IOException("the answer's header is over " + HEAD_MAX + " bytes");
            }
        }
        return off;
    }

    private void parseHead() throws IOException {
        String text = new String(headBytes.toByteArray(), StandardCharsets.ISO_8859_1);
        headBytes = null;
        String[] lines = text.split("\r?\n");
        if (!lines[0].startsWith("HTTP/1.") || lines[0].length() < 12) {
            throw new IOException("not an HTTP answer: " + Gate.quote(lines[0]));
        }
        int status = Integer.parseInt(lines[0].substring(9, 12));
        List<String[]> fields = new ArrayList<>();
        boolean chunked = false;
        long length = -1;
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            if (colon <= 0) {
                continue;
            }
            String name = lines[i].substring(0, colon).trim(), value = lines[i].substring(colon + 1).trim();
            fields.add(new String[] {name, value});
            if (name.equalsIgnoreCase("Transfer-Encoding") && value.equalsIgnoreCase("chunked")) {
                chunked = true;
            } else if (name.equalsIgnoreCase("Content-Length")) {
                length = Long.parseLong(value);
            }
        }
        if (head || status == 204 || status == 304 || status < 200) {
            finish();
        } else if (chunked) {
            state = State.CHUNK_SIZE;
        } else if (length >= 0) {
            remaining = length;
            state = State.LENGTH;
            if (length == 0) {
                finish();
            }
        } else {
            state = State.UNTIL_END;
        }
        this.status = status;
        this.fields = fields;
        future.complete(this);
    }

    /** A chunk's size line, the CRLF after its data, or the trailer's lines. */
    private int chunkLine(byte[] b, int off, int end) throws IOException {
        while (off < end) {
            char ch = (char) (b[off++] & 0xff);
            if (ch != '\n') {
                if (line.length() > 1024) {
                    throw new IOException("a chunk's line is too long");
                }
                line.append(ch);
                continue;
            }
            String l = line.toString().trim();
            line.setLength(0);
            if (state == State.CHUNK_CRLF) {
                state = State.CHUNK_SIZE;
            } else if (state == State.TRAILER) {
                if (l.isEmpty()) {
                    finish();
                }
            } else {
                int semi = l.indexOf(';');
                long size = Long.parseLong(semi < 0 ? l : l.substring(0, semi).trim(), 16);
                if (size == 0) {
                    state = State.TRAILER;
                } else {
                    remaining = size;
                    state = State.CHUNK_DATA;
                }
            }
            return off;
        }
        return off;
    }

    /** The body is whole. */
    private void finish() {
        state = State.DONE;
        lock.lock();
        try {
            ended = true;
            more.signalAll();
        } finally {
            lock.unlock();
        }
        signal();
    }

    /** nginx closed the connection: the body's end, or its cut. */
    private void end() {
        if (state == State.UNTIL_END || state == State.DONE) {
            finish();
        } else if (state == State.HEAD) {
            fail("nginx closed the call's connection before an answer");
        } else {
            fail("the answer ended early (" + (state == State.LENGTH ? remaining + " bytes short"
                    : "no last chunk") + "): the backend failed mid-body, or a timeout");
        }
    }

    private void fail(String why) {
        IOException e = new IOException(why);
        boolean first = future.completeExceptionally(e);
        lock.lock();
        try {
            if (!ended && failure == null) {
                failure = e;
                first = true;
            }
            more.signalAll();
        } finally {
            lock.unlock();
        }
        if (first) {
            failed.increment();
        }
        signal();
    }

    /** A subscriber or a relaying response, when there is one, has more to do. */
    private void signal() {
        Runnable l = listener;
        if (l != null) {
            l.run();
        }
    }

    private void offer(byte[] piece) {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            queue.add(piece);
            queued += piece.length;
            more.signalAll();
        } finally {
            lock.unlock();
        }
        signal();
    }

    private int pressure() {
        lock.lock();
        try {
            if (queued >= HIGH && !closed) {
                paused = true;
                return PAUSE;
            }
            return MORE;
        } finally {
            lock.unlock();
        }
    }

    // ---- the reader's side ----

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (listener != null) {
            throw new IllegalStateException("the call's body has another reader (Reply.publisher, or a response"
                    + " relaying it)");
        }
        if (len == 0) {
            return 0;
        }
        boolean resume = false;
        int n;
        lock.lock();
        try {
            while (current == null) {
                if (closed) {
                    throw new IOException("the call's body is closed");
                }
                current = queue.poll();
                at = 0;
                if (current != null) {
                    break;
                }
                if (failure != null) {
                    throw new IOException(failure.getMessage(), failure);
                }
                if (ended) {
                    return -1;
                }
                LoopCalls.refuseOnLoop("reading a call's body before it arrived",
                        "read it on a thread that may block, or hand it to a Response");
                more.awaitUninterruptibly();
            }
            n = Math.min(len, current.length - at);
            System.arraycopy(current, at, b, off, n);
            resume = consumed(n);
        } finally {
            lock.unlock();
        }
        if (resume) {
            resume();
        }
        return n;
    }

    /**
     * Under the lock: {@code n} bytes of {@code current} taken by the
     * reader; true when that took it below {@link #LOW} while paused (the
     * caller, the lock released, then {@link #resume}s the C side).
     */
    private boolean consumed(int n) {
        at += n;
        queued -= n;
        if (at == current.length) {
            current = null;
        }
        if (paused && queued <= LOW) {
            paused = false;
            return true;
        }
        return false;
    }

    /** The reader is below LOW again: the C module reads on. */
    private void resume() {
        onLoop(() -> {
            if (calls.get(id) == this) {
                Natives.clientResume(handle);
            }
        });
    }

    @Override
    public int available() {
        lock.lock();
        try {
            return queued;
        } finally {
            lock.unlock();
        }
    }

    /** The body is not wanted (any more): the call ends, nginx sees its client leave. */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            queue.clear();
            current = null;
            queued = 0;
            more.signalAll();
        } finally {
            lock.unlock();
        }
        over = true;
        room.release(PIECES);
        onLoop(() -> {
            if (calls.get(id) == this) {
                forget(id);
                Natives.clientClose(handle);
            }
        });
    }

    // ---- the body as a Flow.Publisher ----

    /** What {@link #take} found: the body's end. */
    private static final Object END = new Object();

    /**
     * The body for one Flow subscriber (Reply.publisher): its pieces
     * delivered on {@code executor} as they come and as the subscriber
     * asks; a second subscriber, or one after the InputStream was read, is
     * refused with onError.
     */
    Flow.Publisher<ByteBuffer> publisher(Executor executor) {
        return subscriber -> {
            java.util.Objects.requireNonNull(subscriber, "subscriber");
            if (!claim()) {
                subscriber.onSubscribe(new Flow.Subscription() {
                    @Override
                    public void request(long n) {
                    }

                    @Override
                    public void cancel() {
                    }
                });
                subscriber.onError(new IllegalStateException(
                        "a call's body has one reader: it is subscribed, read or closed already"));
                return;
            }
            Delivery d = new Delivery(subscriber, executor);
            listener = d::signal;
            subscriber.onSubscribe(d);
            d.signal();
        };
    }

    /** The body's reader is the caller from now on: false when it was read, closed or claimed before. */
    private boolean claim() {
        lock.lock();
        try {
            if (current != null || closed) {
                return false;
            }
        } finally {
            lock.unlock();
        }
        return subscribed.compareAndSet(false, true);
    }

    /**
     * The body as a response's (Tasks.stream): nginx takes each piece as
     * it arrives, on the loop, and {@code wake} (the response's task ready)
     * runs at each arrival, the end or a failure; null when the body was
     * read or claimed already (then it is relayed as any InputStream).
     */
    BodySource relay(Runnable wake) {
        if (!claim()) {
            return null;
        }
        listener = wake;
        return new BodySource() {
            @Override
            int fill(ByteBuffer out) throws IOException {
                return takeInto(out);
            }

            @Override
            void close() {
                UpstreamCall.this.close();
            }
        };
    }

    /**
     * Event loop: the next piece into {@code out}, {@link Wire#NEXT_WAIT}
     * while none came (the listener tells when one does), {@link
     * Wire#NEXT_END} at the end; the body's failure thrown.
     */
    private int takeInto(ByteBuffer out) throws IOException {
        boolean resume = false;
        int n;
        lock.lock();
        try {
            if (current == null) {
                current = queue.poll();
                at = 0;
            }
            if (current == null) {
                if (failure != null) {
                    throw new IOException(failure.getMessage(), failure);
                }
                return ended || closed ? Wire.NEXT_END : Wire.NEXT_WAIT;
            }
            n = Math.min(out.capacity(), current.length - at);
            out.put(0, current, at, n);
            resume = consumed(n);
        } finally {
            lock.unlock();
        }
        if (resume) {
            resume();
        }
        return n;
    }

    /**
     * The next thing for a subscriber: a piece (only when {@code data}: it
     * asked for one), {@link #END}, the body's failure, or null (nothing
     * now). Pieces go before the end or the failure, as with read.
     */
    private Object take(boolean data) {
        boolean resume = false;
        Object out = null;
        lock.lock();
        try {
            if (closed) {
                return null;
            }
            if (data && !queue.isEmpty()) {
                current = queue.poll();
                at = 0;
                out = current;
                resume = consumed(current.length);
            } else if (queue.isEmpty()) {
                out = failure != null ? failure : ended ? END : null;
            }
        } finally {
            lock.unlock();
        }
        if (resume) {
            resume();
        }
        return out;
    }

    /**
     * A subscriber's subscription: its demand, and a drain run on the
     * executor by one thread at a time (whoever signals while it runs
     * makes it go round again), so onNext, onComplete and onError never
     * overlap, as the Flow contract asks.
     */
    private final class Delivery implements Flow.Subscription, Runnable {
        private final Flow.Subscriber<? super ByteBuffer> subscriber;
        private final Executor executor;
        private final AtomicLong demand = new AtomicLong();
        private final AtomicInteger work = new AtomicInteger();
        private volatile boolean done;
        private volatile Throwable refused;

        Delivery(Flow.Subscriber<? super ByteBuffer> subscriber, Executor executor) {
            this.subscriber = subscriber;
            this.executor = executor;
        }

        @Override
        public void request(long n) {
            if (n <= 0) {
                // the contract's rule 3.9: an error, and the call ends
                refused = new IllegalArgumentException("request(" + n + "): demand must be positive");
            } else {
                demand.getAndAccumulate(n, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b);
            }
            signal();
        }

        @Override
        public void cancel() {
            done = true;
            close();
        }

        void signal() {
            if (work.getAndIncrement() == 0) {
                try {
                    executor.execute(this);
                } catch (RejectedExecutionException e) {
                    work.set(0);
                    done = true;
                    close();
                    subscriber.onError(e);
                }
            }
        }

        @Override
        public void run() {
            int missed = 1;
            do {
                drain();
                missed = work.addAndGet(-missed);
            } while (missed != 0);
        }

        private void drain() {
            try {
                while (!done) {
                    Throwable r = refused;
                    if (r != null) {
                        done = true;
                        close();
                        subscriber.onError(r);
                        return;
                    }
                    Object next = take(demand.get() > 0);
                    if (next == null) {
                        return;
                    }
                    if (next == END) {
                        done = true;
                        subscriber.onComplete();
                    } else if (next instanceof Throwable t) {
                        done = true;
                        subscriber.onError(t);
                    } else {
                        demand.decrementAndGet();
                        subscriber.onNext(ByteBuffer.wrap((byte[]) next));
                    }
                }
            } catch (Throwable t) {
                // a subscriber that throws has cancelled (the contract's rule 2.13)
                done = true;
                close();
                Log.error("nginx.jvm.Upstream", "a call's body subscriber threw; the call is ended", t);
            }
        }
    }

    /**
     * Always queued, even on the loop: a reader there may be inside the C
     * module's read of this very call (a future's callback), which must not
     * see the call freed under it.
     */
    private static void onLoop(Runnable r) {
        LoopCalls.post(r);
    }
}
