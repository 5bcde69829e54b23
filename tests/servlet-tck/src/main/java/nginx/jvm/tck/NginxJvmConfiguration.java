package nginx.jvm.tck;

import org.jboss.arquillian.container.spi.ConfigurationException;
import org.jboss.arquillian.container.spi.client.container.ContainerConfiguration;

/**
 * Where the launcher is and how it runs each WAR. Arquillian fills the
 * fields from arquillian.xml when there is one; the TCK's run has none, so
 * they default to the system properties the pom passes to surefire.
 */
public final class NginxJvmConfiguration implements ContainerConfiguration {
    private String launcher = System.getProperty("nginx.jvm.tck.launcher", "bin/nginx-jvm");
    private int workers = Integer.getInteger("nginx.jvm.tck.workers", 1);
    private String logs = System.getProperty("nginx.jvm.tck.logs", "target/tck-logs");
    private String mode = System.getProperty("nginx.jvm.tck.mode", "pool");
    private int startSeconds = Integer.getInteger("nginx.jvm.tck.startSeconds", 90);
    /** JVM options for the workers, split on spaces: each one --jvm-option. */
    private String jvmOptions = System.getProperty("nginx.jvm.tck.jvmOptions", "");
    /** nginx directives for the server block (--server), or empty. */
    private String server = System.getProperty("nginx.jvm.tck.server", "");

    @Override
    public void validate() throws ConfigurationException {
        if (!new java.io.File(launcher).canExecute())
            throw new ConfigurationException("no launcher at " + launcher
                    + " (nginx.jvm.tck.launcher)");
        if (workers < 1)
            throw new ConfigurationException("workers must be 1 or more");
    }

    public String getLauncher() { return launcher; }
    public void setLauncher(String launcher) { this.launcher = launcher; }
    public int getWorkers() { return workers; }
    public void setWorkers(int workers) { this.workers = workers; }
    public String getLogs() { return logs; }
    public void setLogs(String logs) { this.logs = logs; }
    public String getMode() { return mode; }
    public void setMode(String mode) { this.mode = mode; }
    public String getJvmOptions() { return jvmOptions; }
    public void setJvmOptions(String jvmOptions) { this.jvmOptions = jvmOptions; }
    public String getServer() { return server; }
    public void setServer(String server) { this.server = server; }
    public int getStartSeconds() { return startSeconds; }
    public void setStartSeconds(int startSeconds) { this.startSeconds = startSeconds; }
}
