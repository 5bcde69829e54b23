package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The Java side of WebSockets, driven as the C module drives it: register,
 * open, message, take, closed, on one "event loop" thread (the test's).
 */
@Timeout(60)
class WebSocketsTest {
    private final AtomicInteger wakes = new AtomicInteger();
    private final WebSockets sockets = new WebSockets(wakes::incrementAndGet);
    private final ByteBuffer in = ByteBuffer.allocateDirect(1024).order(ByteOrder.nativeOrder());
    private final ByteBuffer out = ByteBuffer.allocateDirect(1024).order(ByteOrder.nativeOrder());

    /** The test's thread is the event loop (LoopCalls.onLoop), with no waker. */
    @BeforeEach
    void bindTheLoop() {
        LoopCalls.bind(null);
    }

    /** And no thread of the other tests is: the loop becomes one that has ended. */
    @AfterEach
    void unbindTheLoop() throws InterruptedException {
        Thread gone = new Thread(() -> LoopCalls.bind(null));
        gone.start();
        gone.join();
    }

    /** Records every event as text, in order. */
    static class Recorder implements WebSocketListener {
        final List<String> events = Collections.synchronizedList(new ArrayList<>());
        final AtomicReference<WebSocket> socket = new AtomicReference<>();
        volatile Thread thread;

        @Override
        public void onOpen(WebSocket s) {
            socket.set(s);
            thread = Thread.currentThread();
            events.add("open");
        }

        @Override
        public void onMessage(WebSocket s, String text) {
            events.add("text:" + text);
        }

        @Override
        public void onMessage(WebSocket s, ByteBuffer data) {
            events.add("binary:" + data.remaining());
        }

        @Override
        public void onPong(WebSocket s, ByteBuffer data) {
            events.add("pong");
        }

        @Override
        public void onError(WebSocket s, Throwable e) {
            events.add("error");
        }

        @Override
        public void onClose(WebSocket s, int code, String reason) {
            events.add("close:" + code + ":" + reason);
        }
    }

    private int message(int id, int opcode, String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        in.put(0, b);
        return sockets.message(id, opcode, in, b.length);
    }

    private void closed(int id, int code, String reason) {
        byte[] b = reason.getBytes(StandardCharsets.UTF_8);
        in.put(0, b);
        sockets.closed(id, code, in, b.length);
    }

    /** The next frame C would take: "opcode:payload as text", or null. */
    private String take(int id) {
        int n = sockets.take(id, out);
        if (n == 0) {
            return null;
        }
        byte[] b = new byte[n - 4];
        out.get(4, b);
        return out.getInt(0) + ":" + new String(b, StandardCharsets.ISO_8859_1);
    }

    private static void await(java.util.function.BooleanSupplier done) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!done.getAsBoolean()) {
            assertTrue(System.nanoTime() < end, "timed out");
            Thread.sleep(2);
        }
    }

    @Test
    void loopEventsInOrderOnTheLoop() {
        Recorder r = new Recorder();
        int id = sockets.register(r, Wire.LOOP);
        assertEquals(Wire.WS_C_PINGS, sockets.open(id));
        message(id, 1, "héllo");
        message(id, 2, "xyz");
        message(id, 10, "p");
        closed(id, 1000, "bye");
        assertEquals(List.of("open", "text:héllo", "binary:3", "pong", "close:1000:bye"), r.events);
        assertEquals(Thread.currentThread(), r.thread);
        assertEquals(0, sockets.size());
    }

    @Test
    void poolEventsOneAtATimeInOrderForManySockets() throws Exception {
        int n = 50;
        List<Recorder> recorders = new ArrayList<>();
        AtomicInteger concurrent = new AtomicInteger();
        AtomicInteger overlap = new AtomicInteger();
        for (int i = 0; i < n; i++) {
            Recorder r = new Recorder() {
                @Override
                public void onMessage(WebSocket s, String text) {
                    if (concurrent.incrementAndGet() > 1) {
                        overlap.incrementAndGet();
                    }
                    super.onMessage(s, text);
                    concurrent.decrementAndGet();
                }
            };
            recorders.add(r);
        }
        // one listener shared by all sockets would overlap; each socket's own must not
        List<Integer> ids = new ArrayList<>();
        for (Recorder r : recorders) {
            int id = sockets.register(r, Wire.POOL);
            ids.add(id);
            sockets.open(id);
        }
        for (int m = 0; m < 40; m++) {
            for (int i = 0; i < n; i++) {
                message(ids.get(i), 1, "m" + m);
            }
        }
        for (int id : ids) {
            closed(id, 1001, "");
        }
        for (Recorder r : recorders) {
            await(() -> r.events.size() == 42);
            List<String> expected = new ArrayList<>();
            expected.add("open");
            for (int m = 0; m < 40; m++) {
                expected.add("text:m" + m);
            }
            expected.add("close:1001:");
            assertEquals(expected, r.events);
            assertTrue(r.thread != Thread.currentThread(), "off the loop");
        }
        assertEquals(0, sockets.size());
    }

    @Test
    void closeOnlyAfterOpenAndExactlyOnce() {
        Recorder r = new Recorder();
        int id = sockets.register(r, Wire.LOOP);
        sockets.abandon(id);
        closed(id, 1006, "");
        assertEquals(List.of(), r.events, "never opened: no callback at all");

        Recorder r2 = new Recorder();
        int id2 = sockets.register(r2, Wire.LOOP);
        sockets.open(id2);
        closed(id2, 1006, "");
        closed(id2, 1006, "");
        assertEquals(List.of("open", "close:1006:"), r2.events);
    }

    @Test
    void protocolErrorsCallOnErrorFirst() {
        Recorder r = new Recorder();
        int id = sockets.register(r, Wire.LOOP);
        sockets.open(id);
        closed(id, 1007, "invalid UTF-8");
        assertEquals(List.of("open", "error", "close:1007:invalid UTF-8"), r.events);
    }

    @Test
    void framesLeaveInOrderAndWakeTheLoop() throws Exception {
        Recorder r = new Recorder();
        int id = sockets.register(r, Wire.LOOP);
        sockets.open(id);
        WebSocket s = r.socket.get();
        int before = wakes.get();
        s.send("one");
        s.send(ByteBuffer.wrap(new byte[] {1, 2}));
        s.ping(ByteBuffer.wrap("p".getBytes(StandardCharsets.US_ASCII)));
        assertEquals(before + 1, wakes.get(), "one wake for a batch");
        assertEquals(-2 - id, sockets.poll(), "frames to send, and reading may go on");
        assertEquals(-1, sockets.poll());
        assertEquals("1:one", take(id));
        assertEquals("2:\u0001\u0002", take(id));
        assertEquals("9:p", take(id));
        assertEquals(null, take(id));
        s.close(4000, "bye");
        assertFalse(s.isOpen());
        assertEquals("8:\u000f\u00a0bye", take(id));
        assertThrows(IOException.class, () -> s.send("after close"));
    }

    @Test
    void aFrameTooBigForTheBufferStaysQueued() throws Exception {
        Recorder r = new Recorder();
        int id = sockets.register(r, Wire.LOOP);
        sockets.open(id);
        r.socket.get().send("x".repeat(5000));
        assertEquals(-(4 + 5000), sockets.take(id, out));
        ByteBuffer big = ByteBuffer.allocateDirect(8192).order(ByteOrder.nativeOrder());
        assertEquals(4 + 5000, sockets.take(id, big));
    }

    @Test
    void backPressure() throws Exception {
        sockets.configure(4);
        Recorder r = new Recorder();
        int id = sockets.register(r, Wire.LOOP);
        sockets.open(id);
        WebSocket s = r.socket.get();
        for (int i = 0; i < 4; i++) {
            s.send("m" + i);
        }
        // on the loop a full queue takes the frame all the same (the slack) rather than block
        s.send("loop");
        // and so does sendAsync, which never waits
        CountDownLatch taken = new CountDownLatch(1);
        s.sendAsync("async", new WebSocket.Callback() {
            public void succeeded() {
                taken.countDown();
            }

            public void failed(Throwable e) {
            }
        });
        // another thread waits for room: fewer than 4 queued
        CountDownLatch sent = new CountDownLatch(1);
        Thread t = new Thread(() -> {
            try {
                s.send("waited");
                sent.countDown();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        t.start();
        assertFalse(sent.await(300, TimeUnit.MILLISECONDS), "blocked while the queue is full");
        assertEquals("1:m0", take(id));
        assertEquals("1:m1", take(id));
        assertFalse(sent.await(300, TimeUnit.MILLISECONDS), "still 4 queued");
        assertEquals("1:m2", take(id));
        assertTrue(sent.await(10, TimeUnit.SECONDS), "room made, the send goes on");
        t.join();
        assertEquals("1:m3", take(id));
        assertEquals("1:loop", take(id));
        assertEquals("1:async", take(id));
        assertTrue(taken.await(10, TimeUnit.SECONDS));
        assertEquals("1:waited", take(id));
    }

    @Test
    void sendAsyncSucceedsWhenTakenAndFailsWhenClosed() throws Exception {
        Recorder r = new Recorder();
        int id = sockets.register(r, Wire.LOOP);
        sockets.open(id);
        CountDownLatch ok = new CountDownLatch(1);
        CountDownLatch ko = new CountDownLatch(1);
        WebSocket.Callback cb = new WebSocket.Callback() {
            public void succeeded() {
                ok.countDown();
            }

            public void failed(Throwable e) {
                ko.countDown();
            }
        };
        r.socket.get().sendAsync("a", cb);
        take(id);
        assertTrue(ok.await(10, TimeUnit.SECONDS));
        r.socket.get().sendAsync("b", cb);
        closed(id, 1006, "");
        assertTrue(ko.await(10, TimeUnit.SECONDS), "queued frames fail when the socket closes");
    }

    @Test
    void inboundQueueFullPausesReadingUntilTheListenerCatchesUp() throws Exception {
        sockets.configure(4);
        CountDownLatch release = new CountDownLatch(1);
        Recorder r = new Recorder() {
            @Override
            public void onMessage(WebSocket s, String text) {
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                super.onMessage(s, text);
            }
        };
        int id = sockets.register(r, Wire.POOL);
        sockets.open(id);
        int rc = Wire.WS_CONTINUE;
        int sent = 0;
        while (rc == Wire.WS_CONTINUE && sent < 100) {
            rc = message(id, 1, "m" + sent++);
        }
        assertEquals(Wire.WS_PAUSE, rc, "the C module is told to stop reading");
        assertEquals(4, sent);
        assertEquals(-1, sockets.poll(), "nothing to send, and no reading");
        release.countDown();
        await(() -> sockets.poll() == -2 - id);
        await(() -> r.events.size() == 5);
    }

    @Test
    void aLoopListenerWhoseRepliesPileUpStopsTheReadingUntilTheyLeave() {
        sockets.configure(4);
        int id = sockets.register(new WebSocketListener() {
            @Override
            public void onMessage(WebSocket s, String text) {
                try {
                    s.send(text);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }, Wire.LOOP);
        sockets.open(id);
        for (int i = 0; i < 3; i++) {
            assertEquals(Wire.WS_CONTINUE, message(id, 1, "m" + i));
        }
        assertEquals(Wire.WS_PAUSE, message(id, 1, "m3"), "four replies wait: no more reading");
        assertEquals(id, sockets.poll(), "frames to send, but no reading yet");
        assertEquals("1:m0", take(id));
        assertEquals(-1, sockets.poll(), "three still wait");
        assertEquals("1:m1", take(id));
        assertEquals(-2 - id, sockets.poll(), "down to half: reading goes on");
    }

    @Test
    void aSendThatCannotWaitGoesBeyondAFullQueueByTheSlackOnly() throws Exception {
        sockets.configure(4);
        Recorder r = new Recorder();
        int id = sockets.register(r, Wire.LOOP);
        sockets.open(id);
        WebSocket s = r.socket.get();
        byte[] kb = new byte[1024];
        int sent = 0;
        try {
            while (sent < 10_000) {
                s.send(ByteBuffer.wrap(kb));      // on the loop: never waits
                sent++;
            }
        } catch (IOException full) {
            assertTrue(full.getMessage().contains("send queue is full"), full.getMessage());
        }
        assertEquals(WebSockets.SLACK_BYTES / 1024, sent, "the slack, and not a frame more");
        assertTrue(s.isOpen(), "the listener decides what a full queue means");
        for (int i = 0; i < sent; i++) {
            assertEquals(4 + 1024, sockets.take(id, ByteBuffer.allocate(2048)));
        }
        s.send("again");
        assertEquals("1:again", take(id));
    }

    @Test
    void listenerThatThrowsClosesWith1011() {
        WebSocketListener l = new WebSocketListener() {
            @Override
            public void onMessage(WebSocket s, String text) {
                throw new IllegalStateException("on purpose");
            }
        };
        int id = sockets.register(l, Wire.LOOP);
        sockets.open(id);
        message(id, 1, "boom");
        String frame = take(id);
        assertTrue(frame.startsWith("8:\u0003\u00f3"), frame);
    }

    @Test
    void closeCodesAndReasons() {
        Recorder r = new Recorder();
        int id = sockets.register(r, Wire.LOOP);
        sockets.open(id);
        WebSocket s = r.socket.get();
        for (int bad : new int[] {0, 999, 1004, 1005, 1006, 1015, 2000, 5000}) {
            assertThrows(IllegalArgumentException.class, () -> s.close(bad, ""));
        }
        byte[] cut = WebSockets.reason("é".repeat(100));
        assertEquals(122, cut.length, "123 bytes at most, cut before a split character");
        assertEquals("é".repeat(61), new String(cut, StandardCharsets.UTF_8));
    }

    @Test
    void pingListenersAnswerPings() {
        WebSocketPingListener l = (s, data) -> {
        };
        int id = sockets.register(l, Wire.LOOP);
        assertEquals(Wire.WS_JAVA_PINGS, sockets.open(id));
    }

    @Test
    void tenThousandSocketsLeaveNothingBehind() throws Exception {
        for (int i = 0; i < 10_000; i++) {
            int id = sockets.register(new Recorder(), i % 2 == 0 ? Wire.LOOP : Wire.POOL);
            sockets.open(id);
            message(id, 1, "x");
            closed(id, 1000, "");
        }
        assertEquals(0, sockets.size());
        assertEquals(-1, drainPoll());
    }

    private int drainPoll() {
        int id;
        int last = -1;
        while ((id = sockets.poll()) != -1) {
            last = id;
        }
        return last;
    }

    @Test
    void binaryMessagesAreBuffersOfTheirOwn() {
        AtomicReference<ByteBuffer> got = new AtomicReference<>();
        int id = sockets.register(new WebSocketListener() {
            @Override
            public void onMessage(WebSocket s, ByteBuffer data) {
                got.set(data);
            }
        }, Wire.LOOP);
        sockets.open(id);
        in.put(0, new byte[] {7, 8, 9});
        sockets.message(id, 2, in, 3);
        in.put(0, new byte[] {0, 0, 0});
        byte[] b = new byte[3];
        got.get().get(b);
        assertArrayEquals(new byte[] {7, 8, 9}, b, "a copy: C reuses its buffer");
    }
}
