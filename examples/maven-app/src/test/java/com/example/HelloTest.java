package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import nginx.jvm.testing.NginxJvm;
import nginx.jvm.testing.NginxJvmTest;
import org.junit.jupiter.api.Test;

/** Hello served by a real nginx-jvm, two workers sharing a dictionary. */
@NginxJvmTest(handler = "com.example.Hello", workers = 2, args = {"--shared-dict", "app:1m"})
class HelloTest {
    private final HttpClient client = HttpClient.newHttpClient();

    private HttpResponse<String> get(NginxJvm server, String path) throws Exception {
        return client.send(HttpRequest.newBuilder(server.uri(path)).build(), BodyHandlers.ofString());
    }

    @Test
    void greets(NginxJvm server) throws Exception {
        HttpResponse<String> r = get(server, "/");
        assertEquals(200, r.statusCode());
        assertEquals("Hello from a Maven project, GET /\n", r.body());
        assertEquals("text/plain; charset=utf-8", r.headers().firstValue("content-type").orElse(""));
    }

    @Test
    void countsInASharedDictionary(NginxJvm server) throws Exception {
        long first = Long.parseLong(get(server, "/hits").body().trim());
        for (int i = 1; i <= 10; i++) {
            // a new client each time: a new connection, whichever worker takes it
            HttpResponse<String> r = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(server.uri("/hits")).build(), BodyHandlers.ofString());
            assertEquals(first + i, Long.parseLong(r.body().trim()));
        }
    }

    @Test
    void unknownPathsAnswer404(NginxJvm server) throws Exception {
        assertEquals(404, get(server, "/nothing-here").statusCode());
    }
}
