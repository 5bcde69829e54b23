package nginx.jvm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The WebSockets of a worker, on the Java side of the C module's frames
 * ({@code ngx_http_jvm_websocket.c} parses and writes them; the entry points
 * are {@link Worker}'s {@code ws*} methods, on the event loop). A socket is
 * kept from the response that upgrades it until the C module says it closed;
 * frames to send wait in its bounded queue until the loop takes them, woken
 * through the eventfd as tasks are.
 */
final class WebSockets {
    private static final int TEXT = 1, BINARY = 2, CLOSE = 8, PING = 9, PONG = 10;
    /**
     * How far beyond a full queue a sender that cannot wait (the event loop,
     * {@code sendAsync}) may go, in bytes of payload: a burst from the loop
     * (a topic's messages, a loop listener's replies) reaches a client that
     * reads, while one that does not read costs bounded memory until
     * send_timeout closes it.
     */
    static final int SLACK_BYTES = 1024 * 1024;

    private final Runnable waker;
    private final ConcurrentLinkedQueue<Socket> ready = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean signalled = new AtomicBoolean();
    // Event loop only.
    private final Map<Integer, Socket> sockets = new HashMap<>();
    private int lastId = -1;
    private volatile int queueSize = 64;

    private static final ExecutorService CALLBACKS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "nginx-jvm-websocket");
        t.setDaemon(true);
        return t;
    });
    private static final Executor VIRTUAL = virtualThreads();

    WebSockets(Runnable waker) {
        this.waker = waker;
    }

    private static Executor virtualThreads() {
        try {
            return (Executor) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    void configure(int sendQueue) {
        queueSize = Math.max(1, sendQueue);
    }

    /** Keeps the listener of an upgrade response; returns the socket's id. */
    int register(WebSocketListener listener, int mode) {
        int id = lastId;
        do {
            id = id == Integer.MAX_VALUE ? 0 : id + 1;
        } while (sockets.containsKey(id));
        lastId = id;
        sockets.put(id, new Socket(id, listener, executor(mode)));
        return id;
    }

    /**
     * Where a socket's listener runs: on the loop (null) in loop mode; in
     * coloop, on a virtual thread the loop carries (it may block, parking;
     * events are only ever given to it on the loop, which that executor
     * needs); else on a virtual thread or a callback thread.
     */
    private static Executor executor(int mode) {
        if (mode == Wire.LOOP) {
            return null;
        }
        LoopScheduler coloop = LoopScheduler.current();
        if (mode == Wire.COLOOP && coloop != null) {
            return coloop.carrying("a WebSocket listener");
        }
        return (mode == Wire.VIRTUAL || mode == Wire.COLOOP) && VIRTUAL != null ? VIRTUAL : CALLBACKS;
    }

    int open(int id) {
        Socket s = sockets.get(id);
        if (s == null) {
            return Wire.WS_C_PINGS;
        }
        s.opened = true;
        s.event(false, () -> s.listener.onOpen(s));
        return s.listener instanceof WebSocketPingListener ? Wire.WS_JAVA_PINGS : Wire.WS_C_PINGS;
    }

    void abandon(int id) {
        sockets.remove(id);
    }

    int message(int id, int opcode, ByteBuffer in, int length) {
        Socket s = sockets.get(id);
        if (s == null) {
            return Wire.WS_CONTINUE;
        }
        byte[] bytes = new byte[length];
        in.get(0, bytes, 0, length);
        WebSocketListener l = s.listener;
        switch (opcode) {
            case TEXT:
                String text = new String(bytes, StandardCharsets.UTF_8);
                s.event(true, () -> l.onMessage(s, text));
                break;
            case BINARY:
                s.event(true, () -> l.onMessage(s, ByteBuffer.wrap(bytes)));
                break;
            case PING:
                if (l instanceof WebSocketPingListener) {
                    s.event(true, () -> ((WebSocketPingListener) l).onPing(s, ByteBuffer.wrap(bytes)));
                }
                break;
            case PONG:
                s.event(true, () -> l.onPong(s, ByteBuffer.wrap(bytes)));
                break;
            default:
                break;
        }
        if (s.inbound < queueSize && s.outbound() < queueSize) {
            return Wire.WS_CONTINUE;
        }
        // The C module stops reading from the client while the listener is
        // behind, or while the frames for the client pile up (it sends, and
        // does not read what it is sent): the listener's thread, or the loop
        // as the frames leave, wakes it when both are down to half. Checked
        // again after the flag, in case that just happened.
        s.paused = true;
        if (s.drained()) {
            s.paused = false;
            return Wire.WS_CONTINUE;
        }
        return Wire.WS_PAUSE;
    }

    void closed(int id, int code, ByteBuffer in, int reasonLength) {
        Socket s = sockets.remove(id);
        if (s == null) {
            return;
        }
        byte[] bytes = new byte[reasonLength];
        in.get(0, bytes, 0, reasonLength);
        String reason = new String(bytes, StandardCharsets.UTF_8);
        s.shut();
        if (!s.opened) {
            return;
        }
        if (code == 1002 || code == 1007 || code == 1009 || code == 1011) {
            IOException e = new IOException("the WebSocket failed with close code " + code
                    + (reason.isEmpty() ? "" : ": " + reason));
            s.event(false, () -> s.listener.onError(s, e));
        }
        s.event(false, () -> s.listener.onClose(s, code, reason));
    }

    /**
     * The next socket with frames to send, or that may read again: its id
     * while it is to read no more, else -2 - id; -1 when there is none.
     */
    int poll() {
        signalled.set(false);
        Socket s;
        while ((s = ready.poll()) != null) {
            s.queued = 0;
            if (sockets.get(s.id) == s) {
                return s.paused ? s.id : -2 - s.id;
            }
        }
        return -1;
    }

    /**
     * Event loop, woken: whether {@link #poll} has a socket to name. Either
     * this sees a socket queued, or its queuing wakes the loop again.
     */
    boolean pending() {
        signalled.set(false);
        return !ready.isEmpty();
    }

    /**
     * The next frame of socket {@code id} into {@code out}: int opcode, then the
     * payload. Returns its length, 0 when none is queued, or minus the length
     * it needs when {@code out} is too small (the frame stays queued).
     */
    int take(int id, ByteBuffer out) {
        Socket s = sockets.get(id);
        if (s == null) {
            return 0;
        }
        return s.take(out);
    }

    /** How many sockets the worker keeps (tests). */
    int size() {
        return sockets.size();
    }

    void stop() {
        sockets.clear();
    }

    private void ready(Socket s) {
        if (QUEUED.compareAndSet(s, 0, 1)) {
            ready.add(s);
            if (signalled.compareAndSet(false, true)) {
                waker.run();
            }
        }
    }

    /** An outgoing frame, and who waits for it to leave. */
    private static final class Frame {
        final int opcode;
        final byte[] payload;
        final WebSocket.Callback callback;

        Frame(int opcode, byte[] payload, WebSocket.Callback callback) {
            this.opcode = opcode;
            this.payload = payload;
            this.callback = callback;
        }
    }

    private static final AtomicIntegerFieldUpdater<Socket> QUEUED =
            AtomicIntegerFieldUpdater.newUpdater(Socket.class, "queued");
    private static final AtomicIntegerFieldUpdater<Socket> INBOUND =
            AtomicIntegerFieldUpdater.newUpdater(Socket.class, "inbound");
    private static final AtomicIntegerFieldUpdater<Socket> PENDING =
            AtomicIntegerFieldUpdater.newUpdater(Socket.class, "pending");

    /**
     * An open socket: an idle one is this object and its listener, nothing
     * more (queues are made when first needed, counters are plain fields).
     */
    private final class Socket implements WebSocket {
        final int id;
        final WebSocketListener listener;
        /** Where callbacks run: null for the event loop. */
        private final Executor executor;
        /** 1 while on the ready queue. */
        volatile int queued;
        /** Messages given to the listener, not yet handled. */
        volatile int inbound;
        volatile boolean opened;

        /**
         * Guards the outgoing queue (made when a frame is queued, dropped
         * when drained) and the closing flags. A lock, not the socket's
         * monitor: a sender waiting for room in a coloop listener parks
         * its virtual thread; in Object.wait, JDK 21 to 23 would pin it to
         * its carrier, the event loop, which alone makes room.
         */
        private final ReentrantLock lock = new ReentrantLock();
        private final Condition room = lock.newCondition();
        private Queue<Frame> out;
        private long outBytes;
        private boolean closing;
        private boolean closed;

        // The mailbox of a listener off the loop: one event at a time, in order.
        private final ConcurrentLinkedQueue<Event> events;
        volatile int pending;
        volatile boolean paused;

        Socket(int id, WebSocketListener listener, Executor executor) {
            this.id = id;
            this.listener = listener;
            this.executor = executor;
            this.events = executor == null ? null : new ConcurrentLinkedQueue<>();
        }

        // --- events, to the listener ---

        void event(boolean message, Runnable callback) {
            Event e = new Event(message, callback);
            if (message) {
                INBOUND.incrementAndGet(this);
            }
            if (executor == null) {
                run(e);
                return;
            }
            events.add(e);
            if (PENDING.getAndIncrement(this) == 0) {
                executor.execute(this::drain);
            }
        }

        private void drain() {
            do {
                run(events.poll());
            } while (PENDING.decrementAndGet(this) > 0);
        }

        private void run(Event e) {
            try {
                e.callback.run();
            } catch (Throwable t) {
                Log.error("nginx.jvm.WebSockets", "a websocket listener threw", t);
                close(1011, "");
            } finally {
                if (e.message) {
                    INBOUND.decrementAndGet(this);
                    resume();
                }
            }
        }

        /** Frames waiting to leave. */
        int outbound() {
            lock.lock();
            try {
                return out == null ? 0 : out.size();
            } finally {
                lock.unlock();
            }
        }

        /** Both the listener and the client have caught up, to half the queue. */
        boolean drained() {
            return inbound <= queueSize / 2 && outbound() <= queueSize / 2;
        }

        /** The C module reads from the client again, if it stopped and may go on. */
        void resume() {
            if (paused && drained()) {
                paused = false;
                ready(this);
            }
        }

        // --- frames, to the client ---

        int take(ByteBuffer buf) {
            Frame f;
            lock.lock();
            try {
                f = out == null ? null : out.peek();
                if (f == null) {
                    return 0;
                }
                if (4 + f.payload.length > buf.capacity()) {
                    return -(4 + f.payload.length);
                }
                out.poll();
                outBytes -= f.payload.length;
                if (out.isEmpty()) {
                    out = null;     // an idle socket holds no queue
                }
                room.signalAll();
            } finally {
                lock.unlock();
            }
            resume();
            buf.putInt(0, f.opcode);
            buf.put(4, f.payload, 0, f.payload.length);
            if (f.callback != null) {
                CALLBACKS.execute(f.callback::succeeded);
            }
            return 4 + f.payload.length;
        }

        /**
         * Queues a frame: a sender that may wait does while the queue is
         * full; one that may not (on the loop, or async) goes beyond it by
         * up to {@link #SLACK_BYTES}. False when there is no room.
         */
        private boolean enqueue(Frame f, boolean control, boolean wait) throws IOException {
            lock.lock();
            try {
                while (true) {
                    if (closing || closed) {
                        throw new IOException("the WebSocket is closed");
                    }
                    if (out == null) {
                        out = new ArrayDeque<>();
                    }
                    if (control ? out.size() < queueSize + 8 : out.size() < queueSize) {
                        break;
                    }
                    if (!wait) {
                        if (!control && outBytes + f.payload.length <= SLACK_BYTES) {
                            break;
                        }
                        return false;
                    }
                    try {
                        room.await(100, TimeUnit.MILLISECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IOException("interrupted while waiting to send");
                    }
                }
                out.add(f);
                outBytes += f.payload.length;
                if (f.opcode == CLOSE) {
                    closing = true;
                }
            } finally {
                lock.unlock();
            }
            ready(this);
            return true;
        }

        private void send(int opcode, byte[] payload) throws IOException {
            if (!enqueue(new Frame(opcode, payload, null), false, !LoopCalls.onLoop())) {
                throw new IOException("the WebSocket's send queue is full (jvm_websocket_send_queue "
                        + queueSize + ", and " + SLACK_BYTES + " bytes more from the event loop)");
            }
        }

        private void sendAsync(int opcode, byte[] payload, Callback callback) {
            try {
                if (enqueue(new Frame(opcode, payload, callback), false, false)) {
                    return;
                }
                IOException full = new IOException("the WebSocket's send queue is full (jvm_websocket_send_queue "
                        + queueSize + ", and " + SLACK_BYTES + " bytes more for sendAsync)");
                CALLBACKS.execute(() -> callback.failed(full));
            } catch (IOException e) {
                CALLBACKS.execute(() -> callback.failed(e));
            }
        }

        /** The connection is over: queued frames fail, waiting senders wake. */
        void shut() {
            Frame[] dropped;
            lock.lock();
            try {
                closed = true;
                dropped = out == null ? new Frame[0] : out.toArray(new Frame[0]);
                out = null;
                outBytes = 0;
                room.signalAll();
            } finally {
                lock.unlock();
            }
            IOException e = new IOException("the WebSocket is closed");
            for (Frame f : dropped) {
                if (f.callback != null) {
                    CALLBACKS.execute(() -> f.callback.failed(e));
                }
            }
        }

        @Override
        public boolean isOpen() {
            lock.lock();
            try {
                return !closing && !closed;
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void send(String text) throws IOException {
            send(TEXT, text.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public void send(ByteBuffer data) throws IOException {
            send(BINARY, bytes(data));
        }

        @Override
        public void sendAsync(String text, Callback callback) {
            sendAsync(TEXT, text.getBytes(StandardCharsets.UTF_8), callback);
        }

        @Override
        public void sendAsync(ByteBuffer data, Callback callback) {
            sendAsync(BINARY, bytes(data), callback);
        }

        @Override
        public void ping(ByteBuffer data) throws IOException {
            enqueue(new Frame(PING, control(data), null), true, false);
        }

        @Override
        public void pong(ByteBuffer data) throws IOException {
            enqueue(new Frame(PONG, control(data), null), true, false);
        }

        @Override
        public void close() {
            close(1000, "");
        }

        @Override
        public void close(int code, String reason) {
            if (!((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014)
                    || (code >= 3000 && code <= 4999))) {
                throw new IllegalArgumentException("close code " + code
                        + " may not be sent (1000-1003, 1007-1014, 3000-4999)");
            }
            byte[] why = reason(reason == null ? "" : reason);
            byte[] payload = new byte[2 + why.length];
            payload[0] = (byte) (code >> 8);
            payload[1] = (byte) code;
            System.arraycopy(why, 0, payload, 2, why.length);
            try {
                enqueue(new Frame(CLOSE, payload, null), true, false);
            } catch (IOException alreadyClosed) {
                // closing twice is closing once
            }
        }

        private byte[] control(ByteBuffer data) {
            byte[] b = bytes(data);
            if (b.length > 125) {
                throw new IllegalArgumentException("a ping or pong carries at most 125 bytes");
            }
            return b;
        }
    }

    private static final class Event {
        final boolean message;
        final Runnable callback;

        Event(boolean message, Runnable callback) {
            this.message = message;
            this.callback = callback;
        }
    }

    private static byte[] bytes(ByteBuffer data) {
        ByteBuffer d = data.duplicate();
        byte[] b = new byte[d.remaining()];
        d.get(b);
        return b;
    }

    /** At most 123 bytes of UTF-8, cut before a character that does not fit. */
    static byte[] reason(String reason) {
        byte[] b = reason.getBytes(StandardCharsets.UTF_8);
        if (b.length <= 123) {
            return b;
        }
        int n = 123;
        while (n > 0 && (b[n] & 0xC0) == 0x80) {
            n--;
        }
        return java.util.Arrays.copyOf(b, n);
    }
}
