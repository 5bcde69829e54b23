package nio;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.annotation.WebServlet;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.security.MessageDigest;
import java.util.HexFormat;

/**
 * Reads the request body with a ReadListener, never blocking: answers its
 * length and SHA-256, how many times onDataAvailable ran and how many
 * times the body was not ready (the servlet waited for more).
 */
@WebServlet(urlPatterns = {"/read", "/s/read"}, asyncSupported = true)
public class ReadServlet extends HttpServlet {
    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse res) throws IOException {
        String id = req.getParameter("id");
        AsyncContext ac = req.startAsync();
        ac.setTimeout(120_000);
        ServletInputStream in = req.getInputStream();
        in.setReadListener(new ReadListener() {
            final MessageDigest md = sha256();
            final byte[] buf = new byte[8192];
            long bytes;
            int calls;
            int waits;

            @Override
            public void onDataAvailable() throws IOException {
                calls++;
                int n;
                while (in.isReady() && (n = in.read(buf)) != -1) {
                    md.update(buf, 0, n);
                    bytes += n;
                }
                if (!in.isFinished()) {
                    waits++;
                }
                Events.progress(id, bytes);
            }

            @Override
            public void onAllDataRead() throws IOException {
                Events.add(id, "all data read " + bytes);
                res.setContentType("text/plain");
                res.getWriter().print("bytes " + bytes + " sha256 " + HexFormat.of().formatHex(md.digest())
                        + " calls " + calls + " waits " + waits + "\n");
                ac.complete();
            }

            @Override
            public void onError(Throwable t) {
                Events.add(id, "read error after " + bytes + ": " + t);
                ac.complete();
            }
        });
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
