package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What SharedDict does before and after the natives: argument checks (a bad
 * argument never reaches shared memory), and the decoding of what the C
 * module answers. The dictionary itself is tested in a real nginx
 * (tests/test_shared.py).
 */
class SharedDictTest {
    /** A dictionary whose natives are not there: any call that gets past the checks fails. */
    private final SharedDict d = new SharedDict("t", 0, 4096);

    @Test
    void outsideNginxIsAnIllegalState() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> SharedDict.named("x"));
        assertTrue(e.getMessage().contains("only in an nginx worker"));
    }

    @Test
    void badKeysAreRejectedBeforeShm() {
        assertThrows(IllegalArgumentException.class, () -> d.get(null));
        assertThrows(IllegalArgumentException.class, () -> d.put("", "v"));
        String big = "k".repeat(Shm.KEY_MAX + 1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> d.put(big, "v"));
        assertTrue(e.getMessage().contains("too large"), e.getMessage());
        // a key of 3 bytes per char in UTF-8
        assertThrows(IllegalArgumentException.class, () -> d.delete("€".repeat(Shm.KEY_MAX / 3 + 1)));
    }

    @Test
    void badValuesAreRejectedBeforeShm() {
        assertThrows(IllegalArgumentException.class, () -> d.put("k", null));
        assertThrows(IllegalArgumentException.class, () -> d.put("k", 1.5));
        assertThrows(IllegalArgumentException.class, () -> d.put("k", new Object()));
        assertThrows(IllegalArgumentException.class, () -> d.put("k", "v", -1));
        assertThrows(IllegalArgumentException.class, () -> d.incr("k", 1, 0, -5));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> d.put("k", new byte[4096]));
        assertTrue(e.getMessage().contains("can never fit"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> d.keys(0));
    }

    @Test
    void overflowNamesTheKeyAndTheNumbers() {
        assertEquals("incr of \"hits\" in shared dictionary \"d\" overflows a long: "
                + "9223372036854775807 + 1; nothing was changed",
                SharedDict.overflow("d", "hits", Long.MAX_VALUE, 1).getMessage());
        assertEquals("incr of \"q\" in shared dictionary \"d\" overflows a long: "
                + "-9223372036854775808 + (-1); nothing was changed",
                SharedDict.overflow("d", "q", Long.MIN_VALUE, -1).getMessage());
    }

    @Test
    void decodesEachType() {
        byte[] s = "héllo".getBytes(StandardCharsets.UTF_8);
        byte[] entry = new byte[s.length + 1];
        entry[0] = Shm.STRING;
        System.arraycopy(s, 0, entry, 1, s.length);
        assertEquals("héllo", SharedDict.decode(entry));

        assertArrayEquals(new byte[] {7, 8}, (byte[]) SharedDict.decode(new byte[] {Shm.BYTES, 7, 8}));

        for (long n : new long[] {0, 1, -1, Long.MAX_VALUE, Long.MIN_VALUE, 0x0102030405060708L}) {
            byte[] num = SharedDict.number(n);
            assertEquals(ByteBuffer.allocate(8).order(ByteOrder.nativeOrder()).putLong(0, n).array().length, 8);
            assertArrayEquals(ByteBuffer.allocate(8).order(ByteOrder.nativeOrder()).putLong(0, n).array(), num);
            byte[] e = new byte[9];
            e[0] = Shm.NUMBER;
            System.arraycopy(num, 0, e, 1, 8);
            assertEquals(n, SharedDict.decode(e));
        }
    }

    @Test
    void decodesKeys() {
        ByteBuffer b = ByteBuffer.allocate(64).order(ByteOrder.nativeOrder());
        for (String k : new String[] {"a", "bc", "€"}) {
            byte[] kb = k.getBytes(StandardCharsets.UTF_8);
            b.putShort((short) kb.length).put(kb);
        }
        byte[] all = new byte[b.position()];
        b.flip().get(all);
        assertEquals(List.of("a", "bc", "€"), SharedDict.decodeKeys(all));
        assertEquals(List.of(), SharedDict.decodeKeys(new byte[0]));
    }

    @Test
    void badListArgumentsAreRejectedBeforeShm() {
        assertThrows(IllegalArgumentException.class, () -> d.lpush(null, "v"));
        assertThrows(IllegalArgumentException.class, () -> d.rpush("", "v"));
        assertThrows(IllegalArgumentException.class, () -> d.lpush("k", null));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> d.rpush("k", 1.5));
        assertTrue(e.getMessage().contains("not java.lang.Double"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> d.lpush("k", new byte[4096]));
        assertTrue(e.getMessage().contains("can never fit"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> d.lpop(null));
        assertThrows(IllegalArgumentException.class, () -> d.rpop(""));
        assertThrows(IllegalArgumentException.class, () -> d.llen(""));
        assertThrows(IllegalArgumentException.class, () -> d.ttl(null));
        assertThrows(IllegalArgumentException.class, () -> d.getStale(""));
        e = assertThrows(IllegalArgumentException.class, () -> d.expire("k", -1));
        assertTrue(e.getMessage().contains("negative"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> d.flushExpired(-1));
        assertTrue(e.getMessage().contains("must not be negative"), e.getMessage());
    }

    @Test
    void decodesAStaleEntryPastItsFlag() {
        byte[] s = "old".getBytes(StandardCharsets.UTF_8);
        byte[] entry = new byte[s.length + 2];
        entry[0] = Shm.STRING;
        entry[1] = 1;
        System.arraycopy(s, 0, entry, 2, s.length);
        assertEquals("old", SharedDict.decode(entry[0], entry, 2));

        byte[] num = SharedDict.number(-42);
        byte[] n = new byte[10];
        n[0] = Shm.NUMBER;
        System.arraycopy(num, 0, n, 2, 8);
        assertEquals(-42L, SharedDict.decode(n[0], n, 2));
        assertArrayEquals(new byte[] {9}, (byte[]) SharedDict.decode(Shm.BYTES, new byte[] {Shm.BYTES, 0, 9}, 2));
    }

    @Test
    void aValueRecordsItsStaleness() {
        SharedDict.Value v = new SharedDict.Value("x", true);
        assertEquals("x", v.value());
        assertTrue(v.stale());
    }
}
