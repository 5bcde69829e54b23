package testapp;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.SharedDict;

/**
 * The SharedDict API from query parameters: op, dict, key, value (or bytes=N
 * for a value of N bytes), ttl, delta, init, limit; n and threads for
 * "hammer"; prefix, n and threads for "pushpop", n and bytes for
 * "pushmany". Answers text, with the worker's pid in X-Pid; an
 * IllegalArgumentException, IllegalStateException or ArithmeticException
 * is a 400 with its class and message.
 */
public final class Shared implements Handler {
    @Override
    public Response handle(Request r) throws Exception {
        Map<String, String> q = query(r.queryString());
        String pid = Long.toString(ProcessHandle.current().pid());
        String body;
        try {
            body = run(q);
        } catch (IllegalArgumentException | IllegalStateException | ArithmeticException e) {
            return Response.of(400, "text/plain", e.getClass().getSimpleName() + ": " + e.getMessage())
                    .header("X-Pid", pid);
        }
        return Response.of(200, "text/plain", body).header("X-Pid", pid);
    }

    private static String run(Map<String, String> q) throws Exception {
        SharedDict d = SharedDict.named(q.getOrDefault("dict", "d"));
        String op = q.get("op");
        String key = q.containsKey("keylen") ? "k".repeat(Integer.parseInt(q.get("keylen"))) : q.get("key");
        long ttl = Long.parseLong(q.getOrDefault("ttl", "0"));
        Object value = q.containsKey("bytes") ? bytes(Integer.parseInt(q.get("bytes"))) : q.get("value");
        if ("double".equals(q.get("type"))) {
            value = 1.5;
        } else if ("long".equals(q.get("type"))) {
            value = Long.parseLong((String) value);
        }
        switch (op) {
            case "get":
                return show(d.get(key));
            case "getstring":
                return String.valueOf(d.getString(key));
            case "put":
                return String.valueOf(d.put(key, value, ttl));
            case "add":
                return String.valueOf(d.add(key, value, ttl));
            case "replace":
                return String.valueOf(d.replace(key, value, ttl));
            case "incr":
                return String.valueOf(d.incr(key, Long.parseLong(q.getOrDefault("delta", "1")),
                        Long.parseLong(q.getOrDefault("init", "0")), ttl));
            case "delete":
                return String.valueOf(d.delete(key));
            case "keys":
                return String.join("\n", d.keys(Integer.parseInt(q.getOrDefault("limit", "100"))));
            case "size":
                return String.valueOf(d.size());
            case "capacity":
                return String.valueOf(d.capacity());
            case "evictions":
                return String.valueOf(d.evictions());
            case "clear":
                d.clear();
                return "ok";
            case "fill": {
                // puts keys prefix0..prefixN-1 of `bytes` bytes; gets `keep` after each
                String keep = q.get("keep");
                int n = Integer.parseInt(q.get("n"));
                int failed = 0;
                for (int i = 0; i < n; i++) {
                    if (!d.put(q.get("prefix") + i, value)) {
                        failed++;
                    }
                    if (keep != null) {
                        d.get(keep);
                    }
                }
                return String.valueOf(failed);
            }
            case "hammer":
                return hammer(d, key, Integer.parseInt(q.get("n")), Integer.parseInt(q.get("threads")));
            case "lpush":
                return String.valueOf(d.lpush(key, value));
            case "rpush":
                return String.valueOf(d.rpush(key, value));
            case "lpop":
                return show(d.lpop(key));
            case "rpop":
                return show(d.rpop(key));
            case "llen":
                return String.valueOf(d.llen(key));
            case "ttl":
                return String.valueOf(d.ttl(key));
            case "expire":
                return String.valueOf(d.expire(key, ttl));
            case "getstale": {
                SharedDict.Value v = d.getStale(key);
                return v == null ? "nil" : (v.stale() ? "stale " : "fresh ") + show(v.value());
            }
            case "flushexpired":
                return String.valueOf(q.containsKey("limit")
                        ? d.flushExpired(Integer.parseInt(q.get("limit"))) : d.flushExpired());
            case "pushpop":
                return pushPop(d, key, q.get("prefix"), Integer.parseInt(q.get("n")),
                        Integer.parseInt(q.get("threads")));
            case "pushmany": {
                // rpush "i:" and `bytes` x's for i = 0.. until one finds no room or n are in
                int n = Integer.parseInt(q.get("n"));
                String pad = "x".repeat(Integer.parseInt(q.get("bytes")));
                int i = 0;
                while (i < n && d.rpush(key, i + ":" + pad) == i + 1) {
                    i++;
                }
                return String.valueOf(i);
            }
            case "popall": {
                // lpop to the end: the numbers before ':' of each value
                List<String> got = new ArrayList<>();
                for (Object v; (v = d.lpop(key)) != null; ) {
                    String t = (String) v;
                    got.add(t.substring(0, t.indexOf(':')));
                }
                return String.join(",", got);
            }
            default:
                throw new IllegalArgumentException("no op " + op);
        }
    }

    /**
     * n increments of key: on the calling thread (the event loop in loop
     * mode) and on `threads` more threads at once.
     */
    private static String hammer(SharedDict d, String key, int n, int threads) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        int share = n / (threads + 1);
        try {
            List<Future<Long>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Callable<Long> c = () -> {
                    for (int i = 0; i < share; i++) {
                        d.incr(key, 1);
                    }
                    return (long) share;
                };
                done.add(pool.submit(c));
            }
            long count = 0;
            for (int i = 0; i < n - share * threads; i++) {
                d.incr(key, 1);
                count++;
            }
            for (Future<Long> f : done) {
                count += f.get();
            }
            return String.valueOf(count);
        } finally {
            pool.shutdown();
        }
    }

    /**
     * n values prefix-t-i pushed at the head of the list at key, each
     * followed by a pop at the tail, on the calling thread and `threads`
     * more at once: the values popped, one a line (a pop may find the list
     * empty, another having taken the last one).
     */
    private static String pushPop(SharedDict d, String key, String prefix, int n, int threads)
            throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        int share = n / (threads + 1);
        try {
            List<Future<List<String>>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                String p = prefix + "-" + t + "-";
                done.add(pool.submit(() -> pushPopRun(d, key, p, share)));
            }
            List<String> got = pushPopRun(d, key, prefix + "-main-", n - share * threads);
            for (Future<List<String>> f : done) {
                got.addAll(f.get());
            }
            return String.join("\n", got);
        } finally {
            pool.shutdown();
        }
    }

    private static List<String> pushPopRun(SharedDict d, String key, String prefix, int n) {
        List<String> got = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            if (d.lpush(key, prefix + i) == 0) {
                throw new IllegalStateException("no room for " + prefix + i);
            }
            Object v = d.rpop(key);
            if (v != null) {
                got.add((String) v);
            }
        }
        return got;
    }

    private static String show(Object v) {
        if (v == null) {
            return "nil";
        }
        if (v instanceof String) {
            return "S:" + v;
        }
        if (v instanceof Long) {
            return "N:" + v;
        }
        byte[] b = (byte[]) v;
        return "B:" + b.length + ":" + HexFormat.of().formatHex(b, 0, Math.min(b.length, 8));
    }

    private static byte[] bytes(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) i;
        }
        return b;
    }

    /** The query string's parameters, decoded (TopicApp's too). */
    static Map<String, String> query(String qs) {
        Map<String, String> m = new HashMap<>();
        if (qs == null) {
            return m;
        }
        for (String p : qs.split("&")) {
            int eq = p.indexOf('=');
            String k = eq < 0 ? p : p.substring(0, eq);
            String v = eq < 0 ? "" : p.substring(eq + 1);
            m.put(URLDecoder.decode(k, StandardCharsets.UTF_8), URLDecoder.decode(v, StandardCharsets.UTF_8));
        }
        return m;
    }
}
