package nginx.jvm.servlet.boot.seam;

import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import nginx.jvm.AsyncHandler;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;
import nginx.jvm.servlet.boot.Bridge;
import nginx.jvm.servlet.jetty.NginxConnector;
import nginx.jvm.servlet.jetty.SharedSessionDataStore;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.util.Jetty;
import org.eclipse.jetty.util.component.LifeCycle;
import org.springframework.boot.web.server.ConfigurableWebServerFactory;

/**
 * A Spring Boot application on the Jetty starter beneath nginx: its
 * Server's connectors are replaced by one {@link NginxConnector}, which
 * listens on nothing; when Boot starts it (once the application context is
 * refreshed), requests come from nginx through it, into the application's
 * own Jetty handlers, and it is handed to BootHandler through the
 * {@link Bridge}.
 *
 * <p>Boot's API for it is a JettyServerCustomizer given to the factory's
 * addServerCustomizers; both moved packages between Boot 3
 * (org.springframework.boot.web.embedded.jetty) and Boot 4
 * (org.springframework.boot.jetty), so the customizer is a proxy of
 * whichever interface the factory takes. The seam's Jetty side is built
 * twice from these sources (runtime/servlet/pom.xml): against Jetty 12.1
 * and its ee11 servlets (Boot 4), in nginx-jvm-servlet-boot-seam.jar, and
 * against Jetty 12.0 with "ee11" replaced by "ee10" (Boot 3.5), in
 * nginx-jvm-servlet-boot-seam-jetty12.0.jar; BootHandler picks the one the
 * application's Jetty takes. Any other Jetty (11: Boot 3.0 to 3.1) is
 * refused with a message that says so.
 */
final class JettyBoot {
    /** The servlet layer this build of the seam is compiled against (ee10 in the Jetty 12.0 build). */
    private static final String SERVLETS = "org.eclipse.jetty.ee11.servlet";

    private JettyBoot() {
    }

    static void customize(ConfigurableWebServerFactory factory) {
        if (!servletsPresent()) {
            String why = "nginx-jvm serves Spring Boot's Jetty starter on Jetty 12.0 (Spring Boot 3.5, ee10"
                    + " servlets) and 12.1 (Spring Boot 4, ee11), and this application has Jetty " + Jetty.VERSION
                    + ", without " + SERVLETS + " (nginx.jvm.boot.seam named the seam jar of another Jetty?):"
                    + " take Spring Boot 3.5 or 4, or the Tomcat starter";
            Bridge.problem(why);
            throw new IllegalStateException(why);
        }
        try {
            Method add = addServerCustomizers(factory.getClass());
            Class<?> type = add.getParameterTypes()[0].getComponentType();
            Object customizer = Proxy.newProxyInstance(JettyBoot.class.getClassLoader(), new Class<?>[] {type},
                    (proxy, method, args) -> {
                        switch (method.getName()) {
                            case "customize":
                                replaceConnectors((Server) args[0]);
                                return null;
                            case "hashCode":
                                return System.identityHashCode(proxy);
                            case "equals":
                                return proxy == args[0];
                            default:
                                return "nginx-jvm's connector";
                        }
                    });
            Object array = java.lang.reflect.Array.newInstance(type, 1);
            java.lang.reflect.Array.set(array, 0, customizer);
            add.invoke(factory, array);
            // as for Tomcat: what Boot logs, and its document base's name, say no port
            factory.setPort(0);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot customize the Jetty of " + factory.getClass().getName() + ": "
                    + e, e);
        }
    }

    private static boolean servletsPresent() {
        try {
            Class.forName(SERVLETS + ".ServletContextHandler", false, JettyBoot.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** The factory's addServerCustomizers(JettyServerCustomizer...), whichever Boot's interface it takes. */
    private static Method addServerCustomizers(Class<?> factory) throws NoSuchMethodException {
        for (Method m : factory.getMethods()) {
            if (m.getName().equals("addServerCustomizers") && m.getParameterCount() == 1
                    && m.getParameterTypes()[0].isArray()) {
                return m;
            }
        }
        throw new NoSuchMethodException(factory.getName() + ".addServerCustomizers(JettyServerCustomizer...)");
    }

    /**
     * Last of the server customizers: Boot's connector (its
     * HttpConfiguration kept: forwarded headers and the like) becomes ours,
     * and the servlet handlers decode what nginx decoded (NginxConnector).
     */
    static void replaceConnectors(Server server) {
        HttpConfiguration config = null;
        for (Connector c : server.getConnectors()) {
            HttpConnectionFactory f = c.getConnectionFactory(HttpConnectionFactory.class);
            if (f != null) {
                config = f.getHttpConfiguration();
                break;
            }
        }
        BootConnector connector = new BootConnector(server, config != null ? config : new HttpConfiguration());
        server.setConnectors(new Connector[] {connector});
        for (ServletContextHandler context : server.getDescendants(ServletContextHandler.class)) {
            context.getServletHandler().setDecodeAmbiguousURIs(true);
            SharedSessionDataStore.install(context);
        }
        server.addEventListener(new Cleanup());
    }

    /**
     * Started by Boot's JettyWebServer once the application context is
     * refreshed, stopped at its close: serves from then on.
     */
    static final class BootConnector extends NginxConnector implements Handler, AsyncHandler {
        /** The application's class loader, the context loader of the requests' threads. */
        private final ClassLoader loader = JettyBoot.class.getClassLoader();

        BootConnector(Server server, HttpConfiguration config) {
            super(server, config);
        }

        @Override
        protected void doStart() throws Exception {
            super.doStart();
            Bridge.engine(this);
        }

        @Override
        protected void doStop() throws Exception {
            if (Bridge.active()) {
                Bridge.engine(null);
            }
            super.doStop();
        }

        @Override
        public Response handle(Request request) throws Exception {
            return serveIn(request, null);
        }

        @Override
        public void handle(Request request, Responder responder) throws Exception {
            serveIn(request, responder);
        }

        private Response serveIn(Request r, Responder responder) throws Exception {
            Thread t = Thread.currentThread();
            ClassLoader was = t.getContextClassLoader();
            t.setContextClassLoader(loader);
            try {
                return serve(r, responder);
            } finally {
                t.setContextClassLoader(was);
            }
        }
    }

    /**
     * When the Server stops (the application's close): Boot's temporary
     * document base ("jetty-docbase.PORT.NNN", made when the jar has no
     * document root) goes; the JVM's own exit, whose deleteOnExit would
     * remove it, does not run in a worker.
     */
    static final class Cleanup implements LifeCycle.Listener {
        @Override
        public void lifeCycleStopped(LifeCycle event) {
            if (!(event instanceof Server server)) {
                return;
            }
            Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
            for (ServletContextHandler context : server.getDescendants(ServletContextHandler.class)) {
                if (context.getBaseResource() == null || context.getBaseResource().getPath() == null) {
                    continue;
                }
                Path d = context.getBaseResource().getPath();
                if (d.getFileName() != null && d.getFileName().toString().startsWith("jetty-docbase.")
                        && tmp.equals(d.getParent())) {
                    NginxConnectorCustomizer.delete(d);
                }
            }
        }
    }
}
