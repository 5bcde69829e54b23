package example;

import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.annotation.WebServlet;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpUpgradeHandler;
import jakarta.servlet.http.WebConnection;
import java.io.IOException;

/**
 * The Servlet API's own upgrade (no WebSocket): "Upgrade: shout" turns
 * the connection into a protocol of its own, which sends back what comes
 * in upper case, and ends when a line "bye" comes.
 */
@WebServlet("/upgrade")
public class UpgradeServlet extends HttpServlet {
    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse res)
            throws IOException, ServletException {
        if (!"shout".equalsIgnoreCase(req.getHeader("Upgrade"))) {
            res.sendError(HttpServletResponse.SC_BAD_REQUEST, "Upgrade: shout, please");
            return;
        }
        res.setHeader("Upgrade", "shout");
        res.setHeader("Connection", "Upgrade");
        req.upgrade(Shout.class);
    }

    /** The upgraded connection: non-blocking reads, blocking writes. */
    public static class Shout implements HttpUpgradeHandler {
        @Override
        public void init(WebConnection connection) {
            try {
                ServletInputStream in = connection.getInputStream();
                ServletOutputStream out = connection.getOutputStream();
                in.setReadListener(new ReadListener() {
                    private final StringBuilder line = new StringBuilder();

                    @Override
                    public void onDataAvailable() throws IOException {
                        byte[] buf = new byte[4096];
                        while (in.isReady()) {
                            int n = in.read(buf);
                            if (n < 0) {
                                return;
                            }
                            String s = new String(buf, 0, n, java.nio.charset.StandardCharsets.ISO_8859_1);
                            out.write(s.toUpperCase(java.util.Locale.ROOT)
                                    .getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
                            out.flush();
                            line.append(s);
                            if (line.indexOf("bye\n") >= 0) {
                                try {
                                    connection.close();
                                } catch (Exception e) {
                                    throw new IOException(e);
                                }
                                return;
                            }
                        }
                    }

                    @Override
                    public void onAllDataRead() {
                    }

                    @Override
                    public void onError(Throwable t) {
                        WsEvents.add("shout-error " + t.getClass().getSimpleName());
                    }
                });
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public void destroy() {
            WsEvents.add("shout-destroyed");
        }
    }
}
