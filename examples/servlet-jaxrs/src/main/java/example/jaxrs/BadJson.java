package example.jaxrs;

import com.fasterxml.jackson.core.JsonProcessingException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.ExceptionMapper;
import jakarta.ws.rs.ext.Provider;
import java.util.Map;

/** A body that is not the JSON asked for answers 400, not 500. */
@Provider
public class BadJson implements ExceptionMapper<JsonProcessingException> {
    @Override
    public Response toResponse(JsonProcessingException e) {
        return Response.status(400).type(MediaType.APPLICATION_JSON)
                .entity(Map.of("error", "not the JSON of a note")).build();
    }
}
