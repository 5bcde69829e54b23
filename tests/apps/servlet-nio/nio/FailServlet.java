package nio;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.annotation.WebServlet;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;

/**
 * A response that fails after its first {@code after} bytes have left:
 * /throw throws from the servlet once they are flushed; /stall flushes them
 * from an async servlet that never completes, which the engine ends at its
 * async timeout.
 */
@WebServlet(urlPatterns = {"/throw", "/stall"}, asyncSupported = true)
public class FailServlet extends HttpServlet {
    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
        int after = Integer.parseInt(req.getParameter("after"));
        res.setContentType("application/octet-stream");
        if (req.getServletPath().equals("/stall")) {
            AsyncContext ac = req.startAsync();
            ac.setTimeout(Long.parseLong(req.getParameter("ms")));
        }
        res.getOutputStream().write(WriteServlet.pattern(0, after));
        res.flushBuffer();
        if (req.getServletPath().equals("/throw")) {
            throw new IllegalStateException("nio thrown after commit on purpose");
        }
    }
}
