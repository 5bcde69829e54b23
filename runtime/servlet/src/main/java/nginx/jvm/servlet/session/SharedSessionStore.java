package nginx.jvm.servlet.session;

import java.nio.charset.StandardCharsets;
import nginx.jvm.Redis;
import nginx.jvm.RedisUnavailable;
import nginx.jvm.SharedDict;

/**
 * Where the shared sessions live: each session one entry, its key the
 * store's prefix and the session id, its value what {@link SharedSessionCodec}
 * writes, its time to live the session's max inactive interval (given again
 * at each read: sliding expiry, as Tomcat's). Every worker (and, for Redis,
 * every host) reads and writes the same entries. Engine-neutral: Tomcat's
 * manager (nginx.jvm.servlet.tomcat.SharedSessionManager) and Jetty's
 * SessionDataStore (nginx.jvm.servlet.jetty.SharedSessionDataStore) write
 * through it, each its own format.
 */
public abstract class SharedSessionStore {
    /** The system property that chooses the store. */
    public static final String PROPERTY = "nginx.jvm.servlet.sessions";
    /** The prefix of the store's keys (default "jsession:" and the context's path). */
    public static final String PREFIX = "nginx.jvm.servlet.sessions.prefix";
    /** The dictionary used when the property is unset, if nginx.conf declares it. */
    public static final String DEFAULT_DICT = "sessions";

    public final String prefix;

    SharedSessionStore(String prefix) {
        this.prefix = prefix;
    }

    /**
     * The entry of {@code id} and what was left of its time to live, or
     * null; its time to live starts again ({@code ttlMillis}, 0: never expires).
     */
    public abstract Loaded load(String id, long ttlMillis);

    /** Gives the entry of {@code id} that time to live from now. */
    public abstract void touch(String id, long ttlMillis);

    /** The entry of {@code id} without touching its time to live, or null. */
    public abstract byte[] peek(String id);

    /** Writes the entry; throws {@link SharedSessionException} when the store has no room. */
    public abstract void put(String id, byte[] value, long ttlMillis);

    public abstract void delete(String id);

    /** A request's changes to a stored session, merged into the entry as it is. */
    public interface Merge {
        /** The entry with the changes made, from {@code current}; null to leave it (it is gone). */
        byte[] apply(byte[] current);

        /** Whether {@code current}, read after the write, has lost changes made (a stale write of another). */
        boolean undone(byte[] current);
    }

    /**
     * Merges a request's changes into the entry. Without a lock shared by
     * the workers, a read then a write, then a read that checks no other
     * request's write (made from what it read before ours) undid them, and
     * then again, at most three times.
     */
    public void update(String id, Merge merge, long ttlMillis) {
        byte[] current = peek(id);
        for (int i = 0; i < 3; i++) {
            byte[] next = merge.apply(current);
            if (next == null) {
                return;
            }
            put(id, next, ttlMillis);
            current = peek(id);
            if (current == null || !merge.undone(current)) {
                return;
            }
        }
    }

    /**
     * The store {@code spec} (-Dnginx.jvm.servlet.sessions) names for the
     * context at {@code path}, or null for the engine's own per-worker
     * sessions (unset and no dictionary "sessions", or "memory").
     *
     * @throws IllegalArgumentException for a spec that names nothing usable:
     *         the engine does not start, and says why
     */
    public static SharedSessionStore named(String spec, String path) {
        String prefix = System.getProperty(PREFIX, "jsession:" + path + ":");
        if (spec == null || spec.isBlank()) {
            try {
                return new Dict(SharedDict.named(DEFAULT_DICT), prefix);
            } catch (IllegalArgumentException | IllegalStateException e) {
                // no such dictionary (or not in a worker): per worker, said when it matters
                return null;
            }
        }
        spec = spec.trim();
        if (spec.equals("memory")) {
            return null;
        }
        if (spec.startsWith("dict:")) {
            String name = spec.substring(5);
            try {
                return new Dict(SharedDict.named(name), prefix);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("-D" + PROPERTY + "=" + spec + ": " + e.getMessage()
                        + " (launcher: --shared-dict " + name + ":10m)", e);
            } catch (IllegalStateException e) {
                // not in an nginx worker (a JVM that only loads the application): no requests to serve
                return null;
            }
        }
        if (spec.startsWith("redis://")) {
            String keys = System.getProperty(PREFIX, "nginx-jvm:jsession:" + path + ":");
            int timeout = Integer.getInteger(PROPERTY + ".timeout", Redis.DEFAULT_TIMEOUT);
            try {
                return new RedisStore(Redis.connect(spec, timeout, 16), keys);
            } catch (IllegalArgumentException | IllegalStateException e) {
                throw new IllegalArgumentException("-D" + PROPERTY + ": " + e.getMessage(), e);
            }
        }
        throw new IllegalArgumentException("-D" + PROPERTY + "=" + spec
                + ": not a session store; dict:NAME (a jvm_shared_dict), redis://HOST:PORT or memory");
    }

    /** For messages: the dictionary, or Redis's address. */
    public abstract String describe();

    /**
     * An entry as read, with what was left of its time to live in ms when
     * the store knows it (-1 when it does not, 0 when it never expires).
     */
    public record Loaded(byte[] value, long ttlLeft) {
    }

    // --- a shared dictionary: every worker of one nginx --------------------

    public static final class Dict extends SharedSessionStore {
        private final SharedDict dict;
        private final String lockPrefix;

        public Dict(SharedDict dict, String prefix) {
            super(prefix);
            this.dict = dict;
            this.lockPrefix = "lock:" + prefix;
        }

        @Override
        public Loaded load(String id, long ttlMillis) {
            String key = prefix + id;
            long left = dict.ttl(key);
            if (left < 0) {
                return null;
            }
            byte[] v = dict.getBytes(key);
            if (v == null) {
                return null;
            }
            dict.expire(key, ttlMillis);
            return new Loaded(v, left);
        }

        @Override
        public void touch(String id, long ttlMillis) {
            dict.expire(prefix + id, ttlMillis);
        }

        @Override
        public byte[] peek(String id) {
            return dict.getBytes(prefix + id);
        }

        /**
         * A session over a quarter of the dictionary is refused before it
         * is written: to make room for it the dictionary would evict most
         * other sessions, and when even that is not enough, the write fails
         * after the evictions.
         */
        @Override
        public void put(String id, byte[] value, long ttlMillis) {
            if (value.length > dict.capacity() / 4) {
                throw new SharedSessionException("a session of " + value.length + " bytes is over a quarter"
                        + " of the shared dictionary \"" + dict.name() + "\" (" + dict.capacity()
                        + " bytes), whose other sessions would be evicted to make room: declare it larger"
                        + " (jvm_shared_dict " + dict.name() + " SIZE) or keep less in the session", null);
            }
            boolean done;
            try {
                done = dict.put(prefix + id, value, ttlMillis);
            } catch (IllegalArgumentException e) {
                // a value that can never fit in the zone
                throw new SharedSessionException("a session of " + value.length
                        + " bytes can never fit in the shared dictionary \"" + dict.name() + "\" ("
                        + dict.capacity() + " bytes): declare it larger (jvm_shared_dict "
                        + dict.name() + " SIZE) or keep less in the session", e);
            }
            if (!done) {
                throw new SharedSessionException("the shared dictionary \"" + dict.name() + "\" ("
                        + dict.capacity() + " bytes) has no room for a session of " + value.length
                        + " bytes, even after evicting the least recently used entries:"
                        + " declare it larger (jvm_shared_dict " + dict.name() + " SIZE)", null);
            }
        }

        @Override
        public void delete(String id) {
            dict.delete(prefix + id);
        }

        /**
         * Under a lock of the session's own in the dictionary (an entry
         * added only when absent, which lives 2 s at most should its holder
         * die): two workers' changes to different attributes of one session
         * at the same moment are both kept. A lock not had within 200 ms is
         * gone without: the write still happens, checked as Redis's are.
         */
        @Override
        public void update(String id, Merge merge, long ttlMillis) {
            String lock = lockPrefix + id;
            String token = Long.toString(ProcessHandle.current().pid()) + ":" + Thread.currentThread().getId();
            boolean locked = false;
            long deadline = System.nanoTime() + 200_000_000L;
            try {
                while (!(locked = dict.add(lock, token, 2_000)) && System.nanoTime() < deadline) {
                    Thread.sleep(0, 200_000);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                // no room even for the lock: the write below says so if it fails too
            }
            try {
                if (locked) {
                    byte[] next = merge.apply(peek(id));
                    if (next != null) {
                        put(id, next, ttlMillis);
                    }
                } else {
                    super.update(id, merge, ttlMillis);
                }
            } finally {
                if (locked) {
                    dict.delete(lock);
                }
            }
        }

        @Override
        public String describe() {
            return "shared dictionary \"" + dict.name() + "\"";
        }
    }

    // --- Redis: every host using it ----------------------------------------

    public static final class RedisStore extends SharedSessionStore {
        private final Redis redis;

        public RedisStore(Redis redis, String prefix) {
            super(prefix);
            this.redis = redis;
        }

        private byte[] key(String id) {
            return (prefix + id).getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public Loaded load(String id, long ttlMillis) {
            byte[] v = unavailable(() -> redis.get(key(id), ttlMillis));
            return v == null ? null : new Loaded(v, -1);
        }

        @Override
        public void touch(String id, long ttlMillis) {
            if (ttlMillis > 0) {
                unavailable(() -> redis.get(key(id), ttlMillis));
            } else {
                // no PERSIST in nginx.jvm.Redis: written again without a time to live
                byte[] v = peek(id);
                if (v != null) {
                    put(id, v, 0);
                }
            }
        }

        @Override
        public byte[] peek(String id) {
            return unavailable(() -> redis.get(key(id), 0));
        }

        @Override
        public void put(String id, byte[] value, long ttlMillis) {
            unavailable(() -> {
                redis.set(key(id), value, ttlMillis);
                return null;
            });
        }

        @Override
        public void delete(String id) {
            unavailable(() -> redis.delete(key(id)));
        }

        @Override
        public String describe() {
            return "Redis at " + redis.where();
        }

        private interface Call<T> {
            T run();
        }

        private <T> T unavailable(Call<T> call) {
            try {
                return call.run();
            } catch (RedisUnavailable e) {
                throw new SharedSessionException.Unavailable(e.getMessage(), e);
            }
        }
    }
}
