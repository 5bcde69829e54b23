package bench;

import java.util.Arrays;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.SharedDict;
import nginx.jvm.Topic;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPubSub;

/**
 * bench/shared.py's publish-to-every-worker round trip. jvm_init (this
 * class as a Runnable) subscribes each worker to the topic "bench" and, when
 * the system property bench.redis names a Redis port, to its channel
 * "bench" on a thread of its own; each subscriber acknowledges message i
 * by incrementing "ack:S:i" in the dictionary "bench". GET
 * /roundtrip?n=N&workers=W&store=topic|redis (a pool location: the loop
 * must stay free to read the topic) publishes N messages one after the
 * other, each when the last has been acknowledged by W workers, and answers
 * "MEDIAN_NS P99_NS".
 */
public final class TopicBench implements Handler, Runnable {

    static void ack(String store, String message) {
        SharedDict.named("bench").incr("ack:" + store + ":" + message, 1);
    }

    @Override
    public void run() {
        Topic.named("bench").subscribe(m -> ack("topic", (String) m));
        Integer port = Integer.getInteger("bench.redis");
        if (port == null) {
            return;
        }
        Thread t = new Thread(() -> {
            try (Jedis j = new Jedis("127.0.0.1", port)) {
                j.subscribe(new JedisPubSub() {
                    @Override
                    public void onMessage(String channel, String message) {
                        ack("redis", message);
                    }
                }, "bench");
            }
        }, "bench-redis-subscriber");
        t.setDaemon(true);
        t.start();
    }

    @Override
    public Response handle(Request r) throws Exception {
        int n = 1000, workers = 1;
        String store = "topic";
        for (String p : r.queryString().split("&")) {
            String[] kv = p.split("=", 2);
            switch (kv[0]) {
                case "n": n = Integer.parseInt(kv[1]); break;
                case "workers": workers = Integer.parseInt(kv[1]); break;
                case "store": store = kv[1]; break;
                default: break;
            }
        }
        SharedDict d = SharedDict.named("bench");
        Topic topic = Topic.named("bench");
        long[] took = new long[n];
        try (Jedis j = store.equals("redis")
                ? new Jedis("127.0.0.1", Integer.getInteger("bench.redis")) : null) {
            for (int i = 0; i < n; i++) {
                String message = ProcessHandle.current().pid() + "-" + System.nanoTime();
                String key = "ack:" + store + ":" + message;
                long start = System.nanoTime();
                if (j != null) {
                    j.publish("bench", message);
                } else if (!topic.publish(message)) {
                    throw new IllegalStateException("topic full");
                }
                long deadline = start + 5_000_000_000L;
                while (d.incr(key, 0) < workers) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("no acknowledgement of " + message);
                    }
                    Thread.yield();
                }
                took[i] = System.nanoTime() - start;
                d.delete(key);
            }
        }
        Arrays.sort(took);
        return Response.of(200, "text/plain",
                took[n / 2] + " " + took[Math.min(n - 1, n * 99 / 100)]);
    }
}
