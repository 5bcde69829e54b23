package nginx.jvm.servlet.boot.seam;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;
import nginx.jvm.servlet.tomcat.NginxProcessor;
import org.apache.coyote.Adapter;

/**
 * A Spring Boot application's Tomcat as a nginx.jvm handler: each request
 * runs through one of our Coyote processors ({@link NginxProcessor}) into
 * the adapter of the application's Connector, on the calling thread, as
 * TomcatEngine does for a Tomcat of its own. It keeps the processors, and
 * runs async servlets' events and timeouts.
 */
final class BootEngine implements NginxProcessor.Host, Handler, AsyncHandler {
    private final Adapter adapter;
    /** The application's class loader, the context loader of the requests' threads. */
    private final ClassLoader loader = BootEngine.class.getClassLoader();
    private final ConcurrentLinkedQueue<NginxProcessor> idle = new ConcurrentLinkedQueue<>();
    private final Set<NginxProcessor> waiting = ConcurrentHashMap.newKeySet();
    private final ExecutorService async = Executors.newCachedThreadPool(daemon("tomcat-async"));
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(
            daemon("tomcat-async-timeout"));

    BootEngine(Adapter adapter) {
        this.adapter = adapter;
        timer.scheduleWithFixedDelay(this::checkTimeouts, 1, 1, TimeUnit.SECONDS);
    }

    private ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            t.setContextClassLoader(loader);
            return t;
        };
    }

    @Override
    public Response handle(Request request) throws Exception {
        return serve(request, null);
    }

    @Override
    public void handle(Request request, Responder responder) throws Exception {
        serve(request, responder);
    }

    private Response serve(Request r, Responder responder) throws Exception {
        Thread t = Thread.currentThread();
        ClassLoader was = t.getContextClassLoader();
        t.setContextClassLoader(loader);
        try {
            NginxProcessor p = idle.poll();
            if (p == null) {
                p = new NginxProcessor(adapter, this);
            }
            return p.serve(r, responder);
        } finally {
            t.setContextClassLoader(was);
        }
    }

    @Override
    public void release(NginxProcessor p) {
        p.recycle();
        idle.offer(p);
    }

    @Override
    public void execute(Runnable event) {
        async.execute(event);
    }

    @Override
    public void waiting(NginxProcessor p, boolean yes) {
        if (yes) {
            waiting.add(p);
        } else {
            waiting.remove(p);
        }
    }

    @Override
    public long syncWaitMillis() {
        return 10 * 60_000L;
    }

    private void checkTimeouts() {
        long now = System.currentTimeMillis();
        for (NginxProcessor p : waiting) {
            p.timeoutAsync(now);
        }
    }

    void stop() {
        timer.shutdownNow();
        async.shutdown();
    }
}
