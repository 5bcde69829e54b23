package testapp;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** A jvm_exit Runnable: appends "exit PID" to the file testapp.leave names. */
public final class Leave implements Runnable {
    @Override
    public void run() {
        try {
            Files.writeString(Path.of(System.getProperty("testapp.leave")),
                    "exit " + ProcessHandle.current().pid() + "\n", StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
