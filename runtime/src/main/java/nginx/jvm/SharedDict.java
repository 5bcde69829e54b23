package nginx.jvm;

import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A dictionary in nginx's shared memory, declared with
 * {@code jvm_shared_dict NAME SIZE;}: every worker of the server sees the
 * same entries, and a reload keeps them when the size is unchanged.
 *
 * <p>Keys are Strings (at most 65535 bytes in UTF-8). Values are Strings,
 * byte arrays or longs (what {@link #incr} counts); {@link #get} answers
 * them as it was given them. An entry may expire after a time to live
 * (milliseconds; 0 is never). A full dictionary evicts its least recently
 * used entries to make room; when even that does not, {@link #put},
 * {@link #add} and {@link #replace} answer false.
 *
 * <p>Every method may be called from any thread (the event loop, pool
 * threads, virtual threads, threads of the application's own) at once:
 * each is one operation under the zone's lock, atomic with respect to
 * every thread of every worker. They never block for long, but they do
 * take a lock shared by the workers: keep values small.
 *
 * <p>A key may hold a list instead of one value ({@link #lpush},
 * {@link #rpush}, {@link #lpop}, {@link #rpop}, {@link #llen}), as in
 * OpenResty's {@code ngx.shared.DICT}: an entry like any other for expiry,
 * eviction (the whole list goes) and {@link #delete}.
 *
 * <p>Bad arguments (an unknown dictionary, a key or a value too large, a
 * value of another type, a list where a value is wanted or the other way
 * round) throw {@link IllegalArgumentException}, and the dictionary is left
 * as it was.
 */
public final class SharedDict {
    private static final ConcurrentHashMap<String, SharedDict> dicts = new ConcurrentHashMap<>();

    private final String name;
    private final long handle;
    private final long capacity;

    /**
     * What {@link #getStale} answers: the value, and whether it has expired
     * (an expired entry stays until it is written, evicted, flushed or
     * counted by {@link #size}).
     */
    public record Value(Object value, boolean stale) {
    }

    SharedDict(String name, long handle, long capacity) {
        this.name = name;
        this.handle = handle;
        this.capacity = capacity;
    }

    /**
     * The dictionary declared with {@code jvm_shared_dict NAME}.
     *
     * @throws IllegalArgumentException when nginx.conf declares none of that name
     * @throws IllegalStateException outside an nginx worker
     */
    public static SharedDict named(String name) {
        Objects.requireNonNull(name, "name");
        SharedDict d = dicts.get(name);
        if (d != null) {
            return d;
        }
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        long handle = 0;
        if (n.length > 0 && n.length <= Shm.NAME_MAX) {
            try {
                handle = Shm.dict(n);
            } catch (UnsatisfiedLinkError e) {
                throw new IllegalStateException(
                        "shared dictionaries exist only in an nginx worker", e);
            }
        }
        if (handle == 0) {
            throw new IllegalArgumentException("no shared dictionary \"" + name
                    + "\": declare it in nginx.conf with \"jvm_shared_dict " + name + " SIZE;\"");
        }
        d = new SharedDict(name, handle, Shm.dictCapacity(handle));
        SharedDict was = dicts.putIfAbsent(name, d);
        return was != null ? was : d;
    }

    public String name() {
        return name;
    }

    /** The zone's size in bytes, as declared. */
    public long capacity() {
        return capacity;
    }

    /**
     * The value of {@code key}: a String, a byte[] or a Long, as it was put;
     * null when absent or expired.
     */
    public Object get(String key) {
        byte[] v = Shm.dictGet(handle, key(key));
        if (v == null) {
            return null;
        }
        if (v[0] == Shm.LIST) {
            throw isList(key);
        }
        return decode(v);
    }

    /**
     * The value of {@code key} even when it has expired, as long as it has
     * not been removed yet, and whether it has; null when absent. For
     * serving a stale value while a fresh one is being made; never count on
     * an expired value being there.
     *
     * @throws IllegalArgumentException when {@code key} holds a list
     */
    public Value getStale(String key) {
        byte[] v = Shm.dictGetStale(handle, key(key));
        if (v == null) {
            return null;
        }
        if (v[0] == Shm.LIST) {
            throw isList(key);
        }
        return new Value(decode(v[0], v, 2), v[1] != 0);
    }

    /** The value as a String (a number in decimal); null when absent. */
    public String getString(String key) {
        Object v = get(key);
        if (v instanceof byte[]) {
            return new String((byte[]) v, StandardCharsets.UTF_8);
        }
        return v == null ? null : v.toString();
    }

    /** The value as bytes (a String in UTF-8); null when absent. */
    public byte[] getBytes(String key) {
        Object v = get(key);
        if (v instanceof String) {
            return ((String) v).getBytes(StandardCharsets.UTF_8);
        }
        if (v instanceof Long) {
            return v.toString().getBytes(StandardCharsets.UTF_8);
        }
        return (byte[]) v;
    }

    /** Sets {@code key}, never to expire; false when there is no room. */
    public boolean put(String key, Object value) {
        return set(Shm.SET, key, value, 0);
    }

    /** Sets {@code key} for {@code ttlMillis} ms (0: never expires); false when there is no room. */
    public boolean put(String key, Object value, long ttlMillis) {
        return set(Shm.SET, key, value, ttlMillis);
    }

    /** Sets {@code key} only when it is absent (or expired); false otherwise or when there is no room. */
    public boolean add(String key, Object value) {
        return set(Shm.ADD, key, value, 0);
    }

    public boolean add(String key, Object value, long ttlMillis) {
        return set(Shm.ADD, key, value, ttlMillis);
    }

    /** Sets {@code key} only when it is present; false otherwise or when there is no room. */
    public boolean replace(String key, Object value) {
        return set(Shm.REPLACE, key, value, 0);
    }

    public boolean replace(String key, Object value, long ttlMillis) {
        return set(Shm.REPLACE, key, value, ttlMillis);
    }

    /** Adds {@code delta} to the number at {@code key} (a missing key counts as 0); the new value. */
    public long incr(String key, long delta) {
        return incr(key, delta, 0, 0);
    }

    /** As {@link #incr(String, long)}, a missing key counting as {@code initial}. */
    public long incr(String key, long delta, long initial) {
        return incr(key, delta, initial, 0);
    }

    /**
     * Adds {@code delta} to the number at {@code key}, atomically across
     * every worker and thread; the new value. A missing (or expired) key
     * counts as {@code initial} and the new entry expires after
     * {@code ttlMillis} (0: never); an existing entry keeps its expiry.
     *
     * @throws IllegalArgumentException when the value at {@code key} is not a number
     * @throws IllegalStateException when a new entry finds no room
     * @throws ArithmeticException when the sum is beyond a long (a counter
     *         never wraps around to the other sign); the entry, or its
     *         absence, is left as it was
     */
    public long incr(String key, long delta, long initial, long ttlMillis) {
        byte[] k = key(key);
        checkTtl(ttlMillis);
        long[] result = new long[1];
        int rc = Shm.dictIncr(handle, k, delta, initial, ttlMillis, result);
        switch (rc) {
            case Shm.OK:
                return result[0];
            case Shm.NOT_NUMBER:
                throw new IllegalArgumentException("the value of \"" + key
                        + "\" in shared dictionary \"" + name + "\" is not a number");
            case Shm.NO_MEMORY:
                throw new IllegalStateException("no room for \"" + key
                        + "\" in shared dictionary \"" + name + "\"");
            case Shm.OVERFLOW:
                throw overflow(name, key, result[0], delta);
            default:
                throw failed(rc, key);
        }
    }

    /** The exception of an incr of {@code from} (the value, or the initial one) by delta. */
    static ArithmeticException overflow(String dict, String key, long from, long delta) {
        return new ArithmeticException("incr of \"" + key + "\" in shared dictionary \"" + dict
                + "\" overflows a long: " + from + (delta < 0 ? " + (" + delta + ")" : " + " + delta)
                + "; nothing was changed");
    }

    /**
     * The time {@code key} has left to live, in ms: 0 when it never
     * expires, -1 when it is absent or expired.
     */
    public long ttl(String key) {
        long[] out = new long[1];
        int rc = Shm.dictTtl(handle, key(key), out);
        switch (rc) {
            case Shm.OK:
                return out[0];
            case Shm.NOT_FOUND:
                return -1;
            default:
                throw failed(rc, key);
        }
    }

    /**
     * Gives {@code key} (a value or a list) a new time to live,
     * {@code ttlMillis} from now (0: never expires); false when it is
     * absent or expired.
     */
    public boolean expire(String key, long ttlMillis) {
        byte[] k = key(key);
        checkTtl(ttlMillis);
        int rc = Shm.dictExpire(handle, k, ttlMillis);
        switch (rc) {
            case Shm.OK:
                return true;
            case Shm.NOT_FOUND:
                return false;
            default:
                throw failed(rc, key);
        }
    }

    /**
     * Removes every expired entry, least recently used first, freeing its
     * memory; how many went. It walks the whole dictionary under its lock.
     */
    public int flushExpired() {
        return flushExpired(0);
    }

    /** As {@link #flushExpired()}, at most {@code max} entries (0: all). */
    public int flushExpired(int max) {
        if (max < 0) {
            throw new IllegalArgumentException("flushExpired: max must not be negative, not " + max);
        }
        return Shm.dictFlushExpired(handle, max);
    }

    /**
     * Inserts {@code value} (a String, a byte[] or an integer) at the head
     * of the list at {@code key}, atomically; the list's new length. A
     * missing or expired key becomes a new list that never expires (see
     * {@link #expire}). 0 when even evicting the least recently used
     * entries leaves no room (as {@link #put} answers false): the list is
     * then as it was.
     *
     * @throws IllegalArgumentException when {@code key} holds a value that is not a list
     */
    public long lpush(String key, Object value) {
        return push(Shm.LEFT, key, value);
    }

    /** As {@link #lpush}, at the tail of the list. */
    public long rpush(String key, Object value) {
        return push(Shm.RIGHT, key, value);
    }

    /**
     * Removes and answers the value at the head of the list at {@code key},
     * as it was pushed; null when there is no list (a list whose last value
     * is taken is removed).
     *
     * @throws IllegalArgumentException when {@code key} holds a value that is not a list
     */
    public Object lpop(String key) {
        return pop(Shm.LEFT, key);
    }

    /** As {@link #lpop}, at the tail of the list. */
    public Object rpop(String key) {
        return pop(Shm.RIGHT, key);
    }

    /**
     * The number of values in the list at {@code key}; 0 when absent.
     *
     * @throws IllegalArgumentException when {@code key} holds a value that is not a list
     */
    public long llen(String key) {
        long[] out = new long[1];
        int rc = Shm.dictLlen(handle, key(key), out);
        switch (rc) {
            case Shm.OK:
                return out[0];
            case Shm.NOT_LIST:
                throw notList(key);
            default:
                throw failed(rc, key);
        }
    }

    /** Removes {@code key}; false when it was absent or expired. */
    public boolean delete(String key) {
        return Shm.dictDelete(handle, key(key)) == Shm.OK;
    }

    /** At most {@code limit} live keys, most recently used first. */
    public List<String> keys(int limit) {
        if (limit <= 0) {
            throw new IllegalArgumentException("keys: limit must be positive, not " + limit);
        }
        byte[] b = Shm.dictKeys(handle, limit);
        if (b == null) {
            throw new OutOfMemoryError("keys of shared dictionary \"" + name + "\"");
        }
        return decodeKeys(b);
    }

    /** Live entries; it walks the whole dictionary (and drops expired entries on the way). */
    public int size() {
        long[] out = new long[2];
        Shm.dictStats(handle, out);
        return (int) out[0];
    }

    /** Entries ever evicted, by any worker, to make room for others. */
    public long evictions() {
        long[] out = new long[2];
        Shm.dictStats(handle, out);
        return out[1];
    }

    /** Removes every entry. */
    public void clear() {
        Shm.dictClear(handle);
    }

    @Override
    public String toString() {
        return "SharedDict[" + name + "]";
    }

    private boolean set(int op, String key, Object value, long ttlMillis) {
        byte[] k = key(key);
        checkTtl(ttlMillis);
        int type = type(value);
        byte[] v = bytes(value);
        if ((long) v.length + k.length >= capacity) {
            throw tooLarge(key, v.length);
        }
        int rc = Shm.dictSet(handle, op, k, v, type, ttlMillis);
        switch (rc) {
            case Shm.OK:
                return true;
            case Shm.EXISTS:
            case Shm.NOT_FOUND:
            case Shm.NO_MEMORY:
                return false;
            case Shm.TOO_LARGE:
                throw tooLarge(key, v.length);
            default:
                throw failed(rc, key);
        }
    }

    private long push(int end, String key, Object value) {
        byte[] k = key(key);
        int type = type(value);
        byte[] v = bytes(value);
        if ((long) v.length + k.length >= capacity) {
            throw tooLarge(key, v.length);
        }
        long[] out = new long[1];
        int rc = Shm.dictPush(handle, end, k, v, type, out);
        switch (rc) {
            case Shm.OK:
                return out[0];
            case Shm.NO_MEMORY:
                return 0;
            case Shm.NOT_LIST:
                throw notList(key);
            case Shm.TOO_LARGE:
                throw tooLarge(key, v.length);
            default:
                throw failed(rc, key);
        }
    }

    private Object pop(int end, String key) {
        byte[][] out = new byte[1][];
        int rc = Shm.dictPop(handle, end, key(key), out);
        switch (rc) {
            case Shm.OK:
                return decode(out[0]);
            case Shm.NOT_FOUND:
                return null;
            case Shm.NOT_LIST:
                throw notList(key);
            case Shm.NO_MEMORY:
                throw new OutOfMemoryError("a value of \"" + key + "\" in shared dictionary \""
                        + name + "\"");
            default:
                throw failed(rc, key);
        }
    }

    /** The type a value is kept as. */
    private int type(Object value) {
        if (value instanceof String) {
            return Shm.STRING;
        }
        if (value instanceof byte[]) {
            return Shm.BYTES;
        }
        if (value instanceof Long || value instanceof Integer
                || value instanceof Short || value instanceof Byte) {
            return Shm.NUMBER;
        }
        if (value == null) {
            throw new IllegalArgumentException("shared dictionary \"" + name
                    + "\": null is not a value (delete the key instead)");
        }
        throw new IllegalArgumentException("shared dictionary \"" + name
                + "\": a value is a String, a byte[] or an integer, not "
                + value.getClass().getName());
    }

    /** The bytes of a value {@link #type} accepted. */
    private static byte[] bytes(Object value) {
        if (value instanceof String) {
            return ((String) value).getBytes(StandardCharsets.UTF_8);
        }
        if (value instanceof byte[]) {
            return (byte[]) value;
        }
        return number(((Number) value).longValue());
    }

    private IllegalArgumentException notList(String key) {
        return new IllegalArgumentException("the value of \"" + key
                + "\" in shared dictionary \"" + name + "\" is not a list");
    }

    private IllegalArgumentException isList(String key) {
        return new IllegalArgumentException("the value of \"" + key
                + "\" in shared dictionary \"" + name + "\" is a list (read it with lpop, rpop or llen)");
    }

    private byte[] key(String key) {
        if (key == null) {
            throw new IllegalArgumentException("shared dictionary \"" + name + "\": the key is null");
        }
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        if (k.length == 0) {
            throw new IllegalArgumentException("shared dictionary \"" + name + "\": the key is empty");
        }
        if (k.length > Shm.KEY_MAX) {
            throw new IllegalArgumentException("shared dictionary \"" + name + "\": a key of "
                    + k.length + " bytes is too large (at most " + Shm.KEY_MAX + ")");
        }
        return k;
    }

    private void checkTtl(long ttlMillis) {
        if (ttlMillis < 0) {
            throw new IllegalArgumentException("shared dictionary \"" + name
                    + "\": the time to live is negative (" + ttlMillis + " ms)");
        }
    }

    private IllegalArgumentException tooLarge(String key, int length) {
        return new IllegalArgumentException("shared dictionary \"" + name + "\": a value of "
                + length + " bytes for \"" + key + "\" can never fit in its " + capacity + " bytes");
    }

    private IllegalStateException failed(int rc, String key) {
        return new IllegalStateException("shared dictionary \"" + name + "\": operation on \""
                + key + "\" failed (code " + rc + ")");
    }

    private static final boolean LITTLE = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    /** A long as the C module keeps it: 8 bytes, native order. */
    static byte[] number(long n) {
        byte[] b = new byte[8];
        for (int i = 0; i < 8; i++) {
            b[LITTLE ? i : 7 - i] = (byte) (n >>> (8 * i));
        }
        return b;
    }

    /** An entry as {@link Shm#dictGet} answers it: the type, then the bytes. */
    static Object decode(byte[] v) {
        return decode(v[0], v, 1);
    }

    /** A value of that type, its bytes from {@code from} to the end of {@code v}. */
    static Object decode(int type, byte[] v, int from) {
        switch (type) {
            case Shm.STRING:
                return new String(v, from, v.length - from, StandardCharsets.UTF_8);
            case Shm.NUMBER: {
                long n = 0;
                for (int i = 0; i < 8; i++) {
                    n |= (v[from + (LITTLE ? i : 7 - i)] & 0xffL) << (8 * i);
                }
                return n;
            }
            default:
                return Arrays.copyOfRange(v, from, v.length);
        }
    }

    /** Keys as {@link Shm#dictKeys} answers them: each a 2-byte length (native order) and the bytes. */
    static List<String> decodeKeys(byte[] b) {
        List<String> keys = new ArrayList<>();
        for (int at = 0; at + 2 <= b.length; ) {
            int len = LITTLE ? (b[at] & 0xff) | (b[at + 1] & 0xff) << 8
                    : (b[at] & 0xff) << 8 | (b[at + 1] & 0xff);
            keys.add(new String(b, at + 2, len, StandardCharsets.UTF_8));
            at += 2 + len;
        }
        return keys;
    }
}
