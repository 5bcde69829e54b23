package nginx.jvm;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import redis.clients.jedis.BinaryJedisPubSub;
import redis.clients.jedis.Jedis;

/**
 * Carries a local topic ({@code jvm_topic}) over a Redis pub/sub channel, so
 * that the topic spans several hosts: what any worker publishes on the topic
 * reaches the topic of every other host whose bridge listens on the channel,
 * and what they publish reaches this host's.
 *
 * <p>Start it in every worker ({@code jvm_init}); the workers of a host
 * elect one of them, through a lease in a shared dictionary, which alone
 * forwards the topic's messages to Redis and alone subscribes to the
 * channel, publishing what comes from other hosts on the local topic: each
 * message reaches each worker once, through the topic, whatever the number of
 * workers. Every message crosses Redis in an envelope naming the host it
 * comes from (an id kept in the dictionary), so a host ignores its own
 * messages coming back. Messages the elected worker injects into the topic
 * are not forwarded again.
 *
 * <p>Over a channel ({@link #start}), delivery is Redis pub/sub's: at most
 * once. A message is lost when Redis is down or restarting, while the lease
 * passes to another worker (up to 3 s after the elected worker dies), or
 * when a queue or a ring is full. Over a stream ({@link #startStream}), at
 * least once from the host's last-read id (docs/scale-out.md). The
 * bridge reconnects by itself (after 100 ms, doubling up to 5 s), and logs the
 * loss of Redis once and its return once.
 */
public final class RedisBridge implements AutoCloseable {
    static final int LEASE_TTL = 3000;
    static final int TICK = 500;
    static final int MAX_BACKOFF = 5000;
    static final int QUEUE = 4096;
    private static final byte[] MAGIC = {'N', 'J', 'B', '1'};
    private static final String LOG = "nginx.jvm.RedisBridge";

    private final Topic topic;
    private final SharedDict dict;
    private final Redis redis;
    private final String channel;
    private final byte[] channelBytes;
    /** A Redis Stream of that name instead of the pub/sub channel: at least once. */
    private final boolean stream;
    private final String lastKey;
    private final String leaseKey;
    private final String hostKey;
    private final String me;
    private final byte[] origin;
    private final BlockingQueue<byte[]> outbox = new ArrayBlockingQueue<>(QUEUE);
    /** Messages this worker put on the topic from Redis, not yet seen come back. */
    private final ConcurrentHashMap<ByteBuffer, Integer> injected = new ConcurrentHashMap<>();
    private final AtomicLong forwarded = new AtomicLong();
    private final AtomicLong received = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private final AutoCloseable subscription;
    private final Thread leaseThread;
    private final Thread publisher;
    private volatile boolean leader;
    private volatile boolean closed;
    private volatile Thread subscriber;
    private volatile Jedis subscribed;
    private volatile BinaryJedisPubSub pubsub;
    private volatile long lastPong;
    private volatile boolean subscribeDown;
    private volatile boolean publishDown;

    private RedisBridge(Topic topic, SharedDict dict, Redis redis, String channel, boolean stream) {
        this.stream = stream;
        this.topic = topic;
        this.dict = dict;
        this.redis = redis;
        this.channel = channel;
        this.channelBytes = channel.getBytes(StandardCharsets.UTF_8);
        String prefix = "redis-bridge:" + channel + ":";
        this.leaseKey = prefix + "leader";
        this.hostKey = prefix + "host";
        this.lastKey = prefix + "last-id";
        if (stream) {
            // a host's first start reads what is added from now on
            dict.add(lastKey, System.currentTimeMillis() + "-0", 0);
        }
        byte[] r = new byte[8];
        new SecureRandom().nextBytes(r);
        this.me = ProcessHandle.current().pid() + ":" + HexFormat.of().formatHex(r);
        new SecureRandom().nextBytes(r);
        dict.add(hostKey, HexFormat.of().formatHex(r), 0);
        String host = dict.getString(hostKey);
        this.origin = (host != null ? host : HexFormat.of().formatHex(r))
                .getBytes(StandardCharsets.US_ASCII);
        this.subscription = topic.subscribe(this::onLocal);
        this.publisher = thread("nginx-jvm-redis-bridge-publish", this::publishLoop);
        this.leaseThread = thread("nginx-jvm-redis-bridge", this::leaseLoop);
    }

    /**
     * Bridges the topic {@code topic} and the Redis channel {@code channel}
     * of the server {@code redisUri}; {@code dict} names the shared
     * dictionary (any, a few hundred bytes of it) where the workers elect the
     * one that talks to Redis. Call it once in every worker, from
     * {@code jvm_init}: it only starts threads, never waits for Redis.
     */
    public static RedisBridge start(String topic, String dict, String redisUri, String channel) {
        return start(Topic.named(topic), SharedDict.named(dict), Redis.connect(redisUri), channel);
    }

    /** As {@link #start(String, String, String, String)}, with objects at hand. */
    public static RedisBridge start(Topic topic, SharedDict dict, Redis redis, String channel) {
        check(topic, dict, redis, channel);
        return new RedisBridge(topic, dict, redis, channel, false);
    }

    private static void check(Topic topic, SharedDict dict, Redis redis, String channel) {
        Objects.requireNonNull(topic, "topic");
        Objects.requireNonNull(dict, "dict");
        Objects.requireNonNull(redis, "redis");
        if (channel == null || channel.isEmpty()) {
            throw new IllegalArgumentException("a Redis channel or stream name is needed");
        }
        Redis.requireJedis();
    }

    /**
     * As {@link #start(String, String, String, String)}, over the Redis
     * Stream {@code streamKey} instead of a pub/sub channel: at least once.
     * Messages are appended (XADD, the stream trimmed to about
     * {@link #STREAM_MAX} entries) and read (XREAD) from the last id this
     * host has read, kept in the shared dictionary: a worker that takes the
     * lease over, or a subscription that comes back after Redis was away
     * (with its data), goes on from there, and a message read but not
     * yet recorded comes again.
     */
    public static RedisBridge startStream(String topic, String dict, String redisUri,
                                          String streamKey) {
        return startStream(Topic.named(topic), SharedDict.named(dict), Redis.connect(redisUri),
                           streamKey);
    }

    /** As {@link #startStream(String, String, String, String)}, with objects at hand. */
    public static RedisBridge startStream(Topic topic, SharedDict dict, Redis redis,
                                          String streamKey) {
        check(topic, dict, redis, streamKey);
        return new RedisBridge(topic, dict, redis, streamKey, true);
    }

    /** Entries a bridged stream keeps, about. */
    public static final long STREAM_MAX = 10_000;

    /** Whether this worker is the one of its host that talks to Redis. */
    public boolean isLeader() {
        return leader;
    }

    /** Whether this worker's subscription to the channel is up. */
    public boolean isSubscribed() {
        return subscribed != null && (stream || (pubsub != null && pubsub.isSubscribed()));
    }

    /** Messages of the local topic this worker sent to Redis. */
    public long forwarded() {
        return forwarded.get();
    }

    /** Messages of other hosts this worker put on the local topic. */
    public long received() {
        return received.get();
    }

    /** Messages lost here: Redis down, a full queue, a full topic, a bad envelope. */
    public long dropped() {
        return dropped.get();
    }

    /** The id of this host in the envelopes. */
    public String origin() {
        return new String(origin, StandardCharsets.US_ASCII);
    }

    @Override
    public void close() {
        closed = true;
        leader = false;
        try {
            subscription.close();
        } catch (Exception ignored) {
        }
        stopSubscriber();
        leaseThread.interrupt();
        publisher.interrupt();
        if (me.equals(dict.getString(leaseKey))) {
            dict.delete(leaseKey);
        }
    }

    @Override
    public String toString() {
        return "RedisBridge[" + topic.name() + " <-> " + redis.where() + " "
                + (stream ? "stream " : "") + channel + "]";
    }

    /**
     * A daemon thread, started from a timer thread of the worker when called
     * on the event loop (jvm_init): a thread inherits the signal mask of the
     * thread that starts it, and nginx's signals must reach the event loop
     * only (the runtime's threads start with them blocked).
     */
    private static Thread thread(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        if (LoopCalls.onLoop()) {
            Timers.after(0, Timers.Where.THREAD, t::start);
        } else {
            t.start();
        }
        return t;
    }

    // -- the local side: on the event loop, never waits ------------------------

    private void onLocal(Object message) {
        ByteBuffer key = key(message);
        if (takeInjected(key)) {
            return;                         // it came from Redis: not sent back
        }
        if (!leader) {
            return;
        }
        if (!outbox.offer(envelope(key))) {
            dropped.incrementAndGet();
        }
    }

    private static ByteBuffer key(Object message) {
        byte[] payload;
        byte type;
        if (message instanceof String s) {
            payload = s.getBytes(StandardCharsets.UTF_8);
            type = 's';
        } else {
            payload = (byte[]) message;
            type = 'b';
        }
        ByteBuffer b = ByteBuffer.allocate(payload.length + 1);
        b.put(type).put(payload).flip();
        return b;
    }

    private byte[] envelope(ByteBuffer key) {
        byte[] out = new byte[MAGIC.length + 1 + origin.length + key.remaining()];
        ByteBuffer b = ByteBuffer.wrap(out);
        b.put(MAGIC).put((byte) origin.length).put(origin).put(key.duplicate());
        return out;
    }

    private void addInjected(ByteBuffer key) {
        injected.merge(key, 1, Integer::sum);
    }

    private boolean takeInjected(ByteBuffer key) {
        boolean[] took = {false};
        injected.computeIfPresent(key, (k, n) -> {
            took[0] = true;
            return n > 1 ? n - 1 : null;
        });
        return took[0];
    }

    // -- the lease: one worker of the host talks to Redis ----------------------

    private void leaseLoop() {
        while (!closed) {
            try {
                boolean was = leader;
                leader = holdLease();
                dict.getString(hostKey);    // keeps the host's id recent (LRU)
                if (leader && !was) {
                    Log.notice(LOG, this + ": this worker talks to Redis for its host");
                }
                if (leader && (subscriber == null || !subscriber.isAlive())) {
                    // assigned before it starts: the loop runs while it is the one
                    Thread t = new Thread(stream ? this::readLoop : this::subscribeLoop,
                                          "nginx-jvm-redis-bridge-subscribe");
                    t.setDaemon(true);
                    subscriber = t;
                    t.start();
                } else if (!leader && subscriber != null) {
                    stopSubscriber();
                }
                keepAlive();
                Thread.sleep(TICK);
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                Log.error(LOG, this + ": the lease failed", e);
                try {
                    Thread.sleep(TICK);
                } catch (InterruptedException ie) {
                    return;
                }
            }
        }
    }

    private boolean holdLease() {
        String holder = dict.getString(leaseKey);
        if (holder == null) {
            return dict.add(leaseKey, me, LEASE_TTL) && me.equals(dict.getString(leaseKey));
        }
        if (holder.equals(me)) {
            return dict.expire(leaseKey, LEASE_TTL);
        }
        return false;
    }

    /** A subscription that no longer answers PING is cut, and made again. */
    private void keepAlive() {
        BinaryJedisPubSub p = pubsub;
        Jedis j = subscribed;
        if (p == null || j == null || !p.isSubscribed()) {
            return;
        }
        long now = System.nanoTime();
        if (now - lastPong > TimeUnit.MILLISECONDS.toNanos(6L * TICK + Redis.DEFAULT_TIMEOUT)) {
            j.disconnect();
            return;
        }
        try {
            p.ping();
        } catch (RuntimeException e) {
            j.disconnect();
        }
    }

    private void stopSubscriber() {
        Thread t = subscriber;
        subscriber = null;
        Jedis j = subscribed;
        if (j != null) {
            j.disconnect();                 // subscribe() returns, or throws
        }
        if (t != null) {
            t.interrupt();
        }
    }

    // -- from Redis to the topic -----------------------------------------------

    private void subscribeLoop() {
        reconnecting(connected -> {
            try (Jedis j = redis.client().dedicated()) {
                BinaryJedisPubSub p = new Listener();
                pubsub = p;
                subscribed = j;
                lastPong = System.nanoTime();
                j.subscribe(p, channelBytes);
                connected.run();
            }
        });
    }

    /** The stream's reader: XREAD from the host's last id, on the leader. */
    private void readLoop() {
        Thread self = Thread.currentThread();
        reconnecting(connected -> {
            try (Jedis j = redis.client().dedicated(RedisClient.BLOCK + Redis.DEFAULT_TIMEOUT)) {
                subscribed = j;
                while (!closed && subscriber == self) {
                    String last = dict.getString(lastKey);
                    String next = redis.client().xread(j, channel, last == null ? "$" : last,
                                                       this::fromRedis);
                    if (subscribeDown) {
                        subscribeDown = false;
                        Log.notice(LOG, this + ": reading the stream again");
                    }
                    if (next != null && subscriber == self) {
                        dict.put(lastKey, next, 0);
                    }
                    connected.run();
                }
            }
        });
    }

    /**
     * The subscriber thread's life: {@code connection} (a subscription, or
     * the stream's reader) again and again while this thread is the
     * bridge's subscriber, after a pause that doubles up to
     * {@link #MAX_BACKOFF} while Redis cannot be had; the connection calls
     * the Runnable it is given once it has had something from Redis, which
     * makes the next pause short again. One error in the log per outage.
     */
    private void reconnecting(java.util.function.Consumer<Runnable> connection) {
        long[] backoff = {100};
        Runnable connected = () -> backoff[0] = 100;
        Thread self = Thread.currentThread();
        while (!closed && subscriber == self) {
            try {
                connection.accept(connected);
            } catch (RuntimeException e) {
                if (closed || subscriber != self) {
                    break;
                }
                if (!subscribeDown) {
                    subscribeDown = true;
                    Log.error(LOG, this + ": no subscription to Redis (" + RedisClient.message(e)
                            + "); trying again every " + MAX_BACKOFF / 1000 + " s at most", null);
                }
            } finally {
                subscribed = null;
                pubsub = null;
            }
            try {
                Thread.sleep(backoff[0]);
            } catch (InterruptedException e) {
                break;
            }
            backoff[0] = Math.min(backoff[0] * 2, MAX_BACKOFF);
        }
    }

    private final class Listener extends BinaryJedisPubSub {
        @Override
        public void onSubscribe(byte[] ch, int count) {
            lastPong = System.nanoTime();
            if (subscribeDown) {
                subscribeDown = false;
                Log.notice(LOG, RedisBridge.this + ": subscribed to Redis again");
            } else {
                Log.info(LOG, RedisBridge.this + ": subscribed");
            }
        }

        @Override
        public void onPong(byte[] pattern) {
            lastPong = System.nanoTime();
        }

        @Override
        public void onMessage(byte[] ch, byte[] message) {
            lastPong = System.nanoTime();
            fromRedis(message);
        }
    }

    private void fromRedis(byte[] message) {
        try {
            inject(message);
        } catch (RuntimeException e) {     // a bad message costs itself, not the subscription
            dropped.incrementAndGet();
        }
    }

    private void inject(byte[] message) {
        int at = MAGIC.length;
        if (message.length < at + 2 || !ByteBuffer.wrap(message, 0, at).equals(ByteBuffer.wrap(MAGIC))) {
            dropped.incrementAndGet();      // not ours: another writer on the channel
            return;
        }
        int n = message[at] & 0xff;
        at += 1;
        if (message.length < at + n + 1) {
            dropped.incrementAndGet();
            return;
        }
        if (ByteBuffer.wrap(message, at, n).equals(ByteBuffer.wrap(origin))) {
            return;                         // this host's own message, back from Redis
        }
        at += n;
        byte type = message[at];
        byte[] payload = java.util.Arrays.copyOfRange(message, at + 1, message.length);
        Object value;
        if (type == 's') {
            value = new String(payload, StandardCharsets.UTF_8);
        } else if (type == 'b') {
            value = payload;
        } else {
            dropped.incrementAndGet();
            return;
        }
        if (payload.length > topic.maxMessage()) {
            dropped.incrementAndGet();
            return;
        }
        ByteBuffer key = key(value);
        addInjected(key);
        if (topic.publish(value)) {
            received.incrementAndGet();
        } else {
            takeInjected(key);
            dropped.incrementAndGet();
        }
    }

    // -- from the topic to Redis -----------------------------------------------

    private void publishLoop() {
        while (!closed) {
            byte[] m;
            try {
                m = outbox.take();
            } catch (InterruptedException e) {
                return;
            }
            try {
                if (stream) {
                    redis.client().xadd(channel, m, STREAM_MAX);
                } else {
                    redis.publish(channelBytes, m);
                }
                forwarded.incrementAndGet();
                if (publishDown) {
                    publishDown = false;
                    Log.notice(LOG, this + ": publishing to Redis again");
                }
            } catch (RuntimeException e) {
                dropped.incrementAndGet();
                if (!publishDown) {
                    publishDown = true;
                    Log.error(LOG, this + ": publishing to Redis failed (" + RedisClient.message(e)
                            + "); messages are dropped until it is back", null);
                }
            }
        }
    }
}
