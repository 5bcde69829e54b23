package com.example.boot;

import jakarta.annotation.PreDestroy;
import java.util.Arrays;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.core.env.Environment;

/** An ordinary Spring Boot application: its main is all there is to start it. */
@SpringBootApplication
public class Application {
    private final Environment env;

    @Value("${app.greeting}")
    private String greeting;

    public Application(Environment env) {
        this.env = env;
    }

    /** A setting the application cannot run without: its context fails to start. */
    @jakarta.annotation.PostConstruct
    public void check() {
        if (greeting.isBlank()) {
            throw new IllegalStateException("app.greeting must not be blank");
        }
    }

    public static void main(String[] args) {
        SpringApplication.run(Application.class, args);
    }

    /** One line once it serves: the properties an operator sets (-Dapp.greeting, profiles). */
    @EventListener(ApplicationReadyEvent.class)
    public void ready() {
        System.out.println("example: ready, app.greeting=" + greeting + ", profiles="
                + Arrays.toString(env.getActiveProfiles()) + ", server.port="
                + env.getProperty("server.port"));
    }

    @PreDestroy
    public void closing() {
        System.out.println("example: the application context is closing");
    }
}
