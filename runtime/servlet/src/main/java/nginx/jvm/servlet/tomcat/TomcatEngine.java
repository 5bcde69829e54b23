package nginx.jvm.servlet.tomcat;

import jakarta.servlet.Servlet;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import org.apache.catalina.Context;
import org.apache.catalina.Host;
import org.apache.catalina.LifecycleException;
import org.apache.catalina.LifecycleState;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.catalina.valves.ErrorReportValve;
import org.apache.tomcat.util.modeler.Registry;

/**
 * An embedded Tomcat whose only Connector is {@link NginxProtocol}: the
 * Server, Service, Engine, Host and Context of a standalone Tomcat, with no
 * port of its own (no shutdown port either: embedded Tomcat sets -1).
 */
public final class TomcatEngine {
    private final Tomcat tomcat;
    private final NginxProtocol protocol = new NginxProtocol();
    private final ConcurrentLinkedQueue<NginxProcessor> idle = new ConcurrentLinkedQueue<>();
    private final Set<NginxProcessor> waiting = ConcurrentHashMap.newKeySet();
    /** Async servlets' events, which a socket's poller would run in a standalone Tomcat. */
    private final ExecutorService async = Executors.newCachedThreadPool(daemon("tomcat-async"));
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(
            daemon("tomcat-async-timeout"));

    static {
        // no JMX MBeans for every component: 2 s of a start measured on the
        // spike's machine (Spring Boot turns them off for the same reason)
        Registry.disableRegistry();
    }

    /** One servlet at "/" of the root context (the spike's hello, the tests' servlets). */
    public TomcatEngine(Path base, Servlet servlet) throws LifecycleException {
        this(base, t -> {
            Context c = t.addContext("", base.toString());
            Tomcat.addServlet(c, "app", servlet).setAsyncSupported(true);
            c.addServletMappingDecoded("/", "app");
            return List.of(c);
        });
    }

    /**
     * Web applications, each a WAR or its directory at its own context
     * path; a WAR file is unpacked under {@code unpackRoot}.
     */
    public TomcatEngine(Path base, List<Webapp> apps, Path unpackRoot) throws LifecycleException {
        this(base, t -> {
            List<Context> contexts = new ArrayList<>();
            for (Webapp app : apps) {
                contexts.add(app.deploy(t, unpackRoot));
            }
            return contexts;
        });
    }

    private interface Deploy {
        List<Context> into(Tomcat tomcat) throws Exception;
    }

    private TomcatEngine(Path base, Deploy deploy) throws LifecycleException {
        tomcat = new Tomcat();
        tomcat.setBaseDir(base.toString());
        Connector connector = NginxRequest.connector(protocol);
        tomcat.setConnector(connector);
        quietErrorPages(tomcat.getHost());
        List<Context> contexts;
        try {
            contexts = deploy.into(tomcat);
            // sessions shared by the workers (runtime/servlet/README.md, Sessions)
            contexts.forEach(SharedSessions::install);
        } catch (RuntimeException | java.io.IOException e) {
            throw new LifecycleException(e.getMessage(), e);
        } catch (Exception e) {
            throw new LifecycleException(e.toString(), e);
        }
        tomcat.start();
        for (Context context : contexts) {
            if (context.getState() != LifecycleState.STARTED) {
                // Tomcat logs why (a web.xml that does not parse, a listener
                // or a servlet that threw) and goes on without the context:
                // a worker that cannot serve its application must not serve 404s
                String path = context.getPath().isEmpty() ? "/" : context.getPath();
                stop();
                throw new LifecycleException("the web application at " + path + " did not start ("
                        + context.getState() + "): Tomcat's reason is logged above");
            }
        }
        timer.scheduleWithFixedDelay(this::checkTimeouts, 1, 1, TimeUnit.SECONDS);
    }

    /**
     * The engine's error pages without "Apache Tomcat/11.0.x" (a server's
     * version is nginx's to tell: server_tokens) and without the
     * exception's stack trace, which goes to the log instead.
     */
    static void quietErrorPages(Host host) {
        ErrorReportValve errors = new ErrorReportValve();
        errors.setShowServerInfo(false);
        errors.setShowReport(false);
        host.getPipeline().addValve(errors);
    }

    private static ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }

    /**
     * Any thread: serves one request on the calling thread; with a
     * responder answers through it (and returns null).
     */
    public nginx.jvm.Response serve(nginx.jvm.Request r, nginx.jvm.Responder responder) throws Exception {
        NginxProcessor p = idle.poll();
        if (p == null) {
            p = new NginxProcessor(protocol.getAdapter(), this);
        }
        return p.serve(r, responder);
    }

    /** The processor's exchange is over: it is recycled and kept for the next. */
    void release(NginxProcessor p) {
        p.recycle();
        idle.offer(p);
    }

    /** Runs an async servlet's event (complete, dispatch, timeout). */
    void execute(Runnable event) {
        async.execute(event);
    }

    /** Async requests under way: their timeouts are checked every second. */
    void waiting(NginxProcessor p, boolean yes) {
        if (yes) {
            waiting.add(p);
        } else {
            waiting.remove(p);
        }
    }

    /** How long a synchronous handler waits for an async servlet. */
    long syncWaitMillis() {
        return 10 * 60_000L;
    }

    private void checkTimeouts() {
        long now = System.currentTimeMillis();
        for (NginxProcessor p : waiting) {
            p.timeoutAsync(now);
        }
    }

    public void stop() throws LifecycleException {
        timer.shutdownNow();
        async.shutdown();
        tomcat.stop();
        tomcat.destroy();
    }
}
