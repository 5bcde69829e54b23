package bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.SharedDict;

/**
 * bench/shared.py's handler: GET /bench?op=incr|get|put&n=N&threads=T runs N
 * operations on the dictionary "bench", on the handler's own thread (the
 * event loop, T=0) or spread over T threads at once, and answers
 * "OPS NANOS PID" (operations done, time taken, the worker).
 */
public final class SharedBench implements Handler {
    @Override
    public Response handle(Request r) throws Exception {
        String op = "incr";
        int n = 100000, threads = 0;
        for (String p : r.queryString().split("&")) {
            String[] kv = p.split("=", 2);
            switch (kv[0]) {
                case "op": op = kv[1]; break;
                case "n": n = Integer.parseInt(kv[1]); break;
                case "threads": threads = Integer.parseInt(kv[1]); break;
                default: break;
            }
        }
        SharedDict d = SharedDict.named("bench");
        d.put("key", "a value of some thirty-two bytes");
        d.put("count", 0L);
        String which = op;
        long start = System.nanoTime();
        if (threads == 0) {
            run(d, which, n, 0);
        } else {
            int share = n / threads;
            CountDownLatch done = new CountDownLatch(threads);
            AtomicLong failed = new AtomicLong();
            List<Thread> ts = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                Thread th = new Thread(() -> {
                    try {
                        run(d, which, share, id);
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
            n = share * threads;
        }
        long took = System.nanoTime() - start;
        return Response.of(200, "text/plain", n + " " + took + " " + ProcessHandle.current().pid());
    }

    private static void run(SharedDict d, String op, int n, int id) {
        String mine = "key" + id;
        switch (op) {
            case "incr":
                for (int i = 0; i < n; i++) {
                    d.incr("count", 1);
                }
                break;
            case "get":
                for (int i = 0; i < n; i++) {
                    d.get("key");
                }
                break;
            case "put":
                for (int i = 0; i < n; i++) {
                    d.put(mine, "a value of some thirty-two bytes");
                }
                break;
            default:
                throw new IllegalArgumentException(op);
        }
    }
}
