package testapp;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.Timers;
import nginx.jvm.WebSocket;
import nginx.jvm.WebSocketListener;

/**
 * jvm_mode coloop tests. Each handler says which OS thread carried it at
 * each step: /proc/thread-self names the kernel's thread, whatever Java
 * thread (virtual or not) runs on it; the event loop is the worker's main
 * thread, whose id is the process id.
 */
public final class Coloop {
    private Coloop() {
    }

    /** "loop" when the calling code runs on the worker's event-loop thread, else its thread id. */
    static String where() {
        try {
            String tid = Files.readSymbolicLink(Path.of("/proc/thread-self")).getFileName().toString();
            return tid.equals(Long.toString(ProcessHandle.current().pid())) ? "loop" : "tid " + tid;
        } catch (java.io.IOException e) {
            return "unknown: " + e;
        }
    }

    static long arg(Request r, String name, long dflt) {
        String q = r.queryString() == null ? "" : r.queryString();
        for (String kv : q.split("&")) {
            if (kv.startsWith(name + "=")) {
                return Long.parseLong(kv.substring(name.length() + 1));
            }
        }
        return dflt;
    }

    static Response text(String s) {
        return Response.of(200, "text/plain", s);
    }

    /** Answers at once. */
    public static final class Hello implements Handler {
        @Override
        public Response handle(Request r) {
            return text("hello");
        }
    }

    /** Where it ran, the thread's name. */
    public static final class Where implements Handler {
        @Override
        public Response handle(Request r) {
            return text(where() + " " + Thread.currentThread().getName());
        }
    }

    private static final ThreadLocal<String> LEFT = new ThreadLocal<>();

    /**
     * A carried thread kept for the next request: its id, what it brings
     * from the request before (a ThreadLocal, the interrupt flag, the
     * context class loader's name), then it leaves all three changed;
     * ?throw=1 throws after that.
     */
    public static final class Reuse implements Handler {
        @Override
        public Response handle(Request r) {
            Thread t = Thread.currentThread();
            ClassLoader cl = t.getContextClassLoader();
            String seen = t.getId() + " " + LEFT.get() + " " + Thread.interrupted() + " "
                    + (cl == null ? "null" : cl.getName());
            LEFT.set("left-by-" + r.queryString());
            t.setContextClassLoader(new ClassLoader("handler-set", cl) { });
            t.interrupt();
            if (arg(r, "throw", 0) == 1) {
                throw new IllegalStateException("thrown on purpose");
            }
            return text(seen);
        }
    }

    /** Whether java.lang is open to the handlers' classes (--add-opens). */
    public static final class Opens implements Handler {
        @Override
        public Response handle(Request r) {
            return text(where() + " " + Object.class.getModule().isOpen("java.lang", Coloop.class.getModule()));
        }
    }

    /** Thread.sleep(?ms=50), where before and after. */
    public static final class Sleep implements Handler {
        @Override
        public Response handle(Request r) throws Exception {
            String before = where();
            Thread.sleep(arg(r, "ms", 50));
            return text(before + " " + where());
        }
    }

    /** Reads a line from 127.0.0.1:?port= (the test's server), where before and after. */
    public static final class Sock implements Handler {
        @Override
        public Response handle(Request r) throws Exception {
            String before = where();
            try (Socket s = new Socket("127.0.0.1", (int) arg(r, "port", 0))) {
                s.getOutputStream().write("hi\n".getBytes(StandardCharsets.US_ASCII));
                String line = new BufferedReader(new InputStreamReader(s.getInputStream(),
                        StandardCharsets.US_ASCII)).readLine();
                return text(before + " " + where() + " " + line);
            }
        }
    }

    /** Waits for a subrequest to /sub/ (its future's get), reads a variable after: where before and after. */
    public static final class Sub implements Handler {
        @Override
        public Response handle(Request r) throws Exception {
            String before = where();
            Response sub = r.subrequest("/sub/x").get();
            String body = new String((byte[]) sub.body(), StandardCharsets.UTF_8).trim();
            return text(before + " " + where() + " " + sub.status() + " " + body + " " + r.variable("uri"));
        }
    }

    /** Spins ?ms= milliseconds without parking: holds the loop. */
    public static final class Spin implements Handler {
        @Override
        public Response handle(Request r) {
            long end = System.nanoTime() + arg(r, "ms", 300) * 1_000_000L;
            long n = 0;
            while (System.nanoTime() < end) {
                n++;
            }
            return text("spun " + n);
        }
    }

    /** Spins ?ms= milliseconds, yielding as it goes: the loop serves others in between. */
    public static final class YieldSpin implements Handler {
        @Override
        public Response handle(Request r) {
            long end = System.nanoTime() + arg(r, "ms", 300) * 1_000_000L;
            long n = 0;
            while (System.nanoTime() < end) {
                if (++n % 1000 == 0) {
                    Thread.yield();
                }
            }
            return text("yielded " + where());
        }
    }

    /**
     * A WebSocket whose listener sleeps as long as each text message says
     * (in ms), then answers where it was before and after, and its
     * thread's name.
     */
    public static final class WsSleep implements Handler {
        @Override
        public Response handle(Request r) {
            return Response.upgrade(new WebSocketListener() {
                @Override
                public void onMessage(WebSocket socket, String text) {
                    String before = where();
                    try {
                        Thread.sleep(Long.parseLong(text));
                        socket.send(before + " " + where() + " " + Thread.currentThread().getName());
                    } catch (Exception e) {
                        socket.close(1011, e.toString());
                    }
                }
            });
        }
    }

    /** What the last COLOOP timer saw (null: none has ended). */
    static volatile String timerSaw;
    /** Interval timer runs under way, and the most at once. */
    static final AtomicInteger timerRunning = new AtomicInteger(), timerMost = new AtomicInteger();
    static final AtomicInteger timerRuns = new AtomicInteger();
    static volatile Timers.Timer interval;

    /**
     * /timer?ms=: a one-shot COLOOP timer that sleeps ms and records where
     * it was; /timer?every=&ms=: an interval one whose runs sleep longer than
     * the interval (counted, with the most at once); /timer?cancel: stops it;
     * /timer?result: what they saw.
     */
    public static final class Timer implements Handler {
        @Override
        public Response handle(Request r) {
            String q = r.queryString() == null ? "" : r.queryString();
            long ms = arg(r, "ms", 100);
            if (q.startsWith("result")) {
                return text(timerSaw + " runs=" + timerRuns.get() + " most=" + timerMost.get());
            }
            if (q.startsWith("cancel")) {
                Timers.Timer t = interval;
                return text("cancelled " + (t != null && t.cancel()));
            }
            long every = arg(r, "every", 0);
            if (every > 0) {
                timerRuns.set(0);
                timerMost.set(0);
                interval = Timers.every(every, Timers.Where.COLOOP, () -> {
                    timerRuns.incrementAndGet();
                    timerMost.accumulateAndGet(timerRunning.incrementAndGet(), Math::max);
                    try {
                        Thread.sleep(ms);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        timerRunning.decrementAndGet();
                    }
                });
                return text("every " + every);
            }
            timerSaw = null;
            Timers.after(0, Timers.Where.COLOOP, () -> {
                String before = where();
                try {
                    Thread.sleep(ms);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                timerSaw = before + " " + where() + " " + Thread.currentThread().getName();
            });
            return text("started");
        }
    }
}
