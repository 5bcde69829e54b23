package nginx.jvm.servlet.tomcat;

import java.io.IOException;
import java.net.URL;
import java.util.Collections;
import java.util.Enumeration;

/**
 * The parent of a web application's class loader: the worker's class
 * loader, less nginx-jvm's SLF4J provider when the worker has no SLF4J of
 * its own. A WAR that brings slf4j-api (a Spring Boot WAR, with Logback)
 * would find that provider's service file through its parent (service
 * files are looked up in every loader), whose class is linked against an
 * SLF4J the worker does not have: the application's start fails with a
 * NoClassDefFoundError (org/slf4j/spi/SLF4JServiceProvider).
 */
final class WebappParent extends ClassLoader {
    private static final String PROVIDER = "META-INF/services/org.slf4j.spi.SLF4JServiceProvider";

    static {
        registerAsParallelCapable();
    }

    private final boolean hide;

    WebappParent(ClassLoader parent) {
        super("nginx-jvm-webapp-parent", parent);
        boolean has;
        try {
            Class.forName("org.slf4j.spi.SLF4JServiceProvider", false, parent);
            has = true;
        } catch (ClassNotFoundException | LinkageError e) {
            has = false;
        }
        hide = !has;
    }

    @Override
    public URL getResource(String name) {
        return hide && name.equals(PROVIDER) ? null : super.getResource(name);
    }

    @Override
    public Enumeration<URL> getResources(String name) throws IOException {
        return hide && name.equals(PROVIDER) ? Collections.emptyEnumeration() : super.getResources(name);
    }
}
