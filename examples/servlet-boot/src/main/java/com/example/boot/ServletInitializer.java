package com.example.boot;

import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.servlet.support.SpringBootServletInitializer;

/**
 * The application deployed as a WAR (mvn -Pwar) in a servlet container:
 * the container's scan finds Spring's ServletContainerInitializer, which
 * calls this (a WebApplicationInitializer), which starts the application
 * in the container's own ServletContext. Unused when main starts it.
 */
public class ServletInitializer extends SpringBootServletInitializer {
    @Override
    protected SpringApplicationBuilder configure(SpringApplicationBuilder builder) {
        return builder.sources(Application.class);
    }
}
