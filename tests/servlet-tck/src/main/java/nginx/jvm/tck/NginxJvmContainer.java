package nginx.jvm.tck;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.jboss.arquillian.container.spi.client.container.DeployableContainer;
import org.jboss.arquillian.container.spi.client.container.DeploymentException;
import org.jboss.arquillian.container.spi.client.container.LifecycleException;
import org.jboss.arquillian.container.spi.client.protocol.ProtocolDescription;
import org.jboss.arquillian.container.spi.client.protocol.metadata.HTTPContext;
import org.jboss.arquillian.container.spi.client.protocol.metadata.ProtocolMetaData;
import org.jboss.arquillian.container.spi.client.protocol.metadata.Servlet;
import org.jboss.shrinkwrap.api.Archive;
import org.jboss.shrinkwrap.api.exporter.ZipExporter;

/**
 * An Arquillian container that is nginx-jvm as a user runs it: each
 * deployment is its own {@code nginx-jvm run --war WAR --context-path /CTX}
 * on a free port of 127.0.0.1, started at deploy and stopped (TERM, by its
 * process id) at undeploy. The context path is the archive's name without
 * ".war", as a standalone Tomcat deploys a file of that name.
 *
 * <p>Only client-side tests ({@code @Deployment(testable = false)}, which is
 * every one of the Servlet TCK's) are run: no protocol is packaged into the
 * WAR, the test talks HTTP to the URL given back.
 */
public final class NginxJvmContainer implements DeployableContainer<NginxJvmConfiguration> {
    private NginxJvmConfiguration config;
    private Path scratch;
    private final Map<String, Running> running = new ConcurrentHashMap<>();

    private record Running(Process process, Path war, Path log) {}

    @Override
    public Class<NginxJvmConfiguration> getConfigurationClass() {
        return NginxJvmConfiguration.class;
    }

    @Override
    public void setup(NginxJvmConfiguration configuration) {
        this.config = configuration;
    }

    @Override
    public void start() throws LifecycleException {
        try {
            // the workers run as another user (nobody): the WARs must be
            // readable by it, as under /tmp
            scratch = Files.createTempDirectory("nginx-jvm-tck-");
            Files.setPosixFilePermissions(scratch, PosixFilePermissions.fromString("rwxrwxrwx"));
            Files.createDirectories(Path.of(config.getLogs()));
            // a test JVM stopped before its undeploy (a timeout, Ctrl-C)
            // leaves no launcher behind
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                for (Running r : running.values())
                    r.process().destroy();
            }, "nginx-jvm-tck-stop"));
        } catch (IOException e) {
            throw new LifecycleException("no scratch directory", e);
        }
    }

    @Override
    public void stop() throws LifecycleException {
        for (String name : new ArrayList<>(running.keySet()))
            end(running.remove(name));
        if (scratch != null) {
            try (Stream<Path> s = Files.walk(scratch)) {
                s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                // a temporary directory left behind
            }
        }
    }

    @Override
    public ProtocolDescription getDefaultProtocol() {
        return new ProtocolDescription("Local");
    }

    @Override
    public ProtocolMetaData deploy(Archive<?> archive) throws DeploymentException {
        String name = archive.getName();
        String context = "/" + (name.endsWith(".war") ? name.substring(0, name.length() - 4) : name);
        Path war = scratch.resolve(name);
        archive.as(ZipExporter.class).exportTo(war.toFile(), true);
        war.toFile().setReadable(true, false);
        int port = freePort();
        Path log = Path.of(config.getLogs(), name + ".log");
        List<String> command = new ArrayList<>(List.of(config.getLauncher(), "run",
                "--war", war.toString(), "--context-path", context,
                "--port", Integer.toString(port),
                "--workers", Integer.toString(config.getWorkers()),
                "--mode", config.getMode(), "--cache", "off"));
        for (String option : config.getJvmOptions().trim().split("\\s+")) {
            if (!option.isEmpty())
                command.addAll(List.of("--jvm-option", option));
        }
        if (!config.getServer().isBlank())
            command.addAll(List.of("--server", config.getServer()));
        Process process;
        try {
            Files.writeString(log, String.join(" ", command) + "\n");
            process = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                    .start();
        } catch (IOException e) {
            throw new DeploymentException("cannot start " + command, e);
        }
        Running r = new Running(process, war, log);
        running.put(name, r);
        try {
            awaitAnswer(process, port, context, log);
        } catch (DeploymentException e) {
            running.remove(name);
            end(r);
            throw e;
        }
        HTTPContext http = new HTTPContext("127.0.0.1", port);
        // one servlet entry names the context: the TCK's URL is its base
        http.add(new Servlet("nginx-jvm", context));
        return new ProtocolMetaData().addContext(http);
    }

    @Override
    public void undeploy(Archive<?> archive) throws DeploymentException {
        Running r = running.remove(archive.getName());
        if (r != null)
            end(r);
    }

    /** TERM by process id, waited for; KILL if it does not end in 20 s. */
    private static void end(Running r) {
        if (r == null)
            return;
        Process p = r.process();
        p.destroy();
        try {
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        r.war().toFile().delete();
    }

    private static int freePort() throws DeploymentException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new DeploymentException("no free port", e);
        }
    }

    /**
     * Waits until nginx answers a GET with a status line: the workers load
     * the application before they accept, so an answer means it is
     * deployed. The GET is of a path beside the context (Tomcat's 404 for
     * no context), not in it: a request the application saw would be in
     * what its listeners count (SrListenerTests).
     */
    private void awaitAnswer(Process process, int port, String context, Path log)
            throws DeploymentException {
        String probe = context.equals("/") ? "/" : "/nginx-jvm-tck-probe/";
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(config.getStartSeconds());
        while (System.nanoTime() < deadline) {
            if (!process.isAlive())
                throw new DeploymentException("nginx-jvm exited with " + process.exitValue()
                        + " before it answered:\n" + tail(log));
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
                s.setSoTimeout(config.getStartSeconds() * 1000);
                OutputStream out = s.getOutputStream();
                out.write(("GET " + probe + " HTTP/1.1\r\nHost: 127.0.0.1:" + port
                        + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.flush();
                InputStream in = s.getInputStream();
                byte[] head = in.readNBytes(12);
                if (head.length == 12 && new String(head, StandardCharsets.US_ASCII).startsWith("HTTP/1.1 "))
                    return;
            } catch (IOException e) {
                // not listening yet
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new DeploymentException("interrupted", e);
            }
        }
        throw new DeploymentException("nginx-jvm did not answer on port " + port
                + " in " + config.getStartSeconds() + " s:\n" + tail(log));
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }
}
