package nginx.jvm;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** The C module's wire layout: native byte order, unaligned. */
final class Wire {
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
