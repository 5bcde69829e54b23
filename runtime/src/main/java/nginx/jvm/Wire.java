package nginx.jvm;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The Java half of the wire protocol between the C module and this runtime,
 * which docs/internals.md describes in full: the constants (the C module's
 * are in ngx_http_jvm_wire.h, with the same names and values, which
 * tests/test_wire.py checks) and the reading and copying of the layouts,
 * native byte order, unaligned.
 */
final class Wire {
    /** Checked by the C module when it binds this runtime: equal, or it refuses to start. */
    static final int PROTOCOL = 10;

    /** Request flags: the first int of a described request. */
    static final int REQ_HTTPS = 1, REQ_HAS_QUERY = 2, REQ_WEBSOCKET = 4, REQ_BODY_FILE = 8;

    /** Request flag: the body still arrives, in pieces ({@link Worker#upload}; jvm_request_buffering off). */
    static final int REQ_BODY_STREAM = 16;

    /**
     * Request flag: nginx's {@code $uri} differs from the path (nginx decoded or normalised it,
     * or try_files changed it) and follows the client certificate, one more string
     * ({@link Request#path}).
     */
    static final int REQ_HAS_URI = 32;

    /**
     * {@link Worker#upload}'s status: more pieces follow; this was the last (else the HTTP
     * status the body failed with, 400 or more).
     */
    static final int UPLOAD_GOING = 0, UPLOAD_END = 1;

    /**
     * {@link Worker#upload}'s answer: read on; stop reading until {@link Worker#wake} names
     * the task with {@link #POLL_BODY}; read the rest and throw it away (nobody reads it).
     */
    static final int UPLOAD_MORE = 0, UPLOAD_FULL = 1, UPLOAD_DROP = 2;

    /** Added to a task's id by {@link Worker#wake}: its body has room again (ids are even). */
    static final int POLL_BODY = 1;

    /**
     * {@link Worker#wake}: the ready buffer's ids at most; added to their count, WebSockets
     * have frames to send or may read again ({@link Worker#wsPoll}).
     */
    static final int READY_MAX = 64, WAKE_SOCKETS = 65536;

    /** Body kinds of an encoded response. MOVED: the response is in the new response buffer. */
    static final int BODY_NONE = 0, BODY_INLINE = 1, BODY_FILE = 2, BODY_STREAM = 3, BODY_ERROR = 4,
            BODY_MOVED = 5, BODY_UPGRADE = 6, BODY_TUNNEL = 9;

    /**
     * A rewrite, access or log handler answered nothing: the request goes on. The header
     * fields of a header filter's answer are edits ({@link Worker#filter}).
     */
    static final int BODY_DECLINED = 7, BODY_EDITS = 8;

    /** The phase a handler serves. */
    static final int PHASE_CONTENT = 0, PHASE_REWRITE = 1, PHASE_ACCESS = 2, PHASE_LOG = 3;

    /** {@link Worker#variable}: the value is null; the handler failed (message in the response buffer). */
    static final int VAR_NULL = -1, VAR_FAILED = -2;

    /** {@link Worker#filter}: the header filter changed nothing. */
    static final int FILTER_SAME = -1;

    /**
     * {@link Worker#body}, besides a replacement's length: the chunk is unchanged; the body
     * filter failed (the response buffer then holds an int length and the message).
     */
    static final int CHUNK_SAME = -1, CHUNK_FAILED = -2;

    /** The fixed part of an encoded response: int status, int kind, long length, int count. */
    static final int RESPONSE_HEAD = 20;

    /** Where a handler runs (jvm_mode). */
    static final int LOOP = 0, POOL = 1, VIRTUAL = 2, COLOOP = 3;

    /** {@link Worker#submit}: the task was accepted (else the length of an error response). */
    static final int ACCEPTED = 0;

    /**
     * {@link Worker#take}, added to the response's length: the task is over for Java (a whole
     * content response, forgotten as by a cancel), so the C module calls no cancel or abort.
     */
    static final int TAKE_DONE = 1073741824;

    /**
     * {@link Worker#next}, besides a piece's length: the body ended; its next piece is not
     * produced yet; it failed (the response buffer then holds an int length and the message);
     * its source gave only empty pieces this time (ask again a little later).
     */
    static final int NEXT_END = -1, NEXT_WAIT = -2, NEXT_FAILED = -3, NEXT_EMPTY = -4;

    /** {@link Worker#wsOpen}: the C module answers pings; the listener does. */
    static final int WS_C_PINGS = 0, WS_JAVA_PINGS = 1;

    /** {@link Worker#wsMessage}: go on reading; stop until the socket is polled. */
    static final int WS_CONTINUE = 0, WS_PAUSE = 1;

    /**
     * {@link Worker#wsTake}, besides a frame's length: nothing is queued; the frame
     * needs the new, larger response buffer (take it again from there).
     */
    static final int WS_NONE = 0, WS_MOVED = -1;

    private static final VarHandle INT =
            MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.nativeOrder());
    private static final VarHandle LONG =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.nativeOrder());

    private Wire() {
    }

    static int getInt(byte[] b, int at) {
        return (int) INT.get(b, at);
    }

    static long getLong(byte[] b, int at) {
        return (long) LONG.get(b, at);
    }

    /*
     * Copies between the direct buffers shared with C and heap arrays. The
     * JDK's bulk get and put copy through a call into the VM, which costs
     * more than the copy itself at the size of a request or a small body;
     * eight bytes at a time in Java is faster there.
     */
    private static final int BULK = 2048;

    static void get(ByteBuffer src, int at, byte[] dst, int off, int len) {
        if (len >= BULK) {
            src.get(at, dst, off, len);
            return;
        }
        int i = 0;
        for (; i + 8 <= len; i += 8) {
            LONG.set(dst, off + i, src.getLong(at + i));
        }
        for (; i < len; i++) {
            dst[off + i] = src.get(at + i);
        }
    }

    static void put(ByteBuffer dst, int at, byte[] src, int off, int len) {
        if (len >= BULK) {
            dst.put(at, src, off, len);
            return;
        }
        int i = 0;
        for (; i + 8 <= len; i += 8) {
            dst.putLong(at + i, (long) LONG.get(src, off + i));
        }
        for (; i < len; i++) {
            dst.put(at + i, src[off + i]);
        }
    }
}
