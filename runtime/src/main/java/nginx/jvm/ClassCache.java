package nginx.jvm;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Stream;

/**
 * Builds the class cache of {@code jvm_cache} in an entry directory the
 * master chose (named by a hash of the class path's contents): the handlers'
 * Clojure namespaces compiled ahead of time into {@code app.jar}, and every
 * directory of the class path copied into a jar ({@code cp<i>.jar}, i its
 * position), because Class Data Sharing maps no class loaded after a
 * non-empty directory on the class path. The JVM that archives the loaded
 * classes is a second one, started by the master on the new class path.
 */
final class ClassCache {
    private ClassCache() {
    }

    /** Returns null on success, otherwise what went wrong. */
    static String build(String dir, String[] classpath, String[] names) {
        Path entry = Path.of(dir);
        Path classes = entry.resolve("classes");
        try {
            Files.createDirectories(classes);
            List<String> vars = new ArrayList<>();
            for (String name : names) {
                if (Handlers.isClojureVar(name)) {
                    vars.add(name);
                }
            }
            if (!vars.isEmpty()) {
                Method compile = Class.forName("nginx.jvm.RingCompiler")
                        .getDeclaredMethod("compile", String.class, List.class);
                compile.invoke(null, classes.toString(), vars);
            }
            jar(classes, entry.resolve("app.jar"), true);
            for (int i = 0; i < classpath.length; i++) {
                Path p = Path.of(classpath[i]);
                if (Files.isDirectory(p)) {
                    jar(p, entry.resolve("cp" + i + ".jar"), false);
                }
            }
            delete(classes);
            return null;
        } catch (java.lang.reflect.InvocationTargetException e) {
            return Failure.describe("jvm_cache: compiling the handlers' namespaces failed",
                    e.getCause());
        } catch (Throwable t) {
            return Failure.describe("jvm_cache: building the class cache in " + dir + " failed", t);
        }
    }

    /**
     * A jar of every file under {@code root}, in a fixed order. Compiled
     * classes get the current time: Clojure loads a namespace's class only
     * when it is newer than its source. Copied files keep their own times.
     */
    private static void jar(Path root, Path jar, boolean now) throws IOException {
        List<Path> files;
        try (Stream<Path> walk = Files.walk(root)) {
            files = walk.filter(Files::isRegularFile).sorted(Comparator.comparing(Path::toString))
                    .toList();
        }
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        Path tmp = jar.resolveSibling(jar.getFileName() + ".tmp");
        long time = System.currentTimeMillis();
        try (OutputStream out = Files.newOutputStream(tmp);
             JarOutputStream jo = new JarOutputStream(out, manifest)) {
            for (Path f : files) {
                String name = root.relativize(f).toString().replace(File.separatorChar, '/');
                JarEntry e = new JarEntry(name);
                e.setLastModifiedTime(now ? FileTime.fromMillis(time)
                                          : Files.getLastModifiedTime(f));
                jo.putNextEntry(e);
                Files.copy(f, jo);
                jo.closeEntry();
            }
        }
        Files.move(tmp, jar, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    private static void delete(Path root) throws IOException {
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
