package nginx.jvm.servlet.tomcat;

import java.nio.file.Files;
import java.nio.file.Path;
import nginx.jvm.servlet.App;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.tomcat.util.modeler.Registry;

/**
 * The same web application on a Tomcat of its own, the one nginx-jvm
 * embeds, with its own HTTP connector on 127.0.0.1: what the application
 * is compared with, for conformance (tests/test_servlet_conformance.py)
 * and speed (make bench-servlet: directly, and behind nginx's
 * proxy_pass). Its error pages are made as quiet as nginx-jvm's.
 *
 * <pre>java -cp nginx-jvm-servlet.jar:tomcat-lib/* nginx.jvm.servlet.tomcat.Standalone WAR PORT [CONTEXT]</pre>
 *
 * It prints "ready" once it serves, and runs until killed.
 */
public final class Standalone {
    private Standalone() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: Standalone WAR PORT [CONTEXT]");
            System.exit(2);
        }
        Registry.disableRegistry();
        Path base = Files.createTempDirectory("nginx-jvm-standalone-");
        Runtime.getRuntime().addShutdownHook(new Thread(() -> App.deleteTree(base)));
        Tomcat tomcat = new Tomcat();
        tomcat.setBaseDir(base.toString());
        Connector connector = new Connector("HTTP/1.1");
        connector.setPort(Integer.parseInt(args[1]));
        connector.setProperty("address", "127.0.0.1");
        tomcat.setConnector(connector);
        TomcatEngine.quietErrorPages(tomcat.getHost());
        new Webapp(Path.of(args[0]), args.length > 2 ? args[2] : "").deploy(tomcat, base.resolve("webapps"));
        tomcat.start();
        System.out.println("ready");
        System.out.flush();
        tomcat.getServer().await();
    }
}
