package nginx.jvm.servlet.boot;

import java.net.URL;
import java.util.LinkedHashSet;
import java.util.Set;
import org.springframework.boot.loader.launch.JarLauncher;

/**
 * The application jar's own JarLauncher (Boot 3.2 and newer: the class
 * and what is overridden here are the same in Boot 3.5 and 4), with the
 * seam jar last on the application's class path. Defined by
 * {@link AppParent}, never by the system class loader: Boot makes the
 * application's class loader a child of the launcher class's loader, so
 * the application sees the system class path through AppParent's filter.
 */
public final class NginxJarLauncher extends JarLauncher {
    private final URL seam;

    private NginxJarLauncher(URL seam) throws Exception {
        this.seam = seam;
    }

    @Override
    protected Set<URL> getClassPathUrls() throws Exception {
        Set<URL> urls = new LinkedHashSet<>(super.getClassPathUrls());
        urls.add(seam);
        return urls;
    }

    /** As JarLauncher.main: the application's main method, on this thread. */
    public static void launch(URL seam, String[] args) throws Exception {
        new NginxJarLauncher(seam).launch(args);
    }
}
