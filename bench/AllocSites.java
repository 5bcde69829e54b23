package nginx.jvm;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Where the bytes of a /hello request go, step by step, outside nginx: the
 * request wrk sends, described as the C module describes it, run through
 * Worker.handle (the loop's entry point) and through each of its steps
 * alone, each measured by the calling thread's allocated bytes
 * (ThreadMXBean, exact) over many calls once C2 has compiled them. What
 * escape analysis removes here may differ from a worker, whose entry is a
 * JNI call: bench/alloc.py measures the workers; this says which step
 * makes what.
 *
 * <pre>
 * javac -cp "build/nginx-jvm.jar:build/lib/*" -d /tmp/sites bench/AllocSites.java \
 *     bench/java/bench/JavaRoutes.java
 * java -cp "/tmp/sites:build/nginx-jvm.jar:build/lib/*:bench/ring" nginx.jvm.AllocSites
 * </pre>
 *
 * With the argument {@code coloop}, on a JDK 21 to 25 started with
 * {@code --add-opens=java.base/java.lang=ALL-UNNAMED} (a worker reaches
 * the JDK's builder through JNI instead), Worker.submit of jvm_mode coloop
 * too: the request's task, its virtual thread carried by the calling
 * thread as the loop carries it, answered in its first slice. (The
 * runtime's abort threads then print an UnsatisfiedLinkError as they
 * start: outside a worker there are no natives; nothing measured needs them.)
 */
public final class AllocSites {
    private static final com.sun.management.ThreadMXBean MX =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final int WARM = 300_000, RUNS = 1_000_000;
    static Object sink;

    public static void main(String[] args) throws Exception {
        byte[] req = request("GET", "/hello", "HTTP/1.1", "127.0.0.1", "127.0.0.1",
                new String[] {"Host", "127.0.0.1:8080"});
        boolean coloop = args.length > 0 && args[0].equals("coloop");
        if (coloop) {
            coloop();
        }
        int index = 0;
        for (String name : new String[] {"bench.routes/handler", "bench.JavaRoutes"}) {
            Handler h = (Handler) Handlers.load(name);
            Response r = h.handle(new Request(req.clone()));
            ResponseEncoder enc = new ResponseEncoder(64 * 1024, b -> 0, (l, m) -> 0);
            String failed = Worker.register(name);
            if (failed != null) {
                throw new IllegalStateException(failed);
            }
            int at = index++;
            System.out.println(name + ":");
            measure("  Worker.handle, the whole call", () -> {
                ByteBuffer b = Worker.requestBuffer(req.length);
                Wire.put(b, 0, req, 0, req.length);
                Worker.handle(at, req.length, 0L, Wire.PHASE_CONTENT);
            });
            measure("  the request's bytes copied and decoded (Request)", () -> {
                byte[] d = new byte[req.length];
                System.arraycopy(req, 0, d, 0, req.length);
                sink = new Request(d);
            });
            Request shared = new Request(req.clone());
            measure("  the handler's call (request map, :uri, response)", () -> {
                sink = Handlers.call(h, shared);
            });
            measure("  the response's encoding", () -> enc.encode(r));
            if (coloop) {
                long[] id = {1};
                measure("  Worker.submit, jvm_mode coloop (answered inline)", () -> {
                    ByteBuffer b = Worker.requestBuffer(req.length);
                    Wire.put(b, 0, req, 0, req.length);
                    int n = Worker.submit(at, req.length, id[0]++, Wire.COLOOP, false, 0L,
                            Wire.PHASE_CONTENT);
                    if (n == Wire.ACCEPTED) {
                        throw new IllegalStateException("not answered in its first slice");
                    }
                });
            }
        }
    }

    /** Worker's tasks get a coloop scheduler on this thread, as a worker's loop has. */
    private static void coloop() throws Exception {
        java.lang.reflect.Field f = Worker.class.getDeclaredField("tasks");
        f.setAccessible(true);
        Tasks tasks = (Tasks) f.get(null);
        String error = tasks.configure(0, 0, 1024, true, false);
        if (error != null) {
            throw new IllegalStateException(error);
        }
        String[] why = new String[1];
        LoopScheduler s = LoopScheduler.open(() -> { }, why, LoopScheduler.REFLECTION);
        if (s == null) {
            throw new IllegalStateException(why[0]);
        }
        java.lang.reflect.Field c = Tasks.class.getDeclaredField("coloop");
        c.setAccessible(true);
        c.set(tasks, s);
    }

    private static void measure(String what, Runnable step) {
        for (int i = 0; i < WARM; i++) {
            step.run();
        }
        long before = MX.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < RUNS; i++) {
            step.run();
        }
        long after = MX.getCurrentThreadAllocatedBytes();
        System.out.printf("%-58s %7.1f B%n", what, (after - before) / (double) RUNS);
    }

    /** The layout of ngx_http_jvm_request.c (docs/internals.md), native byte order. */
    private static byte[] request(String method, String uri, String protocol, String server,
                                  String remote, String[] headers) {
        ByteBuffer b = ByteBuffer.allocate(4096).order(ByteOrder.nativeOrder());
        b.putInt(0).putInt(8080).putInt(0).putLong(0);
        for (String s : new String[] {method, uri, "", protocol, server, remote, ""}) {
            put(b, s);
        }
        b.putInt(headers.length / 2);
        for (String s : headers) {
            put(b, s);
        }
        b.putInt(0);            // no body
        byte[] out = new byte[b.position()];
        b.flip().get(out);
        return out;
    }

    private static void put(ByteBuffer b, String s) {
        byte[] x = s.getBytes(StandardCharsets.ISO_8859_1);
        b.putInt(x.length).put(x);
    }
}
