package com.example.ws;

import org.springframework.messaging.handler.annotation.DestinationVariable;
import org.springframework.messaging.handler.annotation.MessageMapping;
import org.springframework.messaging.handler.annotation.SendTo;
import org.springframework.messaging.simp.SimpMessagingTemplate;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * A chat: what a client SENDs to /app/chat/{room} goes, stamped, to every
 * subscriber of /topic/chat/{room}; a POST to /announce publishes there
 * from plain HTTP.
 */
@RestController
public class ChatController {
    /** What a client sends. */
    public record Say(String from, String text) {
    }

    /** What subscribers get: who said it, and the worker that passed it on. */
    public record Chat(String from, String text, long pid) {
    }

    private final SimpMessagingTemplate broker;

    public ChatController(SimpMessagingTemplate broker) {
        this.broker = broker;
    }

    @MessageMapping("/chat/{room}")
    @SendTo("/topic/chat/{room}")
    public Chat chat(@DestinationVariable String room, Say in) {
        return new Chat(in.from(), in.text(), ProcessHandle.current().pid());
    }

    @PostMapping("/announce")
    public String announce(@RequestParam String room, @RequestParam String text) {
        broker.convertAndSend("/topic/chat/" + room, new Chat("server", text, ProcessHandle.current().pid()));
        return "announced by " + ProcessHandle.current().pid() + "\n";
    }
}
