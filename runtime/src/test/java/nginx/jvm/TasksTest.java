package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Handlers run off the event loop: Tasks, Task and AsyncBody driven the way
 * Worker and the C module drive them, with a counter standing in for the
 * eventfd that wakes the loop.
 */
@Timeout(30)
class TasksTest {
    private final AtomicInteger wakes = new AtomicInteger();
    private final Tasks tasks = new Tasks(wakes::incrementAndGet);
    /** The bodies the encoder kept to be sent in pieces, by id. */
    private final java.util.List<BodySource> kept = new java.util.ArrayList<>();
    private final ResponseEncoder encoder = new ResponseEncoder(4096, body -> {
        kept.add(body);
        return kept.size() - 1;
    }, (listener, mode) -> 0);

    /** The body the last response is sent in pieces from, or null. */
    private BodySource pending() {
        return kept.isEmpty() ? null : kept.get(kept.size() - 1);
    }
    private long nextId = 1;

    private Task task(int mode, Object handler, boolean async) {
        return new Task(nextId++, mode, Wire.PHASE_CONTENT, handler, new RequestBytes().path("/t").request(), async, tasks);
    }

    /** The event loop's side: waits for a wake-up, then polls. */
    private long awaitReady() throws InterruptedException {
        long id;
        for (int i = 0; i < 500; i++) {
            if ((id = tasks.poll()) != 0) {
                return id;
            }
            Thread.sleep(10);
        }
        throw new AssertionError("no task became ready within 5 s");
    }

    private DecodedResponse take(long id) {
        Task t = tasks.get(id);
        assertNotNull(t, "task " + id + " is live");
        return DecodedResponse.decode(encoder.buffer(), t.encode(encoder));
    }

    private static void waitFor(BooleanSupplier condition, String what) throws InterruptedException {
        for (int i = 0; i < 500 && !condition.getAsBoolean(); i++) {
            Thread.sleep(10);
        }
        assertTrue(condition.getAsBoolean(), what + " within 5 s");
    }

    // ---- async handlers on the loop ----

    @Test
    void asyncHandlerAnsweringAtOnce() {
        AsyncHandler h = (r, responder) -> responder.respond(Response.of(200, "text/plain", "now " + r.uri()));
        Task t = task(Tasks.LOOP, h, true);
        assertNull(tasks.submit(t, Tasks.LOOP));
        assertEquals(1, wakes.get());
        assertEquals(t.id, tasks.poll());
        assertEquals(0, tasks.poll(), "named once");
        DecodedResponse d = take(t.id);
        assertEquals("INLINE", d.kind);
        assertEquals("now /t", d.bodyText());
        tasks.cancel(t.id);
        assertNull(tasks.get(t.id), "forgotten when the request is over");
    }

    @Test
    void readyTasksAreNamedInBatches() {
        AsyncHandler h = (r, responder) -> responder.respond(new Response(200));
        long[] ids = new long[5];
        for (int i = 0; i < ids.length; i++) {
            Task t = task(Tasks.LOOP, h, true);
            assertNull(tasks.submit(t, Tasks.LOOP));
            ids[i] = t.id;
        }
        assertEquals(1, wakes.get(), "one wake-up for the five");
        ByteBuffer out = ByteBuffer.allocate(8 * 3);
        assertEquals(3, tasks.poll(out, 3), "a full buffer: the loop asks again");
        assertArrayEquals(new long[] {ids[0], ids[1], ids[2]},
                new long[] {out.getLong(0), out.getLong(8), out.getLong(16)});
        tasks.cancel(ids[3]);
        assertEquals(1, tasks.poll(out, 3), "a cancelled task is not named");
        assertEquals(ids[4], out.getLong(0));
        assertEquals(0, tasks.poll(out, 3));
        Task again = task(Tasks.LOOP, h, true);
        assertNull(tasks.submit(again, Tasks.LOOP));
        assertEquals(2, wakes.get(), "after the loop's poll, the next answer wakes it again");
    }

    @Test
    void asyncHandlerAnsweringLaterFromAnotherThread() throws Exception {
        AtomicReference<Responder> saved = new AtomicReference<>();
        Task t = task(Tasks.LOOP, (AsyncHandler) (r, responder) -> saved.set(responder), true);
        assertNull(tasks.submit(t, Tasks.LOOP));
        assertEquals(0, tasks.poll(), "no answer yet");
        assertEquals(0, wakes.get());
        Thread other = new Thread(() -> saved.get().respond(new Response(202)));
        other.start();
        other.join(5000);
        assertEquals(t.id, awaitReady());
        assertEquals(1, wakes.get());
        assertEquals(202, take(t.id).status);
    }

    @Test
    void onlyTheFirstAnswerCounts() {
        AsyncHandler h = (r, responder) -> {
            responder.respond(new Response(201));
            responder.respond(new Response(500));
            responder.raise(new IllegalStateException("too late"));
        };
        Task t = task(Tasks.LOOP, h, true);
        assertNull(tasks.submit(t, Tasks.LOOP));
        assertEquals(t.id, tasks.poll());
        assertEquals(0, tasks.poll(), "queued once");
        assertEquals(201, take(t.id).status);
    }

    @Test
    void asyncHandlerRaising() {
        Task t = task(Tasks.LOOP, (AsyncHandler) (r, responder) ->
                responder.raise(new IllegalArgumentException("bad input")), true);
        assertNull(tasks.submit(t, Tasks.LOOP));
        assertEquals(t.id, tasks.poll());
        DecodedResponse d = take(t.id);
        assertEquals(500, d.status);
        assertEquals("ERROR", d.kind);
        assertTrue(d.text.startsWith("the handler raised: java.lang.IllegalArgumentException: bad input"), d.text);
    }

    @Test
    void asyncHandlerThrowingOrAnsweringNull() {
        Task thrower = task(Tasks.LOOP, (AsyncHandler) (r, responder) -> {
            throw new IllegalStateException("thrown, not raised");
        }, true);
        assertNull(tasks.submit(thrower, Tasks.LOOP));
        assertEquals(thrower.id, tasks.poll());
        DecodedResponse d = take(thrower.id);
        assertEquals("ERROR", d.kind);
        assertTrue(d.text.startsWith("the handler threw: java.lang.IllegalStateException: thrown, not raised"),
                d.text);

        Task nuller = task(Tasks.LOOP, (AsyncHandler) (r, responder) -> responder.respond(null), true);
        assertNull(tasks.submit(nuller, Tasks.LOOP));
        assertEquals(nuller.id, tasks.poll());
        assertTrue(take(nuller.id).text.contains("no response (null)"));
    }

    @Test
    void oneWakeUpPerBatch() throws Exception {
        AtomicReference<Responder> a = new AtomicReference<>();
        AtomicReference<Responder> b = new AtomicReference<>();
        Task ta = task(Tasks.LOOP, (AsyncHandler) (r, responder) -> a.set(responder), true);
        Task tb = task(Tasks.LOOP, (AsyncHandler) (r, responder) -> b.set(responder), true);
        tasks.submit(ta, Tasks.LOOP);
        tasks.submit(tb, Tasks.LOOP);
        a.get().respond(new Response(200));
        b.get().respond(new Response(200));
        assertEquals(1, wakes.get(), "the loop was woken once for both");
        assertEquals(ta.id, tasks.poll());
        assertEquals(tb.id, tasks.poll());
        assertEquals(0, tasks.poll());
        Task tc = task(Tasks.LOOP, (AsyncHandler) (r, responder) -> responder.respond(new Response(200)), true);
        tasks.submit(tc, Tasks.LOOP);
        assertEquals(2, wakes.get(), "after the loop polled, the next answer wakes it again");
    }

    @Test
    void cancelledTaskIsNotNamed() {
        AtomicReference<Responder> saved = new AtomicReference<>();
        Task t = task(Tasks.LOOP, (AsyncHandler) (r, responder) -> saved.set(responder), true);
        tasks.submit(t, Tasks.LOOP);
        tasks.cancel(t.id);
        saved.get().respond(new Response(200));
        assertEquals(0, tasks.poll(), "the request is over: its late answer is dropped");
    }

    // ---- the thread pool ----

    @Test
    void poolRunsTheHandlerOffTheLoop() throws Exception {
        assertNull(tasks.configure(2, 4, false));
        Thread loop = Thread.currentThread();
        AtomicReference<Thread> ranOn = new AtomicReference<>();
        Handler h = r -> {
            ranOn.set(Thread.currentThread());
            return Response.of(200, "text/plain", "pooled");
        };
        Task t = task(Tasks.POOL, h, false);
        assertNull(tasks.submit(t, Tasks.POOL));
        assertEquals(t.id, awaitReady());
        assertTrue(ranOn.get() != loop);
        assertTrue(ranOn.get().getName().startsWith("nginx-jvm-pool"), ranOn.get().getName());
        assertTrue(ranOn.get().isDaemon(), "pool threads never keep a worker from exiting");
        assertEquals("pooled", take(t.id).bodyText());
    }

    @Test
    void poolHandlerThrowing() throws Exception {
        tasks.configure(1, 1, false);
        Task t = task(Tasks.POOL, (Handler) r -> {
            throw new IllegalStateException("pool boom");
        }, false);
        assertNull(tasks.submit(t, Tasks.POOL));
        assertEquals(t.id, awaitReady());
        DecodedResponse d = take(t.id);
        assertEquals("ERROR", d.kind);
        assertTrue(d.text.contains("pool boom"), d.text);
    }

    @Test
    void fullPoolQueueRefuses() throws Exception {
        tasks.configure(1, 1, false);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch started = new CountDownLatch(1);
        Handler blocking = r -> {
            started.countDown();
            release.await(10, TimeUnit.SECONDS);
            return new Response(200);
        };
        Task running = task(Tasks.POOL, blocking, false);
        Task waiting = task(Tasks.POOL, blocking, false);
        Task refused = task(Tasks.POOL, blocking, false);
        assertNull(tasks.submit(running, Tasks.POOL));
        assertTrue(started.await(5, TimeUnit.SECONDS));
        assertNull(tasks.submit(waiting, Tasks.POOL));
        String why = tasks.submit(refused, Tasks.POOL);
        assertNotNull(why, "one thread busy and one request waiting: the third is refused");
        assertTrue(why.contains("queue is full"), why);
        assertNull(tasks.get(refused.id), "a refused task is not kept");
        release.countDown();
        long a = awaitReady();
        long b = awaitReady();
        assertEquals(java.util.Set.of(running.id, waiting.id), java.util.Set.of(a, b));
    }

    @Test
    void poolModeWithoutAPool() {
        String why = tasks.submit(task(Tasks.POOL, (Handler) r -> new Response(200), false), Tasks.POOL);
        assertNotNull(why);
        assertTrue(why.contains("without a pool"), why);
    }

    @Test
    void virtualThreadsNeedJdk21() {
        String why = tasks.configure(0, 4, true);
        Task t = task(Tasks.VIRTUAL, (Handler) r -> new Response(200), false);
        if (Runtime.version().feature() >= 21) {
            assertNull(why);
            assertNull(tasks.submit(t, Tasks.VIRTUAL));
        } else {
            assertNotNull(why);
            assertTrue(why.contains("JDK 21"), why);
            assertEquals(why, tasks.submit(t, Tasks.VIRTUAL), "the same reason for each request");
        }
    }

    @Test
    void virtualModeNotConfigured() {
        String why = tasks.submit(task(Tasks.VIRTUAL, (Handler) r -> new Response(200), false), Tasks.VIRTUAL);
        assertNotNull(why);
    }

    // ---- streamed bodies produced off the loop (AsyncBody) ----

    /** Drains a streamed body the way the loop does: WAIT means "wait to be named again". */
    private static byte[] drainAsync(BodySource body) throws IOException, InterruptedException {
        // Worker's response buffer size: AsyncBody hands over pieces of up to 16 KB whole.
        java.nio.ByteBuffer out = java.nio.ByteBuffer.allocateDirect(64 * 1024);
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        for (int waits = 0; waits < 5000; ) {
            int n = body.fill(out);
            if (n == -1) {
                body.close();
                return all.toByteArray();
            }
            if (n == Wire.NEXT_WAIT) {
                waits++;
                Thread.sleep(1);
                continue;
            }
            assertTrue(n > 0, "fill answered " + n);
            byte[] piece = new byte[n];
            out.get(0, piece);
            all.writeBytes(piece);
        }
        throw new AssertionError("the body did not end");
    }

    @Test
    void poolStreamedBodyIsProducedOffTheLoop() throws Exception {
        tasks.configure(1, 1, false);
        byte[] data = new byte[100_000];
        new Random(3).nextBytes(data);
        Task t = task(Tasks.POOL, (Handler) r -> new Response(200).body(new ByteArrayInputStream(data)), false);
        assertNull(tasks.submit(t, Tasks.POOL));
        assertEquals(t.id, awaitReady());
        DecodedResponse d = take(t.id);
        assertEquals("STREAM", d.kind);
        assertInstanceOf(AsyncBody.class, pending());
        assertSame(pending(), t.response().body());
        assertArrayEquals(data, drainAsync(pending()));
    }

    @Test
    void poolStreamedSeqAndWriter() throws Exception {
        tasks.configure(1, 1, false);
        Task seq = task(Tasks.POOL, (Handler) r -> Response.of(200, "text/plain; charset=iso-8859-1",
                java.util.List.of("caf", "\u00e9")), false);
        assertNull(tasks.submit(seq, Tasks.POOL));
        assertEquals(seq.id, awaitReady());
        assertEquals("STREAM", take(seq.id).kind);
        assertArrayEquals(new byte[] {'c', 'a', 'f', (byte) 0xe9}, drainAsync(pending()));

        Task writer = task(Tasks.POOL, (Handler) r -> new Response(200).body(
                (BodyWriter) out -> out.write("written".getBytes(StandardCharsets.US_ASCII))), false);
        assertNull(tasks.submit(writer, Tasks.POOL));
        assertEquals(writer.id, awaitReady());
        assertEquals("STREAM", take(writer.id).kind);
        assertEquals("written", new String(drainAsync(pending()), StandardCharsets.US_ASCII));
    }

    @Test
    void streamedBodyFailureReachesTheLoop() throws Exception {
        tasks.configure(1, 1, false);
        InputStream failing = new InputStream() {
            int left = 10;

            @Override
            public int read() throws IOException {
                if (left-- > 0) {
                    return 'x';
                }
                throw new IOException("source died");
            }
        };
        Task t = task(Tasks.POOL, (Handler) r -> new Response(200).body(failing), false);
        assertNull(tasks.submit(t, Tasks.POOL));
        assertEquals(t.id, awaitReady());
        take(t.id);
        BodySource body = pending();
        IOException e = assertThrows(IOException.class, () -> drainAsync(body));
        assertTrue(String.valueOf(e.getCause()).contains("source died"), String.valueOf(e.getCause()));
    }

    @Test
    void cancellingStopsAnEndlessBodyAndClosesItsSource() throws Exception {
        tasks.configure(1, 1, false);
        AtomicBoolean closed = new AtomicBoolean();
        AtomicInteger reads = new AtomicInteger();
        InputStream endless = new InputStream() {
            @Override
            public int read() {
                reads.incrementAndGet();
                return 'e';
            }

            @Override
            public void close() {
                closed.set(true);
            }
        };
        Task t = task(Tasks.POOL, (Handler) r -> new Response(200).body(endless), false);
        assertNull(tasks.submit(t, Tasks.POOL));
        assertEquals(t.id, awaitReady());
        assertEquals("STREAM", take(t.id).kind);
        // The client reads nothing: the producer fills the queue and waits.
        waitFor(() -> reads.get() > 0, "the producer started");
        // Bounded, not endless: a producer without back-pressure reads
        // millions in a second; how soon it stops is the machine's business
        // (a busy one keeps it filling the queue for a while).
        Thread.sleep(1000);
        assertTrue(reads.get() < 1_000_000, "back-pressure: the producer waits for the client, read " + reads.get());
        // The client goes away.
        tasks.cancel(t.id);
        waitFor(closed::get, "the InputStream closed");
        // The pool thread is free again.
        Task next = task(Tasks.POOL, (Handler) r -> new Response(204), false);
        assertNull(tasks.submit(next, Tasks.POOL));
        assertEquals(next.id, awaitReady());
    }

    @Test
    void answerAfterTheRequestIsOverDoesNotHoldThePoolThread() throws Exception {
        // jvm_response_timeout (or the client leaving) cancels the task while the
        // handler still runs; the handler then answers with a large streamed body.
        tasks.configure(1, 1, false);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch started = new CountDownLatch(1);
        AtomicBoolean closed = new AtomicBoolean();
        InputStream large = new ByteArrayInputStream(new byte[1 << 20]) {
            @Override
            public void close() {
                closed.set(true);
            }
        };
        Task slow = task(Tasks.POOL, (Handler) r -> {
            started.countDown();
            release.await(10, TimeUnit.SECONDS);
            return new Response(200).body(large);
        }, false);
        assertNull(tasks.submit(slow, Tasks.POOL));
        // the pool thread holds it: the queue has room for the next one
        assertTrue(started.await(10, TimeUnit.SECONDS));
        tasks.cancel(slow.id);
        release.countDown();
        Task next = task(Tasks.POOL, (Handler) r -> new Response(204), false);
        assertNull(tasks.submit(next, Tasks.POOL));
        long id = 0;
        for (int i = 0; i < 300 && id == 0; i++) {
            id = tasks.poll();
            Thread.sleep(10);
        }
        assertEquals(next.id, id, "the only pool thread is free again for the next request");
        waitFor(closed::get, "the abandoned body closed");
    }

    @Test
    void asyncLoopModeStreamsAreProducedOffTheLoop() throws Exception {
        // An async handler's stream may pause: the loop never reads it itself.
        Task t = task(Tasks.LOOP, (AsyncHandler) (r, responder) ->
                responder.respond(new Response(200).body(new ByteArrayInputStream(new byte[3]))), true);
        assertNull(tasks.submit(t, Tasks.LOOP));
        assertEquals(t.id, tasks.poll());
        assertEquals("STREAM", take(t.id).kind);
        assertInstanceOf(AsyncBody.class, pending());
        assertArrayEquals(new byte[3], drainAsync(pending()));
    }

    @Test
    void asyncWriterGoesOnAfterItReturns() throws Exception {
        java.util.concurrent.CompletableFuture<java.io.OutputStream> kept = new java.util.concurrent.CompletableFuture<>();
        Task t = task(Tasks.LOOP, (AsyncHandler) (r, responder) ->
                responder.respond(new Response(200).body((BodyWriter) kept::complete)), true);
        assertNull(tasks.submit(t, Tasks.LOOP));
        assertEquals(t.id, tasks.poll());
        assertEquals("STREAM", take(t.id).kind);
        BodySource body = pending();
        java.io.OutputStream out = kept.get(10, java.util.concurrent.TimeUnit.SECONDS);
        ByteBuffer piece = ByteBuffer.allocate(64);
        assertEquals(Wire.NEXT_WAIT, body.fill(piece), "writeTo returned, the body goes on");
        out.write("later".getBytes(StandardCharsets.US_ASCII));
        out.close();
        assertArrayEquals("later".getBytes(StandardCharsets.US_ASCII), drainAsync(body));
    }

    @Test
    void writesFailOnceTheClientIsGone() throws Exception {
        java.util.concurrent.CompletableFuture<java.io.OutputStream> kept = new java.util.concurrent.CompletableFuture<>();
        Task t = task(Tasks.LOOP, (AsyncHandler) (r, responder) ->
                responder.respond(new Response(200).body((BodyWriter) kept::complete)), true);
        assertNull(tasks.submit(t, Tasks.LOOP));
        take(tasks.poll());
        java.io.OutputStream out = kept.get(10, java.util.concurrent.TimeUnit.SECONDS);
        tasks.cancel(t.id);
        assertThrows(IOException.class, () -> out.write(new byte[1]));
    }
}
