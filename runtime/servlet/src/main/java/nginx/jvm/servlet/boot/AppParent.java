package nginx.jvm.servlet.boot;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.util.Collections;
import java.util.Enumeration;

/**
 * The parent of a Spring Boot application's class loader beneath nginx:
 * the system class loader (the JDK, nginx-jvm's API, Boot's launcher at
 * the jar's root), less what the application must not take from it.
 * <ul>
 * <li>{@code META-INF/services/*}: a provider there is linked against
 *     the system class path, not the application's libraries; nginx-jvm's
 *     SLF4J provider, seen by the application's slf4j-api, fails its start
 *     with a NoClassDefFoundError (org/slf4j/spi/SLF4JServiceProvider).
 *     The JDK's own providers are found through its modules, not here.</li>
 * <li>the classes of nginx.jvm.servlet (but {@link Bridge}): the seam's
 *     come from the seam jar, next to the application's Tomcat, even if a
 *     servlet jar is on the worker's class path.</li>
 * </ul>
 * It defines {@link NginxJarLauncher} and {@link NginxWarLauncher}
 * itself, so that Boot, which takes the launcher class's loader as the
 * parent, takes this one.
 */
final class AppParent extends ClassLoader {
    static {
        registerAsParallelCapable();
    }

    private static final String JAR_LAUNCHER = NginxJarLauncher.class.getName();
    private static final String WAR_LAUNCHER = NginxWarLauncher.class.getName();
    private static final String BRIDGE = Bridge.class.getName();

    AppParent(ClassLoader system) {
        super("nginx-jvm-boot", system);
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        if (name.equals(JAR_LAUNCHER) || name.equals(WAR_LAUNCHER)) {
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    byte[] b = bytes(name);
                    c = defineClass(name, b, 0, b.length, AppParent.class.getProtectionDomain());
                }
                return c;
            }
        }
        if (name.startsWith("nginx.jvm.servlet.") && !name.equals(BRIDGE)) {
            throw new ClassNotFoundException(name);
        }
        return super.loadClass(name, resolve);
    }

    private static byte[] bytes(String name) throws ClassNotFoundException {
        String file = name.replace('.', '/') + ".class";
        try (InputStream in = AppParent.class.getClassLoader().getResourceAsStream(file)) {
            if (in == null) {
                throw new ClassNotFoundException(name);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new ClassNotFoundException(name, e);
        }
    }

    private static boolean hidden(String name) {
        return name.startsWith("META-INF/services/")
                || (name.startsWith("nginx/jvm/servlet/") && !name.equals(BRIDGE.replace('.', '/') + ".class"));
    }

    @Override
    public URL getResource(String name) {
        return hidden(name) ? null : super.getResource(name);
    }

    @Override
    public Enumeration<URL> getResources(String name) throws IOException {
        return hidden(name) ? Collections.emptyEnumeration() : super.getResources(name);
    }
}
