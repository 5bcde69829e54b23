package testapp;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import nginx.jvm.AsyncHandler;
import nginx.jvm.BodyWriter;
import nginx.jvm.Request;
import nginx.jvm.Responder;
import nginx.jvm.Response;
import nginx.jvm.Topic;

/**
 * Topic "f" fanned out to server-sent event streams from the event loop:
 * each message is written to the stream by the topic's listener; a write
 * that fails ends the subscription (counted in {@link Fanout#FAILURES}).
 */
public final class FanoutSse implements AsyncHandler {
    @Override
    public void handle(Request r, Responder responder) {
        BodyWriter events = out -> {
            AutoCloseable[] subscription = new AutoCloseable[1];
            subscription[0] = Topic.named("f").subscribe(m -> {
                try {
                    write(out, "data: " + m + "\n\n");
                } catch (IOException e) {
                    Fanout.failed(e.getMessage());
                    subscription[0].close();
                }
            });
            write(out, ": subscribed\n\n");
        };
        responder.respond(new Response(200)
                .header("Content-Type", "text/event-stream")
                .body(events));
    }

    private static void write(OutputStream out, String s) throws IOException {
        out.write(s.getBytes(StandardCharsets.UTF_8));
        out.flush();
    }
}
