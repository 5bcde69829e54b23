package nginx.jvm;

import java.net.URI;
import java.util.Objects;


/**
 * A Redis server, for the Redis session store ({@code nginx.jvm.session})
 * and the topic bridge ({@link RedisBridge}): a pool of connections of the
 * worker, with a connect timeout and a command timeout, so that a Redis that
 * is down or hangs costs a bounded time and a {@link RedisUnavailable}, never a
 * hung thread.
 *
 * <p>Jedis (build/redis-lib, runtime/redis/pom.xml) must be on the class
 * path; the runtime works without it as long as nothing calls this class.
 *
 * <p>Every call blocks its thread for up to the timeout: it throws
 * {@code IllegalStateException} on the event loop ({@code jvm_mode loop}),
 * which must never wait for a network. Call it from {@code jvm_mode pool} or
 * {@code virtual} locations, or from threads of the application's own.
 */
public final class Redis implements AutoCloseable {
    /** The default connect and command timeout, in milliseconds. */
    public static final int DEFAULT_TIMEOUT = 1000;

    private final String where;
    /** Every use of Jedis is in RedisClient, so that this class links without it. */
    private final RedisClient client;

    private Redis(String where, RedisClient client) {
        this.where = where;
        this.client = client;
    }

    /** {@link #connect(String, int, int)} with a 1 s timeout and 16 connections. */
    public static Redis connect(String uri) {
        return connect(uri, DEFAULT_TIMEOUT, 16);
    }

    /**
     * A pool of at most {@code maxConnections} connections to the server
     * {@code redis://[[user]:password@]host[:port][/db]}; connections are made
     * when first wanted, so this never fails for a server that is down.
     *
     * @throws IllegalArgumentException for a URI that is not redis://
     * @throws IllegalStateException when Jedis is not on the class path
     */
    public static Redis connect(String uri, int timeoutMs, int maxConnections) {
        Objects.requireNonNull(uri, "uri");
        if (timeoutMs <= 0 || maxConnections <= 0) {
            throw new IllegalArgumentException("the timeout and the connections must be positive");
        }
        requireJedis();
        URI u;
        try {
            u = URI.create(uri);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("not a redis:// URI: " + uri, e);
        }
        if (!"redis".equals(u.getScheme()) || u.getHost() == null) {
            throw new IllegalArgumentException("not a redis://host[:port][/db] URI: " + uri);
        }
        int port = u.getPort() < 0 ? 6379 : u.getPort();
        String user = null;
        String password = null;
        String info = u.getRawUserInfo();
        if (info != null) {
            int colon = info.indexOf(':');
            user = colon < 0 ? null : decode(info.substring(0, colon));
            password = decode(colon < 0 ? info : info.substring(colon + 1));
            if (user != null && user.isEmpty()) {
                user = null;
            }
        }
        int database = 0;
        String path = u.getPath();
        if (path != null && path.length() > 1) {
            try {
                database = Integer.parseInt(path.substring(1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("not a database number in " + uri);
            }
        }
        String where = u.getHost() + ":" + port;
        return new Redis(where, new RedisClient(where, u.getHost(), port, user, password, database,
                                                timeoutMs, maxConnections));
    }

    /** Whether Jedis is on the class path. */
    public static boolean available() {
        try {
            Class.forName("redis.clients.jedis.JedisPooled", false, Redis.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    private static String decode(String s) {
        return java.net.URLDecoder.decode(s, java.nio.charset.StandardCharsets.UTF_8);
    }

    static void requireJedis() {
        if (!available()) {
            throw new IllegalStateException("the Redis client (Jedis) is not on the class path:"
                    + " add build/redis-lib/* (make redis-deps) to jvm_classpath");
        }
    }

    /** host:port, for messages. */
    public String where() {
        return where;
    }

    /** The value of {@code key}, or null; a positive {@code ttlMs} gives it that TTL again. */
    public byte[] get(byte[] key, long ttlMs) {
        onLoopRefused();
        return client.get(key, ttlMs);
    }

    /** Sets {@code key}; a positive {@code ttlMs} makes it expire. */
    public void set(byte[] key, byte[] value, long ttlMs) {
        onLoopRefused();
        client.set(key, value, ttlMs);
    }

    /** Removes {@code key}: whether it was there. */
    public boolean delete(byte[] key) {
        onLoopRefused();
        return client.delete(key);
    }

    /** The time to live of {@code key} in ms: -1 without one, -2 when absent. */
    public long ttl(byte[] key) {
        onLoopRefused();
        return client.ttl(key);
    }

    /** Publishes on a pub/sub channel: how many subscribers got it. */
    public long publish(byte[] channel, byte[] message) {
        onLoopRefused();
        return client.publish(channel, message);
    }

    /** The client, for the bridge's subscription. */
    RedisClient client() {
        return client;
    }

    private static void onLoopRefused() {
        LoopCalls.refuseOnLoop("a Redis call",
                "call Redis from a jvm_mode pool or virtual location, or a thread of your own");
    }

    @Override
    public void close() {
        client.close();
    }

    @Override
    public String toString() {
        return "Redis[" + where + "]";
    }
}
