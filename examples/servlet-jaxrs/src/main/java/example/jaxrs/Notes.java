package example.jaxrs;

import jakarta.ws.rs.BadRequestException;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.NotFoundException;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Notes kept in memory: each JVM (each nginx worker) has its own, as each
 * standalone server would.
 */
@Path("/notes")
@Produces(MediaType.APPLICATION_JSON)
public class Notes {
    private static final Map<Long, Note> NOTES = new ConcurrentSkipListMap<>();
    private static final AtomicLong IDS = new AtomicLong();

    @GET
    public List<Note> all(@QueryParam("q") String q) {
        List<Note> out = new ArrayList<>();
        for (Note n : NOTES.values()) {
            if (q == null || n.text.contains(q)) {
                out.add(n);
            }
        }
        return out;
    }

    @GET
    @Path("{id}")
    public Note one(@PathParam("id") long id) {
        Note n = NOTES.get(id);
        if (n == null) {
            throw new NotFoundException("no note " + id);
        }
        return n;
    }

    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    public Response add(Note note, @Context UriInfo uri) {
        if (note == null || note.text == null || note.text.isBlank()) {
            throw new BadRequestException("a note needs a text");
        }
        Note n = new Note(IDS.incrementAndGet(), note.text);
        NOTES.put(n.id, n);
        return Response.created(uri.getAbsolutePathBuilder().path(Long.toString(n.id)).build())
                .entity(n).build();
    }

    @DELETE
    @Path("{id}")
    public Response remove(@PathParam("id") long id) {
        return NOTES.remove(id) != null ? Response.noContent().build()
                : Response.status(Response.Status.NOT_FOUND).build();
    }

    @GET
    @Path("/hello")
    @Produces(MediaType.TEXT_PLAIN + ";charset=UTF-8")
    public String hello(@QueryParam("name") String name) {
        return "hello " + (name == null ? "world" : name) + " from JAX-RS";
    }

    @GET
    @Path("/boom")
    public Note boom() {
        throw new IllegalArgumentException("a bad argument, on purpose");
    }
}
