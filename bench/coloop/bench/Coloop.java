package bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * bench/coloop.py's handlers: /hello answers at once; /pg holds a
 * connection of a 100-connection HikariCP pool for a round trip of
 * SELECT pg_sleep(0.05) to a real PostgreSQL (-Dbench.jdbc=URL), the same
 * pool for every location of the worker.
 */
public final class Coloop {
    private Coloop() {
    }

    public static final class Hello implements Handler {
        @Override
        public Response handle(Request r) {
            return Response.of(200, "text/plain", "hello");
        }
    }

    public static final class Pg implements Handler {
        private static final HikariDataSource POOL = pool();

        private static HikariDataSource pool() {
            HikariConfig c = new HikariConfig();
            c.setJdbcUrl(System.getProperty("bench.jdbc"));
            c.setMaximumPoolSize(100);
            c.setMinimumIdle(100);
            c.setConnectionTimeout(30_000);
            return new HikariDataSource(c);
        }

        @Override
        public Response handle(Request r) throws Exception {
            try (Connection c = POOL.getConnection();
                 Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT pg_sleep(0.05)")) {
                rs.next();
            }
            return Response.of(200, "text/plain", "slept");
        }
    }
}
