package nginx.jvm;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Publish and subscribe across the workers of the server, through a ring
 * of messages in nginx's shared memory declared with
 * {@code jvm_topic NAME SIZE;}.
 *
 * <p>Every subscriber of every worker gets every message published after
 * its worker started, once, in the one order in which the messages were
 * published (so each publisher's messages in its order). Subscribers of a
 * worker are called on its event loop, which the publisher wakes: as soon
 * as the loop is free.
 *
 * <p>The ring is bounded. A message is kept until every worker has read
 * it; when a publisher finds no room (a worker's event loop is too busy to
 * read, or messages come faster than the workers read them),
 * {@link #publish} answers false at once and the refusal is counted
 * ({@link #overflows}); it never waits.
 *
 * <p>{@link #publish} may be called from any thread.
 */
public final class Topic {
    private static final ConcurrentHashMap<String, Topic> byName = new ConcurrentHashMap<>();
    private static final ConcurrentHashMap<Long, Topic> byHandle = new ConcurrentHashMap<>();

    private final String name;
    private final long handle;
    private final long maxMessage;
    private final CopyOnWriteArrayList<TopicListener> listeners = new CopyOnWriteArrayList<>();

    Topic(String name, long handle, long maxMessage) {
        this.name = name;
        this.handle = handle;
        this.maxMessage = maxMessage;
    }

    /**
     * The topic declared with {@code jvm_topic NAME}.
     *
     * @throws IllegalArgumentException when nginx.conf declares none of that name
     * @throws IllegalStateException outside an nginx worker
     */
    public static Topic named(String name) {
        Objects.requireNonNull(name, "name");
        Topic t = byName.get(name);
        if (t != null) {
            return t;
        }
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        long handle = 0;
        if (n.length > 0 && n.length <= Shm.NAME_MAX) {
            try {
                handle = Shm.topic(n);
            } catch (UnsatisfiedLinkError e) {
                throw new IllegalStateException("topics exist only in an nginx worker", e);
            }
        }
        if (handle == 0) {
            throw new IllegalArgumentException("no topic \"" + name
                    + "\": declare it in nginx.conf with \"jvm_topic " + name + " SIZE;\"");
        }
        Topic made = new Topic(name, handle, Shm.topicMax(handle));
        t = byName.putIfAbsent(name, made);
        if (t == null) {
            byHandle.put(handle, made);
            return made;
        }
        return t;
    }

    public String name() {
        return name;
    }

    /** The largest message, in bytes (a quarter of the ring). */
    public long maxMessage() {
        return maxMessage;
    }

    /**
     * Publishes a String (sent in UTF-8) or a byte[] to every worker's
     * subscribers. Returns false, at once, when the ring has no room.
     *
     * @throws IllegalArgumentException for a message of another type, or
     *     larger than {@link #maxMessage}
     */
    public boolean publish(Object message) {
        int type;
        byte[] b;
        if (message instanceof String) {
            type = Shm.STRING;
            b = ((String) message).getBytes(StandardCharsets.UTF_8);
        } else if (message instanceof byte[]) {
            type = Shm.BYTES;
            b = (byte[]) message;
        } else {
            throw new IllegalArgumentException("topic \"" + name + "\": a message is a String or a byte[], not "
                    + (message == null ? "null" : message.getClass().getName()));
        }
        if (b.length > maxMessage) {
            throw new IllegalArgumentException("topic \"" + name + "\": a message of " + b.length
                    + " bytes is larger than its largest, " + maxMessage);
        }
        int rc = Shm.topicPublish(handle, b, type);
        if (rc == Shm.TOO_LARGE) {
            throw new IllegalArgumentException("topic \"" + name + "\": a message of " + b.length
                    + " bytes is too large");
        }
        return rc == Shm.OK;
    }

    /**
     * Calls {@code listener} with each message published from now on, on
     * this worker's event loop, until the answer is closed.
     */
    public AutoCloseable subscribe(TopicListener listener) {
        Objects.requireNonNull(listener, "listener");
        listeners.add(listener);
        return () -> listeners.remove(listener);
    }

    /** This worker's subscribers. */
    public int subscribers() {
        return listeners.size();
    }

    /** Messages published to the topic by every worker, ever. */
    public long published() {
        long[] out = new long[2];
        Shm.topicStats(handle, out);
        return out[0];
    }

    /** Messages refused because the ring was full, by every worker, ever. */
    public long overflows() {
        long[] out = new long[2];
        Shm.topicStats(handle, out);
        return out[1];
    }

    @Override
    public String toString() {
        return "Topic[" + name + "]";
    }

    /**
     * From {@link Worker#topicMessages}, on the event loop: {@code n}
     * messages in {@code buf}, each an int length, an int type and the bytes.
     */
    static void deliver(long handle, ByteBuffer buf, int n, int length) {
        Topic t = byHandle.get(handle);
        if (t == null || t.listeners.isEmpty()) {
            return;
        }
        int at = 0;
        for (int i = 0; i < n && at + 8 <= length; i++) {
            int len = buf.getInt(at);
            int type = buf.getInt(at + 4);
            byte[] b = new byte[len];
            Wire.get(buf, at + 8, b, 0, len);
            at += 8 + len;
            Object message = type == Shm.STRING ? new String(b, StandardCharsets.UTF_8) : b;
            for (TopicListener l : t.listeners) {
                try {
                    l.onMessage(type == Shm.BYTES && t.listeners.size() > 1 ? b.clone() : message);
                } catch (Throwable e) {
                    Log.error("nginx.jvm.Topic", "a listener of topic \"" + t.name + "\" threw", e);
                }
            }
        }
    }
}
