package nginx.jvm;

/**
 * The natives of nginx's shared memory (ngx_http_jvm_natives.c registers
 * them when the worker starts; ngx_http_jvm_shared.c and
 * ngx_http_jvm_topic.c do the work).
 * Callable from any thread: each takes the zone's lock for one operation
 * and never calls back into Java while it holds it.
 *
 * <p>A dictionary is named by its handle, the address of its configuration;
 * 0 is none. The constants are those of ngx_http_jvm_wire.h (NGX_HTTP_JVM_DICT_X
 * is X here).
 */
final class Shm {
    /** Value types of a dictionary entry. */
    static final int STRING = 1, BYTES = 2, NUMBER = 3;

    /** The type of a list's entry, whose values are items (lpush and the like). */
    static final int LIST = 4;

    /** Operations of {@link #dictSet}. */
    static final int SET = 0, ADD = 1, REPLACE = 2;

    /** The ends of a list, for {@link #dictPush} and {@link #dictPop}. */
    static final int LEFT = 0, RIGHT = 1;

    /** Answers of the dictionary operations. */
    static final int OK = 0, NOT_FOUND = 1, EXISTS = 2, NO_MEMORY = 3, NOT_NUMBER = 4,
            TOO_LARGE = 6;

    /** A list operation met a value that is no list. */
    static final int NOT_LIST = 7;

    /** An incr whose sum is beyond a long: nothing was changed. */
    static final int OVERFLOW = 8;

    /** Limits the C module enforces as well. */
    static final int NAME_MAX = 128, KEY_MAX = 65535;

    private Shm() {
    }

    /** The dictionary of that name (UTF-8), or 0. */
    static native long dict(byte[] name);

    /** The zone's size in bytes. */
    static native long dictCapacity(long dict);

    /** The entry's type and then its value's bytes, or null when absent or expired. */
    static native byte[] dictGet(long dict, byte[] key);

    static native int dictSet(long dict, int op, byte[] key, byte[] value, int type, long ttlMillis);

    /** The new value goes into {@code result[0]}. */
    static native int dictIncr(long dict, byte[] key, long delta, long init, long ttlMillis,
            long[] result);

    static native int dictDelete(long dict, byte[] key);

    /** At most {@code limit} keys, most recently used first: each a 2-byte length and the bytes. */
    static native byte[] dictKeys(long dict, int limit);

    /** {@code out[0]}: live entries; {@code out[1]}: entries ever evicted to make room. */
    static native void dictStats(long dict, long[] out);

    static native void dictClear(long dict);

    /**
     * The entry's type, 1 when it has expired (still there: not yet removed)
     * or else 0, and then its value's bytes; null when absent.
     */
    static native byte[] dictGetStale(long dict, byte[] key);

    /**
     * Pushes at {@link #LEFT} or {@link #RIGHT}; the list's new length goes
     * into {@code out[0]}. {@link #OK}, {@link #NOT_LIST}, {@link #NO_MEMORY}
     * or {@link #TOO_LARGE}.
     */
    static native int dictPush(long dict, int end, byte[] key, byte[] value, int type, long[] out);

    /**
     * Takes the value at one end: {@code out[0]} is its type and its bytes.
     * {@link #OK}, {@link #NOT_FOUND} (no list), {@link #NOT_LIST} or
     * {@link #NO_MEMORY}.
     */
    static native int dictPop(long dict, int end, byte[] key, byte[][] out);

    /** The list's length into {@code out[0]} (0 when absent): {@link #OK} or {@link #NOT_LIST}. */
    static native int dictLlen(long dict, byte[] key, long[] out);

    /** The ms left to live into {@code out[0]} (0: never expires): {@link #OK} or {@link #NOT_FOUND}. */
    static native int dictTtl(long dict, byte[] key, long[] out);

    /** A new time to live (0: never expires): {@link #OK} or {@link #NOT_FOUND}. */
    static native int dictExpire(long dict, byte[] key, long ttlMillis);

    /** Removes at most {@code max} expired entries (0: all); how many went. */
    static native int dictFlushExpired(long dict, int max);

    /** The topic of that name (UTF-8), or 0. */
    static native long topic(byte[] name);

    /** The largest message the topic takes, in bytes. */
    static native long topicMax(long topic);

    /** {@link #OK}, {@link #NO_MEMORY} (the ring is full: refused) or {@link #TOO_LARGE}. */
    static native int topicPublish(long topic, byte[] message, int type);

    /** {@code out[0]}: messages published; {@code out[1]}: messages refused, ring full. */
    static native void topicStats(long topic, long[] out);
}
