package nginx.jvm;

import java.nio.ByteBuffer;

/**
 * Sees, and may replace, the body of every response of its location
 * ({@code jvm_body_filter Class}), whoever makes it (a static file,
 * {@code proxy_pass}, a JVM handler), chunk by chunk as it streams.
 *
 * <p>{@code chunk} is a read-only view of the worker's request buffer, where
 * the C module copied the chunk: valid during the call only (the next chunk
 * overwrites it; copy what you keep). A file's body comes in pieces of at
 * most 32 KB; a chunk made in memory (by {@code proxy_pass}, a handler)
 * comes as it was made. {@code last} is true exactly once for a response
 * whose body ends, with its last chunk, which may be empty (an empty body
 * is one empty chunk with {@code last}); never for a response without a body
 * (HEAD, 204, 304), nor for one cut short (the client left, the upstream
 * failed).
 *
 * <p>Answers null to send the chunk as it is, an empty array to send nothing
 * for it, or the bytes to send instead.
 *
 * <p>One object serves every response of the worker, unless {@link #start}
 * answers one of its own for a response (state kept across its chunks: a
 * pattern split between two chunks, a count). Called on the event loop, whatever
 * {@code jvm_mode} says: nginx cannot suspend a body filter; keep it quick.
 * An exception is logged with its stack trace and ends the response: the
 * status and header fields have gone, so nginx closes the connection and
 * the client sees a body cut short.
 */
@FunctionalInterface
public interface BodyFilter {
    byte[] filter(Request request, ByteBuffer chunk, boolean last) throws Exception;

    /**
     * Called once per response, before its first chunk: the filter that gets
     * the response's chunks, until the one with {@code last} or until the
     * response ends cut short, when it is dropped. By default this one.
     */
    default BodyFilter start(Request request) throws Exception {
        return this;
    }
}
