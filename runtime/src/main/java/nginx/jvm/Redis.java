package nginx.jvm;

import java.net.URI;
import java.time.Duration;
import java.util.Objects;

import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.params.GetExParams;
import redis.clients.jedis.params.SetParams;

/**
 * A Redis server, for the Redis session store ({@code nginx.jvm.session})
 * and the topic bridge ({@link RedisBridge}): a pool of connections of the
 * worker, with a connect timeout and a command timeout, so that a Redis that
 * is down or hangs costs a bounded time and a {@link Unavailable}, never a
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
    /** Redis could not be reached, or did not answer within the timeout. */
    public static final class Unavailable extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Unavailable(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** The default connect and command timeout, in milliseconds. */
    public static final int DEFAULT_TIMEOUT = 1000;

    private final String where;
    private final HostAndPort address;
    private final JedisClientConfig config;
    private final JedisPooled pool;

    private Redis(String where, HostAndPort address, JedisClientConfig config, int maxConnections,
                  int timeout) {
        this.where = where;
        this.address = address;
        this.config = config;
        ConnectionPoolConfig pc = new ConnectionPoolConfig();
        pc.setMaxTotal(maxConnections);
        pc.setMaxIdle(maxConnections);
        pc.setMinIdle(0);
        pc.setMaxWait(Duration.ofMillis(timeout));     // a full pool waits no longer
        pc.setBlockWhenExhausted(true);
        pc.setJmxEnabled(false);
        this.pool = new JedisPooled(pc, address, config);
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
        DefaultJedisClientConfig.Builder b = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis(timeoutMs).socketTimeoutMillis(timeoutMs)
                .clientName("nginx-jvm");
        String info = u.getRawUserInfo();
        if (info != null) {
            int colon = info.indexOf(':');
            String user = colon < 0 ? null : info.substring(0, colon);
            String password = colon < 0 ? info : info.substring(colon + 1);
            if (user != null && !user.isEmpty()) {
                b.user(decode(user));
            }
            b.password(decode(password));
        }
        String path = u.getPath();
        if (path != null && path.length() > 1) {
            try {
                b.database(Integer.parseInt(path.substring(1)));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("not a database number in " + uri);
            }
        }
        String where = u.getHost() + ":" + port;
        return new Redis(where, new HostAndPort(u.getHost(), port), b.build(), maxConnections,
                         timeoutMs);
    }

    private static String decode(String s) {
        return java.net.URLDecoder.decode(s, java.nio.charset.StandardCharsets.UTF_8);
    }

    static void requireJedis() {
        try {
            Class.forName("redis.clients.jedis.JedisPooled", false, Redis.class.getClassLoader());
        } catch (ClassNotFoundException e) {
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
        return call(() -> ttlMs > 0 ? pool.getEx(key, GetExParams.getExParams().px(ttlMs))
                                    : pool.get(key));
    }

    /** Sets {@code key}; a positive {@code ttlMs} makes it expire. */
    public void set(byte[] key, byte[] value, long ttlMs) {
        call(() -> ttlMs > 0 ? pool.set(key, value, SetParams.setParams().px(ttlMs))
                             : pool.set(key, value));
    }

    /** Removes {@code key}: whether it was there. */
    public boolean delete(byte[] key) {
        return call(() -> pool.del(key)) > 0;
    }

    /** The time to live of {@code key} in ms: -1 without one, -2 when absent. */
    public long ttl(byte[] key) {
        return call(() -> pool.pttl(key));
    }

    /** Publishes on a pub/sub channel: how many subscribers got it. */
    public long publish(byte[] channel, byte[] message) {
        return call(() -> pool.publish(channel, message));
    }

    /** A connection of its own (for a subscription), not from the pool; the caller closes it. */
    Jedis dedicated() {
        return new Jedis(address, config);
    }

    private interface Command<T> {
        T run();
    }

    /** One command, tried again once on a broken connection (a Redis that restarted). */
    private <T> T call(Command<T> c) {
        if (LoopCalls.onLoop()) {
            throw new IllegalStateException("a Redis call would block the event loop:"
                    + " call Redis from a jvm_mode pool or virtual location, or a thread of your own");
        }
        try {
            for (int tries = 1; ; tries++) {
                try {
                    return c.run();
                } catch (JedisConnectionException e) {
                    // a connection the pool kept from before Redis restarted
                    // breaks at its first use, and the pool drops it: try
                    // again with another, unless Redis itself is unreachable
                    if (tries > 3 || unreachable(e)) {
                        throw e;
                    }
                }
            }
        } catch (JedisConnectionException e) {
            throw new Unavailable("Redis at " + where + " is unavailable: " + message(e), e);
        } catch (JedisDataException e) {
            throw e;                        // Redis answered with an error: a bug, not an outage
        } catch (JedisException e) {
            // a timeout, a pool whose connections are all busy for longer
            throw new Unavailable("Redis at " + where + " did not answer: " + message(e), e);
        }
    }

    /** A connect that failed, or a read that timed out: trying again costs as much. */
    private static boolean unreachable(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof java.net.ConnectException || t instanceof java.net.SocketTimeoutException
                    || (t.getMessage() != null && t.getMessage().startsWith("Failed to connect"))) {
                return true;
            }
        }
        return false;
    }

    static String message(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String m = root.getMessage();
        return root.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    @Override
    public void close() {
        pool.close();
    }

    @Override
    public String toString() {
        return "Redis[" + where + "]";
    }
}
