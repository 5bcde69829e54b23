package example.jaxrs;

import jakarta.ws.rs.ApplicationPath;
import jakarta.ws.rs.core.Application;

/** Found by Jersey's ServletContainerInitializer: the resources under /api. */
@ApplicationPath("/api")
public class NotesApp extends Application {
}
