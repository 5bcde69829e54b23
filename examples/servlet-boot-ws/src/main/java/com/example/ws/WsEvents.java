package com.example.ws;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Where the Jakarta endpoints say how sessions ended: a line each, appended
 * to the file -Dexample.wsevents names (any worker's), for a test to read;
 * nowhere without it.
 */
final class WsEvents {
    private WsEvents() {
    }

    static synchronized void add(String line) {
        String file = System.getProperty("example.wsevents");
        if (file == null) {
            return;
        }
        try {
            Files.write(Path.of(file), (line + "\n").getBytes(StandardCharsets.UTF_8),
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            // only a test reads it
        }
    }
}
