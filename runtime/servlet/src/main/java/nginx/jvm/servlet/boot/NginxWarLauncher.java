package nginx.jvm.servlet.boot;

import java.net.URL;
import java.util.LinkedHashSet;
import java.util.Set;
import org.springframework.boot.loader.launch.WarLauncher;

/**
 * {@link NginxJarLauncher} for an executable WAR ({@code java -jar
 * app.war}): the WAR's own WarLauncher, whose class path is WEB-INF/classes,
 * WEB-INF/lib and WEB-INF/lib-provided (the embedded Tomcat a servlet
 * container would have provided), with the seam jar last. Defined by
 * {@link AppParent} for the same reason.
 */
public final class NginxWarLauncher extends WarLauncher {
    private final URL seam;

    private NginxWarLauncher(URL seam) throws Exception {
        this.seam = seam;
    }

    @Override
    protected Set<URL> getClassPathUrls() throws Exception {
        Set<URL> urls = new LinkedHashSet<>(super.getClassPathUrls());
        urls.add(seam);
        return urls;
    }

    /** As WarLauncher.main: the application's main method, on this thread. */
    public static void launch(URL seam, String[] args) throws Exception {
        new NginxWarLauncher(seam).launch(args);
    }
}
