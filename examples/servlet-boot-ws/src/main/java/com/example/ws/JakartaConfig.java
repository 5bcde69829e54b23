package com.example.ws;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.socket.server.standard.ServerEndpointExporter;

/** Registers the @ServerEndpoint beans (EchoEndpoint, PushEndpoint) with the container's Jakarta WebSocket. */
@Configuration
public class JakartaConfig {
    @Bean
    public ServerEndpointExporter serverEndpointExporter() {
        return new ServerEndpointExporter();
    }
}
