package testapp;

import java.io.InputStream;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * Bodies that never end, by the last path segment: {@code zeros} (an
 * InputStream whose every read gives 0 bytes), {@code bytes} (16 KB of "x"
 * per read, forever); {@code reads?name=} answers how many reads the stream
 * {@code name} has had and whether it was closed; {@code ok} answers at
 * once; {@code live} the runtime's live tasks and requests in flight.
 */
public final class Endless implements Handler {
    private static final Map<String, AtomicLong> READS = new ConcurrentHashMap<>();
    private static final Map<String, Boolean> CLOSED = new ConcurrentHashMap<>();

    @Override
    public Response handle(Request r) throws Exception {
        String uri = r.uri();
        String kind = uri.substring(uri.lastIndexOf('/') + 1);
        String name = LateBody.param(r, "name");
        switch (kind) {
            case "zeros":
                return Response.of(200, "application/octet-stream", new Counted(name, 0));
            case "bytes":
                return Response.of(200, "application/octet-stream", new Counted(name, 16 * 1024));
            case "reads": {
                AtomicLong n = READS.get(name);
                return Response.of(200, "text/plain", (n == null ? 0 : n.get()) + " "
                        + CLOSED.getOrDefault(name, false));
            }
            case "ok":
                return Response.of(200, "text/plain", "ok");
            case "live":
                return Response.of(200, "text/plain", LateBody.live());
            default:
                return Response.of(404, "text/plain", "no kind " + kind);
        }
    }

    /** Reads of {@code size} bytes of "x" (0: nothing), forever, counted under a name. */
    private static final class Counted extends InputStream {
        private final AtomicLong reads;
        private final String name;
        private final int size;

        Counted(String name, int size) {
            this.name = name == null ? "anonymous" : name;
            this.reads = READS.computeIfAbsent(this.name, k -> new AtomicLong());
            this.size = size;
        }

        @Override
        public int read() {
            reads.incrementAndGet();
            return size == 0 ? 0 : 'x';
        }

        @Override
        public int read(byte[] b, int off, int len) {
            reads.incrementAndGet();
            int n = Math.min(len, size);
            Arrays.fill(b, off, off + n, (byte) 'x');
            return n;
        }

        @Override
        public void close() {
            CLOSED.put(name, true);
        }
    }
}
