package bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.SharedDict;
import redis.clients.jedis.Jedis;

/**
 * bench/shared.py's handler: GET /bench?op=incr|get|put&n=N&threads=T&store=S
 * runs N operations on the dictionary "bench" (S=dict) or on the Redis
 * server named by the system property bench.redis (S=redis, one Jedis
 * connection a thread), on the handler's own thread (the event loop, T=0)
 * or spread over T threads at once, and answers "OPS NANOS PID"
 * (operations done, time taken, the worker).
 */
public final class SharedBench implements Handler {

    /** The three operations, against one store. */
    interface Store extends AutoCloseable {
        void incr(String key);
        void get(String key);
        void put(String key, String value);
        @Override
        default void close() {}
    }

    static Store open(String store) {
        if (store.equals("redis")) {
            Jedis j = new Jedis("127.0.0.1", Integer.getInteger("bench.redis"));
            return new Store() {
                public void incr(String key) { j.incr(key); }
                public void get(String key) { j.get(key); }
                public void put(String key, String value) { j.set(key, value); }
                public void close() { j.close(); }
            };
        }
        SharedDict d = SharedDict.named("bench");
        return new Store() {
            public void incr(String key) { d.incr(key, 1); }
            public void get(String key) { d.get(key); }
            public void put(String key, String value) { d.put(key, value); }
        };
    }

    @Override
    public Response handle(Request r) throws Exception {
        String op = "incr", store = "dict";
        int n = 100000, threads = 0;
        for (String p : r.queryString().split("&")) {
            String[] kv = p.split("=", 2);
            switch (kv[0]) {
                case "op": op = kv[1]; break;
                case "n": n = Integer.parseInt(kv[1]); break;
                case "threads": threads = Integer.parseInt(kv[1]); break;
                case "store": store = kv[1]; break;
                default: break;
            }
        }
        try (Store s = open(store)) {
            s.put("key", "a value of some thirty-two bytes");
        }
        String which = op, where = store;
        long start = System.nanoTime();
        if (threads == 0) {
            run(where, which, n, 0);
        } else {
            int share = n / threads;
            CountDownLatch done = new CountDownLatch(threads);
            AtomicLong failed = new AtomicLong();
            List<Thread> ts = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                Thread th = new Thread(() -> {
                    try {
                        run(where, which, share, id);
                    } catch (Throwable e) {
                        failed.incrementAndGet();
                    } finally {
                        done.countDown();
                    }
                });
                th.setDaemon(true);
                ts.add(th);
            }
            ts.forEach(Thread::start);
            done.await();
            if (failed.get() > 0) {
                throw new IllegalStateException(failed.get() + " threads failed");
            }
            n = share * threads;
        }
        long took = System.nanoTime() - start;
        return Response.of(200, "text/plain", n + " " + took + " " + ProcessHandle.current().pid());
    }

    private static void run(String store, String op, int n, int id) {
        String mine = "key" + id;
        try (Store s = open(store)) {
            switch (op) {
                case "incr":
                    for (int i = 0; i < n; i++) {
                        s.incr("count");
                    }
                    break;
                case "get":
                    for (int i = 0; i < n; i++) {
                        s.get("key");
                    }
                    break;
                case "put":
                    for (int i = 0; i < n; i++) {
                        s.put(mine, "a value of some thirty-two bytes");
                    }
                    break;
                default:
                    throw new IllegalArgumentException(op);
            }
        }
    }
}
