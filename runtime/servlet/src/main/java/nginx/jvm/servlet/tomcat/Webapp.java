package nginx.jvm.servlet.tomcat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;
import java.util.zip.ZipFile;
import nginx.jvm.servlet.App;
import org.apache.catalina.Context;
import org.apache.catalina.startup.Tomcat;

/**
 * A web application (a WAR file or an exploded directory) deployed into the
 * worker's Tomcat as a standalone Tomcat deploys one: {@code web.xml},
 * annotations and {@code ServletContainerInitializer}s (Tomcat's
 * {@code ContextConfig}), the default and JSP servlets, welcome files.
 *
 * <p>A WAR file is unpacked first, so that {@code getRealPath} and the
 * static files have a directory: into {@code unpackRoot} when one is given
 * (the launcher gives its temporary prefix, so every worker reads one copy
 * and the copy goes when it stops), else into the worker's scratch
 * directory. Workers race to unpack into the shared root; each unpacks into
 * a directory of its own and renames it into place, and the one that
 * loses removes its copy and takes the winner's.
 */
public final class Webapp {
    private final Path war;
    private final String contextPath;

    /**
     * @param war         a {@code .war} file or a directory laid out as one
     * @param contextPath "" for the root, else "/app" ("/" is taken as "")
     */
    public Webapp(Path war, String contextPath) {
        this.war = war.toAbsolutePath().normalize();
        this.contextPath = normalizeContextPath(contextPath);
    }

    /** "", "/", "/app", "/app/" and "app" all said as a context path: "" or "/app". */
    static String normalizeContextPath(String path) {
        if (path == null) {
            return "";
        }
        String p = path.strip();
        while (p.endsWith("/")) {
            p = p.substring(0, p.length() - 1);
        }
        if (!p.isEmpty() && !p.startsWith("/")) {
            p = "/" + p;
        }
        if (p.contains("//") || p.contains(";") || p.contains("?") || p.contains("%")) {
            throw new IllegalArgumentException("the context path \"" + path
                    + "\" is not a path: one or more segments, such as /app");
        }
        return p;
    }

    public String contextPath() {
        return contextPath;
    }

    /** The document base the context serves from: the directory, or the WAR unpacked. */
    Path docBase(Path unpackRoot) throws IOException {
        if (Files.isDirectory(war)) {
            if (!Files.isDirectory(war.resolve("WEB-INF")) && !Files.exists(war.resolve("index.html"))
                    && !Files.exists(war.resolve("index.jsp"))) {
                throw new IllegalArgumentException(war + " is a directory but not a web application"
                        + " (no WEB-INF, index.html or index.jsp in it)");
            }
            return war;
        }
        if (!Files.isRegularFile(war)) {
            throw new IllegalArgumentException(war + ": no such WAR file or directory, or the"
                    + " workers' user (" + System.getProperty("user.name") + ") cannot reach it");
        }
        Files.createDirectories(unpackRoot);
        String name = war.getFileName().toString().replaceAll("\\.war$", "");
        Path target = unpackRoot.resolve(name + "-" + Long.toHexString(
                (war.toString() + ':' + Files.size(war) + ':' + Files.getLastModifiedTime(war).toMillis())
                        .hashCode() & 0xffffffffL));
        if (Files.isDirectory(target)) {
            return target;
        }
        Path mine = Files.createTempDirectory(unpackRoot, name + ".unpacking.");
        try {
            unzip(war, mine);
            try {
                Files.move(mine, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (FileAlreadyExistsException | DirectoryNotEmptyException e) {
                App.deleteTree(mine);  // another worker's copy won
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException("cannot rename " + mine + " to " + target + ": " + e, e);
            }
        } catch (IOException | RuntimeException e) {
            App.deleteTree(mine);
            throw e;
        }
        return target;
    }

    /** A WAR is a zip: every entry under {@code dir}, none outside it. */
    private static void unzip(Path war, Path dir) throws IOException {
        try (ZipFile zip = new ZipFile(war.toFile())) {
            var entries = zip.entries();
            while (entries.hasMoreElements()) {
                ZipEntry e = entries.nextElement();
                Path to = dir.resolve(e.getName()).normalize();
                if (!to.startsWith(dir)) {
                    throw new IOException(war + ": the entry \"" + e.getName()
                            + "\" would be unpacked outside its directory");
                }
                if (e.isDirectory()) {
                    Files.createDirectories(to);
                } else {
                    Files.createDirectories(to.getParent());
                    try (InputStream in = zip.getInputStream(e)) {
                        Files.copy(in, to);
                    }
                }
            }
        } catch (ZipException e) {
            throw new IllegalArgumentException(war + " is not a WAR: not a zip file (" + e.getMessage() + ")", e);
        }
    }

    /** Adds the application to {@code tomcat}'s host; it starts with Tomcat. */
    Context deploy(Tomcat tomcat, Path unpackRoot) throws IOException {
        Path base = docBase(unpackRoot);
        Context context = tomcat.addWebapp(contextPath, base.toString());
        context.setParentClassLoader(new WebappParent(Webapp.class.getClassLoader()));
        if (context instanceof org.apache.catalina.core.StandardContext standard) {
            // leak detection for a redeploy, which a worker never does (it
            // exits): without --add-opens it only warns at each stop
            standard.setClearReferencesThreadLocals(false);
            standard.setClearReferencesRmiTargets(false);
        }
        return context;
    }

    @Override
    public String toString() {
        return war + (contextPath.isEmpty() ? "" : " at " + contextPath);
    }
}
