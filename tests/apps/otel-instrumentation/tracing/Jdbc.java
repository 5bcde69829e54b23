package tracing;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.instrumentation.jdbc.datasource.JdbcTelemetry;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import javax.sql.DataSource;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A query through a DataSource wrapped by OpenTelemetry's JDBC library
 * instrumentation (tests/test_tracing.py): its spans are children of the
 * handler's, current on the handler's thread. The database is the system
 * property test.jdbc.url.
 */
public final class Jdbc implements Handler {
    private static volatile DataSource source;

    private static DataSource source() {
        DataSource s = source;
        if (s == null) {
            PGSimpleDataSource pg = new PGSimpleDataSource();
            pg.setURL(System.getProperty("test.jdbc.url"));
            s = JdbcTelemetry.create(GlobalOpenTelemetry.get()).wrap(pg);
            source = s;
        }
        return s;
    }

    @Override
    public Response handle(Request r) throws Exception {
        try (Connection c = source().getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT 40 + 2")) {
            rs.next();
            String s = "trace=" + r.traceId() + " span=" + r.spanId() + " answer=" + rs.getInt(1);
            return new Response(200).header("Content-Type", "text/plain").body(s.getBytes(StandardCharsets.UTF_8));
        }
    }
}
