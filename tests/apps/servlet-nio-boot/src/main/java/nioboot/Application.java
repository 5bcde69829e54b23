package nioboot;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.server.servlet.context.ServletComponentScan;

/** The @WebServlet classes of package nio (test_servlet_nio's), registered by Boot. */
@SpringBootApplication
@ServletComponentScan(basePackages = "nio")
public class Application {
    public static void main(String[] args) {
        SpringApplication.run(Application.class, args);
    }
}
