package example;

import jakarta.servlet.ServletContextEvent;
import jakarta.servlet.ServletContextListener;
import jakarta.servlet.annotation.WebListener;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Found by annotation. At the application's end it appends a line to the
 * file -Dexample.destroyed names, if any: how one sees that the container
 * stopped it.
 */
@WebListener
public class Started implements ServletContextListener {
    @Override
    public void contextInitialized(ServletContextEvent e) {
        e.getServletContext().setAttribute("startedBy", "listener");
    }

    @Override
    public void contextDestroyed(ServletContextEvent e) {
        String file = System.getProperty("example.destroyed");
        if (file == null) {
            return;
        }
        try {
            Files.writeString(Path.of(file), "destroyed " + ProcessHandle.current().pid() + "\n",
                    StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException ex) {
            e.getServletContext().log("cannot write " + file, ex);
        }
    }
}
