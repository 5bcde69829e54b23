package nginx.jvm;

import java.util.Arrays;

/**
 * A map from long keys to objects, for one thread (the event loop's tasks
 * by id): open addressing with linear probing, no entry object and no
 * boxed key per put, where a HashMap of Long makes both (48 bytes a
 * request: bench/results/2026-11-27-alloc.md). Null values are not kept.
 * As a {@link java.util.Map} it reads only (size, get, a snapshot of its
 * entries): what the tests' apps look at by reflection.
 */
final class LongMap<V> extends java.util.AbstractMap<Long, V> {
    private long[] keys;
    private Object[] values;
    private int size;

    LongMap() {
        keys = new long[16];
        values = new Object[16];
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public V get(Object key) {
        return key instanceof Long ? get(((Long) key).longValue()) : null;
    }

    @Override
    public boolean containsKey(Object key) {
        return get(key) != null;
    }

    /** A snapshot of the entries (tests, debugging): not a view. */
    @Override
    public java.util.Set<Entry<Long, V>> entrySet() {
        java.util.Map<Long, V> copy = new java.util.LinkedHashMap<>();
        for (int i = 0; i < keys.length; i++) {
            if (values[i] != null) {
                copy.put(keys[i], castValue(values[i]));
            }
        }
        return java.util.Collections.unmodifiableMap(copy).entrySet();
    }

    private int slot(long key) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & (keys.length - 1);
    }

    @SuppressWarnings("unchecked")
    V get(long key) {
        int mask = keys.length - 1;
        for (int i = slot(key); values[i] != null; i = (i + 1) & mask) {
            if (keys[i] == key) {
                return (V) values[i];
            }
        }
        return null;
    }

    /** Maps {@code key} to {@code value} (not null), answering the value it had, or null. */
    @SuppressWarnings("unchecked")
    V put(long key, V value) {
        if (value == null) {
            throw new NullPointerException("a LongMap keeps no null value");
        }
        int mask = keys.length - 1;
        int i = slot(key);
        for (; values[i] != null; i = (i + 1) & mask) {
            if (keys[i] == key) {
                V old = (V) values[i];
                values[i] = value;
                return old;
            }
        }
        keys[i] = key;
        values[i] = value;
        if (++size * 2 > keys.length) {
            grow();
        }
        return null;
    }

    /** Removes {@code key}, answering its value, or null when it had none. */
    @SuppressWarnings("unchecked")
    V remove(long key) {
        int mask = keys.length - 1;
        int i = slot(key);
        while (values[i] != null && keys[i] != key) {
            i = (i + 1) & mask;
        }
        if (values[i] == null) {
            return null;
        }
        V old = (V) values[i];
        values[i] = null;
        size--;
        // the entries after it that probed past it move back, so that every
        // entry stays reachable from its own slot without a gap
        int gap = i;
        for (int j = (i + 1) & mask; values[j] != null; j = (j + 1) & mask) {
            int home = slot(keys[j]);
            // j may move to gap when its home is not in (gap, j], cyclically
            if (gap <= j ? (home <= gap || home > j) : (home <= gap && home > j)) {
                keys[gap] = keys[j];
                values[gap] = values[j];
                values[j] = null;
                gap = j;
            }
        }
        return old;
    }

    private void grow() {
        long[] k = keys;
        Object[] v = values;
        keys = new long[k.length * 2];
        values = new Object[v.length * 2];
        size = 0;
        for (int i = 0; i < k.length; i++) {
            if (v[i] != null) {
                put(k[i], castValue(v[i]));
            }
        }
    }

    @SuppressWarnings("unchecked")
    private V castValue(Object o) {
        return (V) o;
    }

    @Override
    public void clear() {
        Arrays.fill(values, null);
        size = 0;
    }
}
