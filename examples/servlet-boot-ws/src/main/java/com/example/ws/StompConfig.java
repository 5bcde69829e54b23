package com.example.ws;

import org.springframework.context.annotation.Configuration;
import org.springframework.messaging.simp.config.MessageBrokerRegistry;
import org.springframework.web.socket.config.annotation.EnableWebSocketMessageBroker;
import org.springframework.web.socket.config.annotation.StompEndpointRegistry;
import org.springframework.web.socket.config.annotation.WebSocketMessageBrokerConfigurer;

/**
 * STOMP over WebSocket at /stomp: messages SENT to /app/... go to the
 * controller's @MessageMapping methods; /topic/... is Spring's simple
 * broker, in memory (each worker's own, beneath nginx).
 */
@Configuration
@EnableWebSocketMessageBroker
public class StompConfig implements WebSocketMessageBrokerConfigurer {
    @Override
    public void registerStompEndpoints(StompEndpointRegistry registry) {
        // a connection's frames are handled in the order they came: a
        // SUBSCRIBE before the SEND that follows it
        registry.addEndpoint("/stomp");
        registry.setPreserveReceiveOrder(true);
    }

    @Override
    public void configureMessageBroker(MessageBrokerRegistry registry) {
        registry.enableSimpleBroker("/topic");
        registry.setApplicationDestinationPrefixes("/app");
        // and a connection's messages leave in the order they were published
        registry.setPreservePublishOrder(true);
    }
}
