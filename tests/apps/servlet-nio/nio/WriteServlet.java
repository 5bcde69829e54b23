package nio;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.annotation.WebServlet;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;

/**
 * Writes {@code bytes} bytes (byte i is i % 251) with a WriteListener, in
 * writes of {@code chunk} bytes while the stream is ready, never blocking;
 * with {@code length}, a Content-Length; with {@code throwAt}, throws from
 * onWritePossible once that many are written.
 */
@WebServlet(urlPatterns = "/write", asyncSupported = true)
public class WriteServlet extends HttpServlet {
    static final byte[] PERIOD = new byte[251];
    static {
        for (int i = 0; i < PERIOD.length; i++) {
            PERIOD[i] = (byte) i;
        }
    }

    /** {@code n} bytes of the pattern from position {@code at}. */
    static byte[] pattern(long at, int n) {
        byte[] b = new byte[n];
        int p = (int) (at % PERIOD.length);
        for (int i = 0; i < n; i++) {
            b[i] = PERIOD[p];
            p = p + 1 == PERIOD.length ? 0 : p + 1;
        }
        return b;
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
        String id = req.getParameter("id");
        long total = Long.parseLong(req.getParameter("bytes"));
        int chunk = Integer.parseInt(req.getParameter("chunk"));
        String t = req.getParameter("throwAt");
        long throwAt = t == null ? -1 : Long.parseLong(t);
        res.setContentType("application/octet-stream");
        if (req.getParameter("length") != null) {
            res.setContentLengthLong(total);
        }
        AsyncContext ac = req.startAsync();
        ac.setTimeout(120_000);
        ServletOutputStream out = res.getOutputStream();
        out.setWriteListener(new WriteListener() {
            long sent;
            int waits;

            @Override
            public void onWritePossible() throws IOException {
                while (sent < total) {
                    if (!out.isReady()) {
                        waits++;
                        Events.progress(id, sent);
                        return;
                    }
                    if (throwAt >= 0 && sent >= throwAt) {
                        Events.add(id, "throwing after " + sent);
                        throw new IllegalStateException("nio write failure on purpose");
                    }
                    int n = (int) Math.min(chunk, total - sent);
                    out.write(pattern(sent, n));
                    sent += n;
                }
                Events.progress(id, sent);
                Events.add(id, "written " + sent + " waits " + waits);
                ac.complete();
            }

            @Override
            public void onError(Throwable e) {
                Events.add(id, "write error after " + sent + ": " + e);
                ac.complete();
            }
        });
    }
}
