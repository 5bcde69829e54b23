package nginx.jvm;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/** Numbers in the C module's request layout: native byte order, unaligned. */
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
}
