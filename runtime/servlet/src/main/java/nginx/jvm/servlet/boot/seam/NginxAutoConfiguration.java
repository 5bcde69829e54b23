package nginx.jvm.servlet.boot.seam;

import nginx.jvm.servlet.boot.Bridge;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The seam's Spring Boot auto-configuration (listed in the seam jar's
 * META-INF/spring/org.springframework.boot.autoconfigure.AutoConfiguration.imports):
 * the connector customizer, and the signal that the application is ready
 * to serve. Inert unless BootHandler started the application.
 */
@Configuration(proxyBeanMethods = false)
public class NginxAutoConfiguration {
    @Bean
    static NginxConnectorCustomizer nginxJvmConnectorCustomizer() {
        return new NginxConnectorCustomizer();
    }

    @Bean
    static Ready nginxJvmReady() {
        return new Ready();
    }

    /** Boot's ApplicationReadyEvent: the runners ran, the application serves. */
    static final class Ready implements ApplicationListener<ApplicationReadyEvent> {
        @Override
        public void onApplicationEvent(ApplicationReadyEvent event) {
            if (Bridge.active()) {
                Bridge.ready();
            }
        }
    }
}
