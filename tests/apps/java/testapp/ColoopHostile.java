package testapp;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.Timers;
import nginx.jvm.WebSocket;
import nginx.jvm.WebSocketListener;

/**
 * jvm_mode coloop against hostile clients (tests/test_coloop.py): a
 * WebSocket listener that parks while its client vanishes, a COLOOP
 * interval timer cancelled while its run is parked, and a window into the
 * runtime's books (sockets, tasks, the loop's carried threads) to prove
 * that nothing is left behind.
 */
public final class ColoopHostile {
    private ColoopHostile() {
    }

    static String param(Request r, String key, String dflt) {
        String q = r.queryString() == null ? "" : r.queryString();
        for (String kv : q.split("&")) {
            if (kv.equals(key)) {
                return "";
            }
            if (kv.startsWith(key + "=")) {
                return kv.substring(key.length() + 1);
            }
        }
        return dflt;
    }

    static Response text(String s) {
        return Response.of(200, "text/plain", s);
    }

    // --- a WebSocket listener that parks -----------------------------------

    /** Each socket's events, in the order its listener saw them, by ?name=. */
    private static final Map<String, List<String>> EVENTS = new ConcurrentHashMap<>();

    private static void record(String name, String event) {
        EVENTS.computeIfAbsent(name, k -> Collections.synchronizedList(new ArrayList<>())).add(event);
    }

    /**
     * /wspark?name=: every text message is a number of ms the listener
     * sleeps (parks); then it says "late" with send, then with sendAsync,
     * and records what became of both; a send that throws closes with
     * 1011, as the test apps' listeners do. Everything is recorded for
     * /wsstate?name=.
     */
    public static final class WsPark implements Handler {
        @Override
        public Response handle(Request r) {
            String name = param(r, "name", "anon");
            if (!r.isWebSocketUpgrade()) {
                return Response.of(400, "text/plain", "a WebSocket endpoint");
            }
            return Response.upgrade(new WebSocketListener() {
                @Override
                public void onOpen(WebSocket socket) {
                    record(name, "open " + Coloop.where());
                }

                @Override
                public void onMessage(WebSocket socket, String text) {
                    long ms = Long.parseLong(text);
                    record(name, "parked " + ms);
                    try {
                        Thread.sleep(ms);
                    } catch (InterruptedException e) {
                        record(name, "interrupted");
                        Thread.currentThread().interrupt();
                        return;
                    }
                    record(name, "resumed " + Coloop.where() + " open=" + socket.isOpen());
                    try {
                        socket.send("late " + ms);
                        record(name, "sent");
                    } catch (IOException e) {
                        record(name, "sendFailed " + e.getMessage());
                        socket.close(1011, "send failed");
                    }
                    socket.sendAsync("late async " + ms, new WebSocket.Callback() {
                        @Override
                        public void succeeded() {
                            record(name, "asyncSent");
                        }

                        @Override
                        public void failed(Throwable error) {
                            record(name, "asyncFailed " + error.getMessage());
                        }
                    });
                }

                @Override
                public void onError(WebSocket socket, Throwable error) {
                    record(name, "error " + error.getMessage());
                }

                @Override
                public void onClose(WebSocket socket, int code, String reason) {
                    record(name, "close " + code + " " + Coloop.where());
                }
            });
        }
    }

    /**
     * /wsflood?name=: a text message "N SIZE" makes the listener send N
     * messages of SIZE bytes with send, which waits (parks) while the
     * socket's send queue is full, then "done"; recorded: "flooding" before,
     * "flooded" after, or "floodFailed" and why.
     */
    /**
     * /writerflood?n=&size=: a body written by a BodyWriter on the
     * handler's own thread (in coloop, carried by the loop), n pieces of
     * size bytes, each starting with its number: a client that reads
     * nothing makes each write wait for room, parked.
     */
    public static final class WriterFlood implements Handler {
        @Override
        public Response handle(Request r) {
            int n = Integer.parseInt(param(r, "n", "1000"));
            byte[] piece = new byte[Integer.parseInt(param(r, "size", "16384"))];
            java.util.Arrays.fill(piece, (byte) 'x');
            return Response.of(200, "application/octet-stream", (nginx.jvm.BodyWriter) out -> {
                for (int i = 0; i < n; i++) {
                    byte[] number = String.format("%08d", i).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
                    System.arraycopy(number, 0, piece, 0, 8);
                    out.write(piece);
                }
            });
        }
    }

    public static final class WsFlood implements Handler {
        @Override
        public Response handle(Request r) {
            String name = param(r, "name", "anon");
            return Response.upgrade(new WebSocketListener() {
                @Override
                public void onMessage(WebSocket socket, String text) {
                    String[] a = text.split(" ");
                    int n = Integer.parseInt(a[0]);
                    char[] fill = new char[Integer.parseInt(a[1]) - 8];
                    java.util.Arrays.fill(fill, 'x');
                    String tail = new String(fill);
                    record(name, "flooding " + Coloop.where());
                    try {
                        for (int i = 0; i < n; i++) {
                            socket.send(String.format("%08d", i) + tail);
                        }
                        socket.send("done");
                        record(name, "flooded " + Coloop.where());
                    } catch (IOException e) {
                        record(name, "floodFailed " + e.getMessage());
                    }
                }

                @Override
                public void onClose(WebSocket socket, int code, String reason) {
                    record(name, "close " + code);
                }
            });
        }
    }

    /**
     * /subwait?name=: waits for a subrequest to /slow/ (an upstream that
     * never answers), its abort callback recorded; records how the wait
     * ended (the client left meanwhile: the test).
     */
    public static final class SubWait implements Handler {
        @Override
        public Response handle(Request r) throws Exception {
            String name = param(r, "name", "anon");
            record(name, "registered " + r.onAbort(() -> record(name, "aborted")));
            record(name, "waiting " + Coloop.where());
            try {
                Response sub = r.subrequest("/slow/" + name).get(20, TimeUnit.SECONDS);
                record(name, "got " + sub.status());
            } catch (java.util.concurrent.ExecutionException e) {
                record(name, "failed " + e.getCause().getMessage());
            } catch (java.util.concurrent.TimeoutException e) {
                record(name, "timed out");
            }
            record(name, "ended " + Coloop.where() + " aborted=" + r.isAborted());
            return text("late answer");
        }
    }

    /** /events?name=: what a socket's listener or a handler recorded, one a line. */
    public static final class Events implements Handler {
        @Override
        public Response handle(Request r) {
            List<String> events = EVENTS.getOrDefault(param(r, "name", "anon"), List.of());
            synchronized (events) {
                return text(String.join("\n", events));
            }
        }
    }

    // --- a COLOOP interval timer cancelled while its run is parked ----------

    static volatile Timers.Timer timer;
    static volatile long cancelledAt;
    /** Released by /ctimer?release: the run parked on it goes on. */
    static final Semaphore gate = new Semaphore(0);
    static final AtomicInteger runs = new AtomicInteger(), running = new AtomicInteger(),
            most = new AtomicInteger(), ended = new AtomicInteger(), afterCancel = new AtomicInteger();
    static volatile String ranOn = "";

    /**
     * /ctimer?start&every=&ms=: an interval COLOOP timer whose run parks on
     * a gate (at most 10 s), then sleeps ms; ?state: its counts; ?cancel:
     * cancels it, and says whether a run was under way (parked) then;
     * ?release: opens the gate for one run.
     */
    public static final class CancelTimer implements Handler {
        @Override
        public Response handle(Request r) {
            if (param(r, "start", null) != null) {
                long every = Long.parseLong(param(r, "every", "50"));
                long ms = Long.parseLong(param(r, "ms", "400"));
                runs.set(0);
                running.set(0);
                most.set(0);
                ended.set(0);
                afterCancel.set(0);
                cancelledAt = 0;
                gate.drainPermits();
                timer = Timers.every(every, Timers.Where.COLOOP, () -> {
                    runs.incrementAndGet();
                    if (cancelledAt != 0) {
                        afterCancel.incrementAndGet();
                    }
                    most.accumulateAndGet(running.incrementAndGet(), Math::max);
                    try {
                        gate.tryAcquire(10, TimeUnit.SECONDS);
                        Thread.sleep(ms);
                        ranOn = Coloop.where();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        running.decrementAndGet();
                        ended.incrementAndGet();
                    }
                });
                return text("every " + every);
            }
            if (param(r, "cancel", null) != null) {
                int under = running.get();
                cancelledAt = System.nanoTime();
                Timers.Timer t = timer;
                boolean was = t != null && t.cancel();
                return text("cancelled " + was + " running=" + under + " runs=" + runs.get()
                        + " done=" + (t != null && t.isDone()));
            }
            if (param(r, "release", null) != null) {
                gate.release();
                return text("released");
            }
            return text("runs=" + runs.get() + " running=" + running.get() + " most=" + most.get()
                    + " ended=" + ended.get() + " afterCancel=" + afterCancel.get() + " on=" + ranOn);
        }
    }

    // --- the runtime's books ------------------------------------------------

    private static Object field(Object obj, Class<?> cls, String name) throws ReflectiveOperationException {
        Field f = cls.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(obj);
    }

    private static int size(Object obj) throws ReflectiveOperationException {
        if (obj instanceof Map) {
            return ((Map<?, ?>) obj).size();
        }
        if (obj instanceof java.util.Collection) {
            return ((java.util.Collection<?>) obj).size();
        }
        Method m = obj.getClass().getDeclaredMethod("size");
        m.setAccessible(true);
        return (Integer) m.invoke(obj);
    }

    /**
     * /books (jvm_mode loop: it reads what only the loop writes): the
     * WebSockets the worker keeps, the tasks it tracks, the coloop threads
     * of requests not ended (Tasks.coloopLive), the carried threads the
     * loop's scheduler knows as parked or queued in a work (not those kept
     * for the next one), and its continuations
     * waiting to run. Read by reflection: a test's window into nginx.jvm.
     */
    public static final class Books implements Handler {
        @Override
        public Response handle(Request r) throws Exception {
            Class<?> worker = Class.forName("nginx.jvm.Worker");
            Object tasks = field(null, worker, "tasks");
            Object sockets = field(null, worker, "sockets");
            Class<?> ls = Class.forName("nginx.jvm.LoopScheduler");
            Object scheduler = field(null, ls, "worker");
            StringBuilder b = new StringBuilder();
            b.append("sockets=").append(size(sockets));
            b.append(" tasks=").append(size(field(tasks, tasks.getClass(), "live")));
            b.append(" coloop=").append(field(tasks, tasks.getClass(), "coloopLive"));
            if (scheduler != null) {
                // less the threads kept parked for the next work (LoopScheduler.idle):
                // known are those whose work parked or waits to run
                b.append(" known=").append(size(field(scheduler, ls, "known"))
                        - (Integer) field(scheduler, ls, "idleCount"));
                b.append(" waiting=").append(size(field(scheduler, ls, "queue")));
            }
            return text(b.toString());
        }
    }
}
