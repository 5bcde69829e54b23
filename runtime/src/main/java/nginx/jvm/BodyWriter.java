package nginx.jvm;

import java.io.IOException;
import java.io.OutputStream;

/**
 * A response body that writes itself to a stream, for bodies produced by code
 * rather than held in memory. The stream is flushed to the client as it is
 * written and closed by the runtime afterwards.
 */
@FunctionalInterface
public interface BodyWriter {
    void writeTo(OutputStream out) throws IOException;
}
