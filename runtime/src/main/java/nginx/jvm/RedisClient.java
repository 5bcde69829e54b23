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

    RedisClient(String where, String host, int port, String user, String password, int database,
                int timeout, int maxConnections) {
        this.where = where;
        this.address = new HostAndPort(host, port);
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
            throw e;                        // Redis answered with an error: a bug, not an outage
        } catch (JedisException e) {
            // a timeout, a pool whose connections are all busy for longer
            throw new RedisUnavailable("Redis at " + where + " did not answer: "
                    + message(e), e);
        }
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
