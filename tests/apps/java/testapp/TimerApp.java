package testapp;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.Timers;

/**
 * nginx.jvm.Timers from query parameters: op=start (name, kind=after|every,
 * ms, on=loop|thread, throw=1, or throw=hostile: an exception whose message
 * cannot be read), op=count (name: runs, then the threads they ran on),
 * op=cancel (name), op=loop (this handler's thread).
 */
public final class TimerApp implements Handler {
    /** Its getMessage() (so its toString(), so printing it) throws another like it. */
    static final class Hostile extends RuntimeException {
        @Override
        public String getMessage() {
            throw new Hostile();
        }
    }

    private static final Map<String, Timers.Timer> timers = new ConcurrentHashMap<>();
    private static final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    private static final Map<String, Set<String>> threads = new ConcurrentHashMap<>();

    @Override
    public Response handle(Request r) throws Exception {
        Map<String, String> q = Shared.query(r.queryString());
        String name = q.get("name");
        String body;
        switch (q.get("op")) {
            case "start": {
                long ms = Long.parseLong(q.get("ms"));
                Timers.Where where = "thread".equals(q.get("on")) ? Timers.Where.THREAD : Timers.Where.LOOP;
                String fail = q.get("throw");
                String file = q.get("file");
                runs.put(name, new AtomicInteger());
                threads.put(name, ConcurrentHashMap.newKeySet());
                Runnable task = () -> {
                    runs.get(name).incrementAndGet();
                    threads.get(name).add(Thread.currentThread().getName());
                    if (file != null) {
                        try {
                            java.nio.file.Files.writeString(java.nio.file.Path.of(file), "run\n",
                                    java.nio.file.StandardOpenOption.CREATE,
                                    java.nio.file.StandardOpenOption.APPEND);
                        } catch (java.io.IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    }
                    if ("hostile".equals(fail)) {
                        throw new Hostile();
                    }
                    if (fail != null) {
                        throw new IllegalStateException("timer-boom-marker");
                    }
                };
                timers.put(name, "every".equals(q.get("kind"))
                        ? Timers.every(ms, where, task) : Timers.after(ms, where, task));
                body = "started";
                break;
            }
            case "count":
                body = runs.get(name).get() + " " + String.join(",", threads.get(name));
                break;
            case "cancel":
                body = Boolean.toString(timers.get(name).cancel());
                break;
            case "sleep":
                Thread.sleep(Long.parseLong(q.get("ms")));
                body = "slept";
                break;
            case "loop":
                body = Thread.currentThread().getName();
                break;
            default:
                body = "?";
        }
        return Response.of(200, "text/plain", body);
    }
}
