package nginx.jvm.servlet.boot.seam;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import nginx.jvm.servlet.boot.Bridge;
import org.apache.catalina.Context;
import org.apache.catalina.Lifecycle;
import org.apache.catalina.LifecycleEvent;
import org.apache.catalina.LifecycleListener;
import org.springframework.boot.web.server.ConfigurableWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.context.EnvironmentAware;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;

/**
 * Makes the application's Tomcat use {@link BootProtocol} for its
 * Connector, in place of its HTTP/1.1 connector: it then listens on no
 * port (the Jetty starter's: {@link JettyBoot}). Boot's own API for it, TomcatServletWebServerFactory.setProtocol,
 * is called by name: the class moved between Boot 3
 * (org.springframework.boot.web.embedded.tomcat) and Boot 4
 * (org.springframework.boot.tomcat.servlet), and this seam serves both.
 * Last of the customizers, so that none sets the protocol back.
 */
public final class NginxConnectorCustomizer
        implements WebServerFactoryCustomizer<ConfigurableWebServerFactory>, Ordered, EnvironmentAware {
    private Environment env;

    static final String[] TOMCAT_SERVLET_FACTORIES = {
        "org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory",
        "org.springframework.boot.web.embedded.tomcat.TomcatServletWebServerFactory",
    };

    /** Jetty's (Boot 4, Boot 3), by name: Jetty's classes are loaded only for a Jetty application. */
    static final String[] JETTY_SERVLET_FACTORIES = {
        "org.springframework.boot.jetty.servlet.JettyServletWebServerFactory",
        "org.springframework.boot.web.embedded.jetty.JettyServletWebServerFactory",
    };

    @Override
    public void customize(ConfigurableWebServerFactory factory) {
        if (!Bridge.active()) {
            return;                 // java -jar: the application's own server, untouched
        }
        if (isServletFactory(factory.getClass(), JETTY_SERVLET_FACTORIES)) {
            JettyBoot.customize(factory);
            return;
        }
        if (!isTomcatServlet(factory.getClass())) {
            String why = "nginx-jvm serves Spring Boot servlet applications on Tomcat (spring-boot-starter-web"
                    + " or -webmvc) or Jetty (spring-boot-starter-jetty), and this one's web server is "
                    + factory.getClass().getName();
            Bridge.problem(why);
            throw new IllegalStateException(why);
        }
        try {
            Method setProtocol = factory.getClass().getMethod("setProtocol", String.class);
            setProtocol.invoke(factory, BootProtocol.class.getName());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot set the protocol of " + factory.getClass().getName() + ": " + e, e);
        }
        // the port is nginx's: the connector listens on none whatever it
        // says, and 0 (not server.port=-1) keeps Boot starting it
        factory.setPort(0);
        // Tomcat's base (its work directory, multipart uploads) in a
        // directory of ours; it and Boot's temporary document base go when
        // the application's context is destroyed: the JVM's own exit, whose
        // deleteOnExit would remove the latter, does not run in a worker
        Path base = null;
        if (env == null || !env.containsProperty("server.tomcat.basedir")) {
            try {
                Path dir = Files.createTempDirectory("nginx-jvm-boot-" + ProcessHandle.current().pid() + "-");
                factory.getClass().getMethod("setBaseDirectory", File.class).invoke(factory, dir.toFile());
                base = dir;
            } catch (IOException | ReflectiveOperationException e) {
                // Boot's own temporary directory then
            }
        }
        try {
            Method add = factory.getClass().getMethod("addContextLifecycleListeners", LifecycleListener[].class);
            add.invoke(factory, (Object) new LifecycleListener[] {new Cleanup(base), new Sessions()});
        } catch (ReflectiveOperationException e) {
            // the directories stay
        }
    }

    /**
     * Before the application's context starts (Boot has set its manager):
     * HttpSessions shared by the workers, as for a WAR
     * (nginx.jvm.servlet.tomcat.SharedSessions: the dictionary "sessions",
     * or the store -Dnginx.jvm.servlet.sessions names).
     */
    static final class Sessions implements LifecycleListener {
        @Override
        public void lifecycleEvent(LifecycleEvent event) {
            if (Lifecycle.BEFORE_START_EVENT.equals(event.getType())
                    && event.getLifecycle() instanceof Context context) {
                nginx.jvm.servlet.tomcat.SharedSessions.install(context);
            }
        }
    }

    /** At the context's destruction (the application's close): the temporary directories go. */
    static final class Cleanup implements LifecycleListener {
        private final Path base;

        Cleanup(Path base) {
            this.base = base;
        }

        @Override
        public void lifecycleEvent(LifecycleEvent event) {
            if (!Lifecycle.AFTER_DESTROY_EVENT.equals(event.getType())
                    || !(event.getLifecycle() instanceof Context context)) {
                return;
            }
            if (base != null) {
                delete(base);
            }
            // Boot's "tomcat-docbase.PORT.NNN", made when the jar has no document root
            String docBase = context.getDocBase();
            if (docBase != null) {
                Path d = Path.of(docBase);
                Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
                if (d.getFileName() != null && d.getFileName().toString().startsWith("tomcat-docbase.")
                        && tmp.equals(d.getParent())) {
                    delete(d);
                }
            }
        }
    }

    static void delete(Path dir) {
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // gone already
        }
    }

    @Override
    public void setEnvironment(Environment environment) {
        this.env = environment;
    }

    static boolean isTomcatServlet(Class<?> c) {
        return isServletFactory(c, TOMCAT_SERVLET_FACTORIES);
    }

    static boolean isServletFactory(Class<?> c, String[] names) {
        for (; c != null; c = c.getSuperclass()) {
            for (String name : names) {
                if (c.getName().equals(name)) {
                    return true;
                }
            }
        }
        return false;
    }

    @Override
    public int getOrder() {
        return Ordered.LOWEST_PRECEDENCE;
    }
}
