package testapp;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;
import nginx.jvm.BodyFilter;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/** Body filters of tests/test_body_filter.py. */
public final class BodyFilters {
    private BodyFilters() {
    }

    static byte[] bytes(ByteBuffer chunk) {
        byte[] b = new byte[chunk.remaining()];
        chunk.get(b);
        return b;
    }

    /** ASCII a-z to A-Z, every chunk replaced. */
    public static final class Upper implements BodyFilter {
        @Override
        public byte[] filter(Request r, ByteBuffer chunk, boolean last) {
            byte[] b = bytes(chunk);
            for (int i = 0; i < b.length; i++) {
                if (b[i] >= 'a' && b[i] <= 'z') {
                    b[i] -= 32;
                }
            }
            return b;
        }
    }

    /** Sends nothing of the body. */
    public static final class Drop implements BodyFilter {
        @Override
        public byte[] filter(Request r, ByteBuffer chunk, boolean last) {
            return new byte[0];
        }
    }

    /** The chunks as they are, then "[tail]" after the last one. */
    public static final class Tail implements BodyFilter {
        @Override
        public byte[] filter(Request r, ByteBuffer chunk, boolean last) {
            if (!last) {
                return null;
            }
            byte[] b = bytes(chunk);
            byte[] tail = "[tail]".getBytes(StandardCharsets.US_ASCII);
            byte[] out = new byte[b.length + tail.length];
            System.arraycopy(b, 0, out, 0, b.length);
            System.arraycopy(tail, 0, out, b.length, tail.length);
            return out;
        }
    }

    /** A filter of its own per response: "[chunks bytes]" appended at the end. */
    public static final class Numbered implements BodyFilter {
        private long chunks;
        private long bytes;

        @Override
        public BodyFilter start(Request r) {
            return new Numbered();
        }

        @Override
        public byte[] filter(Request r, ByteBuffer chunk, boolean last) {
            chunks++;
            bytes += chunk.remaining();
            if (!last) {
                return null;
            }
            byte[] b = bytes(chunk);
            byte[] tail = ("[" + chunks + " " + bytes + "]").getBytes(StandardCharsets.US_ASCII);
            byte[] out = new byte[b.length + tail.length];
            System.arraycopy(b, 0, out, 0, b.length);
            System.arraycopy(tail, 0, out, b.length, tail.length);
            return out;
        }
    }

    /** Throws at its first chunk. */
    public static final class Throws implements BodyFilter {
        @Override
        public byte[] filter(Request r, ByteBuffer chunk, boolean last) {
            throw new IllegalStateException("body-boom-marker");
        }
    }

    /** Throws on the first chunk after 1 MB of the body, which it counts by X-Id. */
    public static final class ThrowsLater implements BodyFilter {
        @Override
        public byte[] filter(Request r, ByteBuffer chunk, boolean last) {
            AtomicLongArray c = COUNTS.computeIfAbsent(r.header("x-id"), k -> new AtomicLongArray(4));
            if (c.addAndGet(2, chunk.remaining()) > 1 << 20) {
                throw new IllegalStateException("body-boom-later-marker");
            }
            return null;
        }
    }

    /** Per X-Id: calls, calls with last, bytes, the largest chunk. */
    static final Map<String, AtomicLongArray> COUNTS = new ConcurrentHashMap<>();

    /** Changes nothing; counts what it sees under the request's X-Id. */
    public static final class Count implements BodyFilter {
        @Override
        public byte[] filter(Request r, ByteBuffer chunk, boolean last) {
            String id = r.header("x-id");
            if (id != null) {
                AtomicLongArray c = COUNTS.computeIfAbsent(id, k -> new AtomicLongArray(4));
                c.incrementAndGet(0);
                c.addAndGet(1, last ? 1 : 0);
                c.addAndGet(2, chunk.remaining());
                c.accumulateAndGet(3, chunk.remaining(), Math::max);
            }
            return null;
        }
    }

    /** Content: "calls lasts bytes max" of ?id=, as Count saw them. */
    public static final class Report implements Handler {
        @Override
        public Response handle(Request r) {
            AtomicLongArray c = COUNTS.getOrDefault(r.variable("arg_id"), new AtomicLongArray(4));
            return Response.of(200, "text/plain", c.get(0) + " " + c.get(1) + " " + c.get(2) + " " + c.get(3));
        }
    }
}
