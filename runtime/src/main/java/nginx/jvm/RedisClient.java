package nginx.jvm;

import java.time.Duration;

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
 * What {@link Redis} does with Jedis, apart, so that {@code Redis} (and the
 * Clojure namespaces that name it) link without Jedis on the class path:
 * this class is loaded only when a connection pool is made.
 */
final class RedisClient {
    private final String where;
    private final HostAndPort address;
    private final JedisClientConfig config;
    private final JedisPooled pool;
    private final String host;
    private final int port;
    private final String user;
    private final String password;
    private final int database;
    private final int timeout;
    /** How long a stream's XREAD waits for entries, in ms. */
    static final int BLOCK = 1000;

    RedisClient(String where, String host, int port, String user, String password, int database,
                int timeout, int maxConnections) {
        this.where = where;
        this.address = new HostAndPort(host, port);
        this.host = host;
        this.port = port;
        this.user = user;
        this.password = password;
        this.database = database;
        this.timeout = timeout;
        DefaultJedisClientConfig.Builder b = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis(timeout).socketTimeoutMillis(timeout)
                .clientName("nginx-jvm").database(database);
        if (user != null) {
            b.user(user);
        }
        if (password != null) {
            b.password(password);
        }
        this.config = b.build();
        ConnectionPoolConfig pc = new ConnectionPoolConfig();
        pc.setMaxTotal(maxConnections);
        pc.setMaxIdle(maxConnections);
        pc.setMinIdle(0);
        pc.setMaxWait(Duration.ofMillis(timeout));     // a busy pool waits no longer
        pc.setBlockWhenExhausted(true);
        pc.setJmxEnabled(false);
        this.pool = new JedisPooled(pc, address, config);
    }

    byte[] get(byte[] key, long ttlMs) {
        return call(() -> ttlMs > 0 ? pool.getEx(key, GetExParams.getExParams().px(ttlMs))
                                    : pool.get(key));
    }

    void set(byte[] key, byte[] value, long ttlMs) {
        call(() -> ttlMs > 0 ? pool.set(key, value, SetParams.setParams().px(ttlMs))
                             : pool.set(key, value));
    }

    boolean delete(byte[] key) {
        return call(() -> pool.del(key)) > 0;
    }

    long ttl(byte[] key) {
        return call(() -> pool.pttl(key));
    }

    long publish(byte[] channel, byte[] message) {
        return call(() -> pool.publish(channel, message));
    }

    /** A connection of its own (for a subscription), not from the pool; the caller closes it. */
    Jedis dedicated() {
        return new Jedis(address, config);
    }

    /** The same, with another command timeout (a blocking XREAD waits longer). */
    Jedis dedicated(int soTimeout) {
        DefaultJedisClientConfig.Builder b = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis(timeout).socketTimeoutMillis(soTimeout)
                .clientName("nginx-jvm").database(database);
        if (user != null) {
            b.user(user);
        }
        if (password != null) {
            b.password(password);
        }
        return new Jedis(address, b.build());
    }

    /** Appends an envelope to a stream (bytes carried 1:1 as ISO-8859-1 characters). */
    void xadd(String key, byte[] value, long maxLen) {
        String v = new String(value, java.nio.charset.StandardCharsets.ISO_8859_1);
        call(() -> pool.xadd(key, redis.clients.jedis.params.XAddParams.xAddParams()
                                 .maxLen(maxLen).approximateTrimming(),
                             java.util.Map.of("m", v)));
    }

    /**
     * Reads a stream after {@code afterId} (blocking up to BLOCK ms) on a
     * dedicated connection, hands each entry to {@code each}; answers the
     * last id read, or null when nothing came.
     */
    String xread(Jedis j, String key, String afterId,
                 java.util.function.Consumer<byte[]> each) {
        redis.clients.jedis.StreamEntryID from = "$".equals(afterId)
                ? redis.clients.jedis.StreamEntryID.XREAD_NEW_ENTRY
                : new redis.clients.jedis.StreamEntryID(afterId);
        java.util.List<java.util.Map.Entry<String, java.util.List<redis.clients.jedis.resps.StreamEntry>>> got =
                j.xread(redis.clients.jedis.params.XReadParams.xReadParams().block(BLOCK).count(256),
                        java.util.Map.of(key, from));
        String last = null;
        if (got == null) {
            return null;
        }
        for (java.util.Map.Entry<String, java.util.List<redis.clients.jedis.resps.StreamEntry>> e : got) {
            for (redis.clients.jedis.resps.StreamEntry entry : e.getValue()) {
                String v = entry.getFields().get("m");
                if (v != null) {
                    each.accept(v.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
                }
                last = entry.getID().toString();
            }
        }
        return last;
    }

    void close() {
        pool.close();
    }

    private interface Command<T> {
        T run();
    }

    /** One command; a connection broken by a Redis restart is replaced and the command tried again. */
    private <T> T call(Command<T> c) {
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
            throw new RedisUnavailable("Redis at " + where + " is unavailable: "
                    + message(e), e);
        } catch (JedisDataException e) {
            if (notReady(e)) {
                throw new RedisUnavailable("Redis at " + where + " is unavailable: "
                        + message(e), e);
            }
            throw e;                        // Redis answered with an error: a bug, not an outage
        } catch (JedisException e) {
            // a timeout, a pool whose connections are all busy for longer
            throw new RedisUnavailable("Redis at " + where + " did not answer: "
                    + message(e), e);
        }
    }

    /**
     * The errors of a Redis that is there but cannot serve yet: LOADING
     * (reading its append-only file or snapshot after a restart, seconds
     * for a large data set), BUSY (a script running), MASTERDOWN (a replica
     * cut from its primary), TRYAGAIN and CLUSTERDOWN (Redis Cluster
     * moving slots or missing a shard). An outage, a 503, not a bug.
     */
    static boolean notReady(JedisDataException e) {
        String m = e.getMessage();
        if (m == null) {
            return false;
        }
        for (String code : new String[] {"LOADING ", "BUSY ", "MASTERDOWN ", "TRYAGAIN ",
                                         "CLUSTERDOWN "}) {
            if (m.startsWith(code)) {
                return true;
            }
        }
        return false;
    }

    /** The root cause, in a few words, for one line of the error log. */
    static String message(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String m = root.getMessage();
        return root.getClass().getSimpleName() + (m == null ? "" : ": " + m);
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
}
