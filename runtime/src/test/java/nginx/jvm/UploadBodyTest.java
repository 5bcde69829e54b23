package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A body read as it arrives: the test's thread stands in for the event loop
 * (offer, end), another for the handler (read).
 */
@Timeout(30)
class UploadBodyTest {
    private final AtomicInteger wakes = new AtomicInteger();
    private final UploadBody body = new UploadBody(wakes::incrementAndGet);

    private static byte[] bytes(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (seed + i);
        }
        return b;
    }

    @Test
    void piecesAreReadInOrderThenTheEnd() throws IOException {
        assertEquals(Wire.UPLOAD_MORE, body.offer(bytes(3, 0), Wire.UPLOAD_GOING));
        assertEquals(Wire.UPLOAD_MORE, body.offer(bytes(2, 3), Wire.UPLOAD_END));
        assertArrayEquals(bytes(5, 0), body.readAllBytes());
        assertEquals(-1, body.read());
    }

    @Test
    void aReadBlocksUntilAPieceArrives() throws Exception {
        CompletableFuture<byte[]> read = CompletableFuture.supplyAsync(() -> {
            try {
                return body.readAllBytes();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        Thread.sleep(100);
        assertTrue(!read.isDone());
        body.offer(bytes(10, 7), Wire.UPLOAD_GOING);
        body.offer(new byte[0], Wire.UPLOAD_END);
        assertArrayEquals(bytes(10, 7), read.get(10, TimeUnit.SECONDS));
    }

    @Test
    void aFullQueuePausesTheLoopUntilTheHandlerTakesHalf() throws IOException {
        for (int i = 0; i < UploadBody.PIECES - 1; i++) {
            assertEquals(Wire.UPLOAD_MORE, body.offer(bytes(4, i), Wire.UPLOAD_GOING));
        }
        assertEquals(Wire.UPLOAD_FULL, body.offer(bytes(4, 9), Wire.UPLOAD_GOING));
        byte[] b = new byte[4];
        body.read(b, 0, 4);
        assertEquals(0, wakes.get(), "three pieces still wait");
        body.read(b, 0, 4);
        assertEquals(1, wakes.get(), "half taken: the loop may read on");
        body.read(b, 0, 4);
        assertEquals(1, wakes.get(), "woken once per pause");
    }

    @Test
    void aFailedBodyThrowsAfterWhatArrivedWithTheReason() throws IOException {
        body.offer(bytes(5, 0), Wire.UPLOAD_GOING);
        body.offer(new byte[0], 408);
        byte[] b = new byte[5];
        assertEquals(5, body.read(b, 0, 5));
        IOException e = assertThrows(IOException.class, body::read);
        assertTrue(e.getMessage().contains("408") && e.getMessage().contains("after 5 bytes"),
                e.getMessage());
    }

    @Test
    void theRequestsEndDropsThePiecesAndWakesAReader() throws Exception {
        body.offer(bytes(100, 0), Wire.UPLOAD_GOING);
        body.end();
        assertThrows(IOException.class, body::read);
        assertEquals(0, body.available());
        UploadBody waiting = new UploadBody(() -> { });
        CompletableFuture<Throwable> read = CompletableFuture.supplyAsync(() -> {
            try {
                waiting.read();
                return null;
            } catch (IOException e) {
                return e;
            }
        });
        Thread.sleep(50);
        waiting.end();
        assertTrue(read.get(10, TimeUnit.SECONDS) instanceof IOException);
    }

    @Test
    void aClosedBodyDropsWhatComesAndWakesAPausedLoop() {
        for (int i = 0; i < UploadBody.PIECES; i++) {
            body.offer(bytes(4, i), Wire.UPLOAD_GOING);
        }
        body.close();
        assertEquals(1, wakes.get());
        assertEquals(Wire.UPLOAD_DROP, body.offer(bytes(4, 0), Wire.UPLOAD_GOING));
        assertThrows(IOException.class, body::read);
    }

    @Test
    void aReadAfterCloseThrowsEvenWithBytesLeftInAPiece() throws IOException {
        body.offer(bytes(10, 0), Wire.UPLOAD_GOING);
        assertEquals(0, body.read());
        body.close();
        assertThrows(IOException.class, () -> body.read(new byte[4], 0, 4));
    }

    @Test
    void anInterruptedReadThrowsInterruptedIOException() throws Exception {
        CompletableFuture<Throwable> got = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                body.read();
                got.complete(null);
            } catch (IOException e) {
                got.complete(e);
            }
        });
        t.start();
        Thread.sleep(50);
        t.interrupt();
        assertTrue(got.get(10, TimeUnit.SECONDS) instanceof InterruptedIOException);
    }

    @Test
    void manyPiecesAcrossThreadsArriveWhole() throws Exception {
        int pieces = 2000;
        ByteArrayOutputStream want = new ByteArrayOutputStream();
        CompletableFuture<byte[]> read = CompletableFuture.supplyAsync(() -> {
            try {
                return body.readAllBytes();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        for (int i = 0; i < pieces; i++) {
            byte[] p = bytes(1 + i % 97, i);
            want.write(p);
            int w = wakes.get();
            if (body.offer(p, i == pieces - 1 ? Wire.UPLOAD_END : Wire.UPLOAD_GOING)
                    == Wire.UPLOAD_FULL) {
                // the loop reads no more until the handler wakes it
                while (wakes.get() == w) {
                    Thread.onSpinWait();
                }
            }
        }
        assertArrayEquals(want.toByteArray(), read.get(20, TimeUnit.SECONDS));
    }

    @Test
    void readableSaysWhenAReadWouldNotBlockAndCallsBackOnce() throws IOException {
        AtomicInteger called = new AtomicInteger();
        assertTrue(!body.readable(called::incrementAndGet));
        // a null callback only asks: the one registered stays
        assertTrue(!body.readable(null));
        body.offer(bytes(4, 1), Wire.UPLOAD_GOING);
        assertEquals(1, called.get());
        assertTrue(body.readable(null));
        assertArrayEquals(bytes(4, 1), body.readNBytes(4));
        assertTrue(!body.readable(called::incrementAndGet));
        body.offer(new byte[0], Wire.UPLOAD_END);
        assertEquals(2, called.get());
        // the end answers at once: readable
        assertTrue(body.readable(called::incrementAndGet));
        assertEquals(-1, body.read());
        assertEquals(2, called.get());
    }

    @Test
    void theRequestsEndWakesAReaderThatWaitsForMore() {
        AtomicInteger called = new AtomicInteger();
        assertTrue(!body.readable(called::incrementAndGet));
        body.end();
        assertEquals(1, called.get());
        assertTrue(body.readable(null));
        assertThrows(IOException.class, body::read);
    }
}
