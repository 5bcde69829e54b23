package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class BodySourceTest {

    /** The lengths fill() answers until the end, each piece's bytes appended to {@code all}. */
    private static List<Integer> pieces(BodySource s, int capacity, ByteArrayOutputStream all) throws IOException {
        ByteBuffer out = ByteBuffer.allocateDirect(capacity);
        List<Integer> sizes = new ArrayList<>();
        int n;
        while ((n = s.fill(out)) != -1) {
            assertTrue(n > 0, "fill never answers 0");
            byte[] piece = new byte[n];
            out.get(0, piece);
            all.writeBytes(piece);
            sizes.add(n);
            assertTrue(sizes.size() < 100_000, "the body ends");
        }
        assertEquals(-1, s.fill(out), "the end stays the end");
        return sizes;
    }

    private static String text(ByteArrayOutputStream b) {
        return b.toString(StandardCharsets.UTF_8);
    }

    // ---- Bytes ----

    @Test
    void bytesInBufferSizedPieces() throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        assertEquals(List.of(4, 4, 2), pieces(new BodySource.Bytes("0123456789".getBytes()), 4, all));
        assertEquals("0123456789", text(all));
    }

    @Test
    void bytesExactMultipleAndEmpty() throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        assertEquals(List.of(5, 5), pieces(new BodySource.Bytes("abcdefghij".getBytes()), 5, all));
        assertEquals(List.of(), pieces(new BodySource.Bytes(new byte[0]), 5, new ByteArrayOutputStream()));
    }

    // ---- Stream ----

    /** Counts closes, and answers reads in pieces no larger than {@code step}, some of them 0. */
    static final class TrickleStream extends InputStream {
        final InputStream in;
        final int step;
        int closes;
        boolean zeroNext = true;

        TrickleStream(byte[] data, int step) {
            this.in = new ByteArrayInputStream(data);
            this.step = step;
        }

        @Override
        public int read() throws IOException {
            return in.read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            zeroNext = !zeroNext;
            if (zeroNext && len > 0) {
                return 0;
            }
            return in.read(b, off, Math.min(len, step));
        }

        @Override
        public void close() {
            closes++;
        }
    }

    @Test
    void streamReadsAtMostABufferAndSkipsEmptyReads() throws IOException {
        byte[] data = new byte[1000];
        new Random(1).nextBytes(data);
        TrickleStream in = new TrickleStream(data, 300);
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        List<Integer> sizes = pieces(new BodySource.Stream(in), 256, all);
        assertEquals(List.of(256, 256, 256, 232), sizes);
        assertArrayEquals(data, all.toByteArray());
    }

    @Test
    void streamCloseClosesTheInputStream() throws IOException {
        TrickleStream in = new TrickleStream(new byte[10], 10);
        BodySource s = new BodySource.Stream(in);
        s.fill(ByteBuffer.allocate(4));
        assertEquals(0, in.closes, "not closed while being read");
        s.close();
        assertEquals(1, in.closes);
    }

    @Test
    void streamReadFailureSurfaces() {
        InputStream broken = new InputStream() {
            @Override
            public int read() throws IOException {
                throw new IOException("disk on fire");
            }
        };
        IOException e = assertThrows(IOException.class,
                () -> new BodySource.Stream(broken).fill(ByteBuffer.allocate(8)));
        assertEquals("disk on fire", e.getMessage());
    }

    @Test
    void aStreamThatOnlyReadsZeroGivesUpForNow() throws IOException {
        AtomicInteger reads = new AtomicInteger();
        InputStream zeros = new InputStream() {
            @Override
            public int read() {
                return 0;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                reads.incrementAndGet();
                return 0;
            }
        };
        BodySource s = new BodySource.Stream(zeros);
        assertEquals(Wire.NEXT_EMPTY, s.fill(ByteBuffer.allocate(8)));
        assertEquals(BodySource.EMPTY_TRIES, reads.get(), "a bounded number of reads per fill");
        assertEquals(Wire.NEXT_EMPTY, s.fill(ByteBuffer.allocate(8)), "and again when asked again");
    }

    // ---- Elements ----

    @Test
    void elementsOfEveryKind() throws IOException {
        List<Object> elements = Arrays.asList("ab", new byte[] {'c', 'd', 'e'}, "", new byte[0],
                42, 'x', "\u00e9");
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        List<Integer> sizes = pieces(new BodySource.Elements(elements.iterator(), StandardCharsets.UTF_8), 64, all);
        // One piece per non-empty element, so each is flushed on its own.
        assertEquals(List.of(2, 3, 2, 1, 2), sizes);
        assertEquals("abcde42x\u00e9", text(all));
    }

    @Test
    void elementsLargerThanTheBufferAreSplit() throws IOException {
        List<String> elements = List.of("0123456789", "ab");
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        assertEquals(List.of(4, 4, 2, 2),
                pieces(new BodySource.Elements(elements.iterator(), StandardCharsets.UTF_8), 4, all));
        assertEquals("0123456789ab", text(all));
    }

    @Test
    void elementsUseTheGivenCharset() throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        pieces(new BodySource.Elements(List.of("caf\u00e9").iterator(), StandardCharsets.ISO_8859_1), 16, all);
        assertArrayEquals(new byte[] {'c', 'a', 'f', (byte) 0xe9}, all.toByteArray());
    }

    @Test
    void onlyEmptyElementsMakeAnEmptyBody() throws IOException {
        List<Integer> sizes = pieces(new BodySource.Elements(List.of("", "", new byte[0]).iterator(),
                StandardCharsets.UTF_8), 16, new ByteArrayOutputStream());
        assertEquals(List.of(), sizes);
    }

    @Test
    void endlessEmptyElementsGiveUpForNowThenGoOn() throws IOException {
        AtomicInteger taken = new AtomicInteger();
        Iterator<String> it = new Iterator<>() {
            @Override
            public boolean hasNext() {
                return true;
            }

            @Override
            public String next() {
                // empty for a while longer than one fill takes, then a byte
                return taken.incrementAndGet() == BodySource.EMPTY_TRIES + 10 ? "z" : "";
            }
        };
        BodySource s = new BodySource.Elements(it, StandardCharsets.UTF_8);
        ByteBuffer out = ByteBuffer.allocate(8);
        assertEquals(Wire.NEXT_EMPTY, s.fill(out));
        assertEquals(BodySource.EMPTY_TRIES, taken.get());
        assertEquals(1, s.fill(out));
        assertEquals('z', out.get(0));
    }

    @Test
    void elementsAreTakenOneAtATime() throws IOException {
        // A lazy or endless sequence must not be realised ahead of the client.
        AtomicInteger taken = new AtomicInteger();
        Iterator<String> endless = new Iterator<>() {
            @Override
            public boolean hasNext() {
                return true;
            }

            @Override
            public String next() {
                return "line " + taken.incrementAndGet() + "\n";
            }
        };
        BodySource s = new BodySource.Elements(endless, StandardCharsets.UTF_8);
        ByteBuffer out = ByteBuffer.allocate(64);
        for (int i = 1; i <= 3; i++) {
            int n = s.fill(out);
            byte[] piece = new byte[n];
            out.get(0, piece);
            assertEquals("line " + i + "\n", new String(piece, StandardCharsets.UTF_8));
            assertEquals(i, taken.get());
        }
    }

    @Test
    void elementsCloseAClosableIterator() throws IOException {
        AtomicBoolean closed = new AtomicBoolean();
        class ClosingIterator implements Iterator<String>, AutoCloseable {
            @Override
            public boolean hasNext() {
                return false;
            }

            @Override
            public String next() {
                throw new java.util.NoSuchElementException();
            }

            @Override
            public void close() {
                closed.set(true);
            }
        }
        new BodySource.Elements(new ClosingIterator(), StandardCharsets.UTF_8).close();
        assertTrue(closed.get());
        // A plain iterator has nothing to close.
        new BodySource.Elements(List.of("a").iterator(), StandardCharsets.UTF_8).close();
    }

    // ---- Pipe (a BodyWriter run on its own thread) ----

    @Test
    void pipeDeliversInOrder() throws IOException {
        byte[] data = new byte[200_000];
        new Random(7).nextBytes(data);
        Pipe pipe = Pipe.start(out -> {
            // Mixed write sizes and flushes.
            int at = 0;
            int step = 1;
            while (at < data.length) {
                int n = Math.min(step, data.length - at);
                if (n == 1) {
                    out.write(data[at]);
                } else {
                    out.write(data, at, n);
                }
                at += n;
                step = step * 3 % 40_000 + 1;
                if (step % 2 == 0) {
                    out.flush();
                }
            }
        });
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        pieces(new BodySource.Stream(pipe), 4096, all);
        assertArrayEquals(data, all.toByteArray());
    }

    @Test
    void pipeEmptyWriter() throws IOException {
        Pipe pipe = Pipe.start(out -> { });
        assertEquals(-1, pipe.read());
        assertEquals(-1, pipe.read(), "the end stays the end");
    }

    @Test
    void pipeByteReads() throws IOException {
        Pipe pipe = Pipe.start(out -> out.write(new byte[] {1, (byte) 0xff}));
        assertEquals(1, pipe.read());
        assertEquals(0xff, pipe.read());
        assertEquals(-1, pipe.read());
    }

    @Test
    void writerExceptionSurfacesAsIOExceptionAfterTheDataWritten() throws IOException {
        IllegalStateException boom = new IllegalStateException("writer broke");
        Pipe pipe = Pipe.start(out -> {
            out.write("partial".getBytes(StandardCharsets.US_ASCII));
            throw boom;
        });
        byte[] b = new byte[7];
        int got = 0;
        while (got < 7) {
            int n = pipe.read(b, got, 7 - got);
            assertTrue(n > 0);
            got += n;
        }
        assertEquals("partial", new String(b, StandardCharsets.US_ASCII));
        IOException e = assertThrows(IOException.class, pipe::read);
        assertSame(boom, e.getCause());
    }

    @Test
    void writerIOExceptionSurfaces() {
        IOException boom = new IOException("upstream gone");
        Pipe pipe = Pipe.start(out -> {
            throw boom;
        });
        IOException e = assertThrows(IOException.class, () -> pipe.read(new byte[8], 0, 8));
        assertSame(boom, e.getCause());
    }

    @Test
    void closingTheReaderFailsTheWriter() throws Exception {
        CompletableFuture<Throwable> writerEnd = new CompletableFuture<>();
        AtomicInteger flushes = new AtomicInteger();
        Pipe pipe = Pipe.start(out -> {
            try {
                // Endless, as a server-sent-events stream would be.
                for (long i = 0; i < 10_000_000L; i++) {
                    out.write(("event " + i + "\n").getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    flushes.incrementAndGet();
                }
                writerEnd.complete(null);
            } catch (Throwable t) {
                writerEnd.complete(t);
                throw t;
            }
        });
        byte[] b = new byte[64];
        int n = pipe.read(b, 0, b.length);
        assertTrue(new String(b, 0, n, StandardCharsets.US_ASCII).startsWith("event 0\n"));
        pipe.close();
        Throwable t = writerEnd.get(5, TimeUnit.SECONDS);
        assertInstanceOf(IOException.class, t, "the writer's write fails once the reader is closed");
        assertTrue(flushes.get() < 100, "the writer was held back before the close: " + flushes.get());
    }

    @Test
    void closingTheReaderReleasesABlockedWriter() throws Exception {
        // The writer fills the queue and blocks; nothing is read at all.
        CompletableFuture<Throwable> writerEnd = new CompletableFuture<>();
        AtomicInteger flushes = new AtomicInteger();
        Pipe pipe = Pipe.start(out -> {
            try {
                while (true) {
                    out.write('x');
                    out.flush();
                    flushes.incrementAndGet();
                }
            } catch (Throwable t) {
                writerEnd.complete(t);
                throw t;
            }
        });
        waitFor(() -> flushes.get() >= 4);
        Thread.sleep(200);
        assertEquals(4, flushes.get(), "back-pressure: the queue holds four chunks");
        pipe.close();
        assertInstanceOf(IOException.class, writerEnd.get(5, TimeUnit.SECONDS));
    }

    private static void waitFor(java.util.function.BooleanSupplier condition) throws InterruptedException {
        for (int i = 0; i < 500 && !condition.getAsBoolean(); i++) {
            Thread.sleep(10);
        }
        assertTrue(condition.getAsBoolean(), "condition not reached within 5 s");
    }
}
