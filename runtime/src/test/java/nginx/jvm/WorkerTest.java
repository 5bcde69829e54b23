package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Worker's entry points called as the C module calls them, buffers included. */
class WorkerTest {

    // ---- handlers named by class, as in nginx.conf ----

    public static class Echo implements Handler {
        @Override
        public Response handle(Request r) throws IOException {
            String text = r.method() + " " + r.uri() + " q=" + r.queryString() + " " + r.scheme()
                    + " " + r.serverName() + ":" + r.serverPort() + " from " + r.remoteAddr()
                    + " x-test=" + r.header("X-Test")
                    + " body=" + new String(r.body().readAllBytes(), StandardCharsets.UTF_8);
            return Response.of(200, "text/plain; charset=utf-8", text).header("X-Handler", "echo");
        }
    }

    public static class Thrower implements Handler {
        @Override
        public Response handle(Request r) {
            throw new IllegalStateException("handler exploded on " + r.uri());
        }
    }

    public static class ReturnsNull implements Handler {
        @Override
        public Response handle(Request r) {
            return null;
        }
    }

    public static class BigBody implements Handler {
        static final byte[] DATA = new byte[200_000];

        static {
            for (int i = 0; i < DATA.length; i++) {
                DATA[i] = (byte) ('a' + i % 26);
            }
        }

        @Override
        public Response handle(Request r) {
            return new Response(200).body(new ByteArrayInputStream(DATA));
        }
    }

    public static class FailingBody implements Handler {
        @Override
        public Response handle(Request r) {
            return new Response(200).body(new InputStream() {
                @Override
                public int read() throws IOException {
                    throw new IOException("the source went away");
                }
            });
        }
    }

    public static class HugeHeader implements Handler {
        static String value;

        @Override
        public Response handle(Request r) {
            // Larger than whatever the response buffer has grown to so far.
            value = "h".repeat(Worker.responseBuffer().capacity());
            return Response.of(200, "text/plain", "small").header("X-Huge", value);
        }
    }

    public static class Init implements Runnable {
        static final AtomicInteger RUNS = new AtomicInteger();

        @Override
        public void run() {
            RUNS.incrementAndGet();
        }
    }

    public static class FailingInit implements Runnable {
        @Override
        public void run() {
            throw new IllegalStateException("no database");
        }
    }

    public static class NotRunnable {
    }

    public static class AsyncOnly implements AsyncHandler {
        @Override
        public void handle(Request r, Responder responder) {
            responder.respond(new Response(204));
        }
    }

    @BeforeEach
    void clearHandlers() {
        // Handler indexes count from 0 again, as in a fresh worker.
        Worker.clear();
    }

    /** Puts a request into the request buffer and calls handle(), as the C module does. */
    private static DecodedResponse call(int index, byte[] request) {
        ByteBuffer in = Worker.requestBuffer(request.length);
        assertTrue(in.capacity() >= request.length);
        in.put(0, request);
        int n = Worker.handle(index, request.length, 0, Wire.PHASE_CONTENT);
        return DecodedResponse.decode(Worker.responseBuffer(), n);
    }

    @Test
    void handlerEndToEnd() {
        assertNull(Worker.register(Echo.class.getName()));
        byte[] req = new RequestBytes().method("PUT").path("/items/7").query("v=2").port(8080)
                .serverName("example.test").remoteAddr("10.0.0.1").header("X-Test", "yes")
                .memory("payload").build();
        DecodedResponse d = call(0, req);
        assertEquals(200, d.status);
        assertEquals("INLINE", d.kind);
        assertEquals("PUT /items/7 q=v=2 http example.test:8080 from 10.0.0.1 x-test=yes body=payload",
                d.bodyText());
        assertEquals(d.body.length, d.contentLength);
        assertEquals(List.of(List.of("Content-Type", "text/plain; charset=utf-8"),
                List.of("X-Handler", "echo")), d.headers);
        assertEquals(-1, d.stream);
        assertEquals(0, Worker.streams());
    }

    @Test
    void handlersAreIndexedInRegistrationOrder() {
        assertNull(Worker.register(Thrower.class.getName()));
        assertNull(Worker.register(Echo.class.getName()));
        assertEquals("ERROR", call(0, new RequestBytes().build()).kind);
        assertEquals("INLINE", call(1, new RequestBytes().build()).kind);
    }

    @Test
    void requestLargerThanTheBuffer() {
        assertNull(Worker.register(Echo.class.getName()));
        ByteBuffer before = Worker.requestBuffer(0);
        String body = "b".repeat(before.capacity() + 10_000);
        byte[] req = new RequestBytes().memory(body).build();
        DecodedResponse d = call(0, req);
        assertTrue(Worker.requestBuffer(0).capacity() >= req.length);
        assertTrue(Worker.requestBuffer(0).isDirect());
        // The echo is inline or, when larger than the response buffer, streamed through next().
        String text = d.kind.equals("STREAM") ? drain(d.stream) : d.bodyText();
        assertTrue(text.endsWith("body=" + body), text.substring(0, 100));
    }

    @Test
    void requestBufferIsKeptWhenLargeEnough() {
        ByteBuffer b = Worker.requestBuffer(10);
        assertSame(b, Worker.requestBuffer(b.capacity()));
    }

    @Test
    void handlerThatThrows() {
        assertNull(Worker.register(Thrower.class.getName()));
        DecodedResponse d = call(0, new RequestBytes().path("/boom").build());
        assertEquals(500, d.status);
        assertEquals("ERROR", d.kind);
        assertTrue(d.text.startsWith("the handler threw: java.lang.IllegalStateException: handler exploded on /boom"),
                d.text);
        assertTrue(d.text.contains("at nginx.jvm.WorkerTest$Thrower.handle"), "with the stack trace: " + d.text);
        assertEquals(0, Worker.streams());
    }

    @Test
    void handlerThatReturnsNull() {
        assertNull(Worker.register(ReturnsNull.class.getName()));
        DecodedResponse d = call(0, new RequestBytes().build());
        assertEquals("ERROR", d.kind);
        assertTrue(d.text.contains("null"), d.text);
    }

    @Test
    void missingClass() {
        String msg = Worker.register("com.example.NoSuchHandler");
        assertNotNull(msg);
        assertTrue(msg.startsWith("cannot load handler \"com.example.NoSuchHandler\""), msg);
        assertTrue(msg.contains("ClassNotFoundException"), msg);
        // The location still answers, with an error that points at the log.
        DecodedResponse d = call(0, new RequestBytes().build());
        assertEquals(500, d.status);
        assertEquals("ERROR", d.kind);
        assertTrue(d.text.contains("failed to load"), d.text);
    }

    @Test
    void classThatIsNotAHandler() {
        String msg = Worker.register(NotRunnable.class.getName());
        assertNotNull(msg);
        assertTrue(msg.contains("implements none of nginx.jvm.Handler, nginx.jvm.AsyncHandler,"), msg);
    }

    @Test
    void handlerOfTheWrongKindForTheLocation() {
        // jvm_async on needs an AsyncHandler, off a Handler: a mismatch answers 500 and says so.
        assertNull(Worker.register(Echo.class.getName()));
        assertNull(Worker.register(AsyncOnly.class.getName()));
        byte[] req = new RequestBytes().build();
        Worker.requestBuffer(req.length).put(0, req);
        int n = Worker.submit(0, req.length, 1, Tasks.LOOP, true, 0, Wire.PHASE_CONTENT);
        assertTrue(n > 0, "answered at once, not accepted: " + n);
        DecodedResponse d = DecodedResponse.decode(Worker.responseBuffer(), n);
        assertEquals("ERROR", d.kind);
        assertTrue(d.text.contains(Echo.class.getName() + " does not implement nginx.jvm.AsyncHandler"
                + " (check jvm_async)"), d.text);
        d = call(1, req);
        assertEquals("ERROR", d.kind);
        assertTrue(d.text.contains("does not implement nginx.jvm.Handler"), d.text);
    }

    @Test
    void unknownTask() {
        assertEquals(0, Worker.wake(false) & (Wire.WAKE_SOCKETS - 1), "nothing was submitted");
        int n = Worker.take(424242);
        DecodedResponse d = DecodedResponse.decode(Worker.responseBuffer(), n);
        assertEquals("ERROR", d.kind);
        assertEquals("no such task", d.text);
        Worker.cancel(424242);
    }

    @Test
    void streamedBodyThroughNextAndClose() {
        assertNull(Worker.register(BigBody.class.getName()));
        DecodedResponse d = call(0, new RequestBytes().build());
        assertEquals("STREAM", d.kind);
        assertEquals(-1, d.contentLength);
        assertTrue(d.stream >= 0);
        assertEquals(new String(BigBody.DATA, StandardCharsets.ISO_8859_1), drain(d.stream));
    }

    @Test
    void streamedBodyThatFails() {
        assertNull(Worker.register(FailingBody.class.getName()));
        DecodedResponse d = call(0, new RequestBytes().build());
        assertEquals("STREAM", d.kind);
        int body = d.stream;
        assertEquals(Wire.NEXT_FAILED, Worker.next(body));
        byte[] msg = new byte[Worker.responseBuffer().getInt(0)];
        Worker.responseBuffer().get(4, msg);
        String text = new String(msg, StandardCharsets.UTF_8);
        assertTrue(text.startsWith("the response body failed: java.io.IOException: the source went away"), text);
        Worker.close(body);
    }

    @Test
    void hugeHeadersReplaceTheResponseBuffer() {
        assertNull(Worker.register(HugeHeader.class.getName()));
        assertNull(Worker.register(Echo.class.getName()));
        ByteBuffer request = Worker.requestBuffer(0);
        byte[] req = new RequestBytes().build();
        request.put(0, req);
        ByteBuffer before = Worker.responseBuffer();
        int n = Worker.handle(0, req.length, 0, Wire.PHASE_CONTENT);
        assertEquals(Wire.BODY_MOVED, before.getInt(4), "the old buffer tells the C module to fetch the new one");
        assertTrue(Worker.responseBuffer() != before);
        DecodedResponse d = DecodedResponse.decode(Worker.responseBuffer(), n);
        assertEquals(List.of("X-Huge", HugeHeader.value), d.headers.get(1));
        assertEquals("small", d.bodyText());
        // The next response fits in the new buffer: no move.
        request.put(0, req);
        ByteBuffer now = Worker.responseBuffer();
        assertEquals("INLINE", DecodedResponse.decode(now, Worker.handle(1, req.length, 0, Wire.PHASE_CONTENT)).kind);
        assertSame(now, Worker.responseBuffer());
    }

    @Test
    void initWithARunnable() {
        int before = Init.RUNS.get();
        assertNull(Worker.init(Init.class.getName()));
        assertEquals(before + 1, Init.RUNS.get());
    }

    @Test
    void initWithANonRunnable() {
        String msg = Worker.init(NotRunnable.class.getName());
        assertNotNull(msg);
        assertTrue(msg.startsWith("jvm_init \"" + NotRunnable.class.getName() + "\" failed"), msg);
        assertTrue(msg.contains("does not implement java.lang.Runnable"), msg);
    }

    @Test
    void initThatThrowsOrIsMissing() {
        String msg = Worker.init(FailingInit.class.getName());
        assertNotNull(msg);
        assertTrue(msg.contains("IllegalStateException: no database"), msg);
        msg = Worker.init("com.example.NoSuchInit");
        assertNotNull(msg);
        assertTrue(msg.contains("ClassNotFoundException"), msg);
    }

    /** Pulls a streamed body through next() until -1, then close(), as the C module does. */
    private static String drain(int body) {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        int n;
        int pieces = 0;
        while ((n = Worker.next(body)) != -1) {
            assertTrue(n > 0, "next() answered " + n);
            byte[] piece = new byte[n];
            Worker.responseBuffer().get(0, piece);
            all.writeBytes(piece);
            assertTrue(++pieces < 10_000, "the body ends");
        }
        Worker.close(body);
        assertEquals(0, Worker.streams(), "closed bodies are forgotten");
        return all.toString(StandardCharsets.ISO_8859_1);
    }

    // ---- jvm_body_filter: Worker.body() as the C module calls it ----

    public static class Reverse implements BodyFilter {
        @Override
        public byte[] filter(Request r, ByteBuffer chunk, boolean last) {
            if (chunk.remaining() == 0) {
                return last ? ("end of " + r.uri()).getBytes(StandardCharsets.UTF_8) : null;
            }
            byte[] b = new byte[chunk.remaining()];
            for (int i = 0; i < b.length; i++) {
                b[i] = chunk.get(chunk.limit() - 1 - i);
            }
            return b;
        }
    }

    public static class Huge implements BodyFilter {
        @Override
        public byte[] filter(Request r, ByteBuffer chunk, boolean last) {
            return new byte[Worker.responseBuffer().capacity() + 1];
        }
    }

    public static class BodyThrower implements BodyFilter {
        @Override
        public byte[] filter(Request r, ByteBuffer chunk, boolean last) {
            throw new IllegalStateException("body filter exploded");
        }
    }

    /** Counts the bytes of each response on its own, and answers the count at the end. */
    public static class Counting implements BodyFilter {
        private long bytes;

        @Override
        public BodyFilter start(Request r) {
            return new Counting();
        }

        @Override
        public byte[] filter(Request r, ByteBuffer chunk, boolean last) {
            bytes += chunk.remaining();
            return last ? ("n=" + bytes).getBytes(StandardCharsets.UTF_8) : null;
        }
    }

    private static String answer(int n) {
        byte[] out = new byte[n];
        Worker.responseBuffer().get(0, out);
        return new String(out, StandardCharsets.UTF_8);
    }

    @Test
    void bodyFilterStartedPerResponseKeepsItsStateUntilTheEnd() {
        assertNull(Worker.register(Counting.class.getName()));
        byte[] two = "ab".getBytes(StandardCharsets.UTF_8);
        assertEquals(Wire.CHUNK_SAME, body(0, 7, two, false));
        assertEquals(Wire.CHUNK_SAME, body(0, 8, two, false));
        assertEquals(Wire.CHUNK_SAME, body(0, 7, two, false));
        assertEquals(2, Worker.filtering());
        assertEquals("n=6", answer(body(0, 7, two, true)));
        // the other response, cut short: its filter goes at bodyEnd
        assertEquals(1, Worker.filtering());
        Worker.bodyEnd(8);
        assertEquals(0, Worker.filtering());
        // a body of one chunk: started and ended in one call
        assertEquals("n=2", answer(body(0, 9, two, true)));
        assertEquals(0, Worker.filtering());
    }

    private static int body(int index, byte[] chunk, boolean last) {
        return body(index, 1, chunk, last);
    }

    /** The request, then the chunk after it, in the request buffer; returns Worker.body()'s answer. */
    private static int body(int index, long id, byte[] chunk, boolean last) {
        byte[] request = new RequestBytes().path("/filtered").build();
        ByteBuffer in = Worker.requestBuffer(request.length + chunk.length);
        in.put(0, request);
        in.put(request.length, chunk);
        return Worker.body(index, request.length, 0, id, chunk.length, last);
    }

    private static String message(int n) {
        assertEquals(Wire.CHUNK_FAILED, n);
        ByteBuffer out = Worker.responseBuffer();
        byte[] msg = new byte[out.getInt(0)];
        out.get(4, msg);
        return new String(msg, StandardCharsets.UTF_8);
    }

    @Test
    void bodyFilterReplacesAChunkAndAnswersAtTheEnd() {
        assertNull(Worker.register(Reverse.class.getName()));
        int n = body(0, "abc".getBytes(StandardCharsets.UTF_8), false);
        assertEquals(3, n);
        byte[] out = new byte[n];
        Worker.responseBuffer().get(0, out);
        assertEquals("cba", new String(out, StandardCharsets.UTF_8));
        n = body(0, new byte[0], true);
        out = new byte[n];
        Worker.responseBuffer().get(0, out);
        assertEquals("end of /filtered", new String(out, StandardCharsets.UTF_8));
        assertEquals(Wire.CHUNK_SAME, body(0, new byte[0], false));
    }

    @Test
    void bodyFilterAnswerLargerThanTheBufferGrowsIt() {
        assertNull(Worker.register(Huge.class.getName()));
        int before = Worker.responseBuffer().capacity();
        int n = body(0, "x".getBytes(StandardCharsets.UTF_8), true);
        assertEquals(before + 1, n);
        assertTrue(Worker.responseBuffer().capacity() >= n);
    }

    @Test
    void bodyFilterThatThrowsAnswersItsStackTrace() {
        assertNull(Worker.register(BodyThrower.class.getName()));
        String msg = message(body(0, "x".getBytes(StandardCharsets.UTF_8), false));
        assertEquals(0, Worker.filtering());
        assertTrue(msg.contains("the jvm_body_filter handler threw"), msg);
        assertTrue(msg.contains("body filter exploded"), msg);
        assertTrue(msg.contains("at nginx.jvm.WorkerTest$BodyThrower.filter"), msg);
    }

    @Test
    void bodyFilterOfAClassThatIsNoneSaysSo() {
        assertNull(Worker.register(Echo.class.getName()));
        String msg = message(body(0, new byte[0], true));
        assertTrue(msg.contains("does not implement nginx.jvm.BodyFilter"), msg);
    }

    // ---- the event loop's wake-up ----

    /** A throwable that cannot be printed: reading its message throws another like it. */
    static final class Unprintable extends RuntimeException {
        @Override
        public String getMessage() {
            throw new Unprintable();
        }
    }

    @Test
    void wakeNamesTheReadyTasksWhenTheTimersThrow() {
        // Worker.wake()'s own Tasks wake the loop through a native: these count instead.
        AtomicInteger wakes = new AtomicInteger();
        Tasks tasks = new Tasks(wakes::incrementAndGet);
        WebSockets sockets = new WebSockets(() -> { });
        ByteBuffer ready = ByteBuffer.allocate(8 * Wire.READY_MAX);
        AsyncHandler answers = (r, responder) -> responder.respond(new Response(200));
        List<Runnable> failures = List.of(
                () -> {
                    throw new IllegalStateException("the timers exploded");
                },
                // what logs it must not throw in turn
                () -> {
                    throw new Unprintable();
                },
                () -> {
                    throw new StackOverflowError();
                });
        long id = 2;
        for (Runnable timers : failures) {
            Task t = new Task(id, Tasks.LOOP, Wire.PHASE_CONTENT, answers,
                    new RequestBytes().path("/t").request(), true, tasks);
            int before = wakes.get();
            assertNull(tasks.submit(t, Tasks.LOOP));
            assertEquals(before + 1, wakes.get(), "its answer woke the loop");
            assertEquals(1, Worker.wake(timers, tasks, sockets, ready), "named although the timers threw");
            assertEquals(id, ready.getLong(0));
            assertEquals(0, Worker.wake(timers, tasks, sockets, ready), "named once");
            tasks.cancel(id);
            // the next answer wakes the loop again (checked at the next turn): the signal was cleared
            id += 2;
        }
    }

    @Test
    void aThrowableThatCannotBePrintedIsDescribed() {
        String text = Failure.describe("it failed", new Unprintable());
        assertTrue(text.startsWith("it failed: " + Unprintable.class.getName()
                + " (its message could not be read: " + Unprintable.class.getName() + ")"), text);
        assertTrue(text.contains("\n\tat nginx.jvm.WorkerTest.aThrowableThatCannotBePrintedIsDescribed"), text);
        // a cause that cannot be printed either
        text = Failure.describe("it failed", new IllegalStateException("outer", new Unprintable()));
        assertTrue(text.startsWith("it failed: java.lang.IllegalStateException (its message could not be read: "
                + Unprintable.class.getName() + ")"), text);
    }
}
