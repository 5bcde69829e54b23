package example;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.annotation.WebServlet;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Answers from another thread, ?ms=N later (default 10). */
@WebServlet(urlPatterns = "/async", asyncSupported = true)
public class AsyncServlet extends HttpServlet {
    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse res) {
        long ms = req.getParameter("ms") == null ? 10 : Long.parseLong(req.getParameter("ms"));
        AsyncContext ac = req.startAsync();
        ac.setTimeout(0);
        CompletableFuture.delayedExecutor(ms, TimeUnit.MILLISECONDS).execute(() -> {
            try {
                ac.getResponse().setContentType("text/plain");
                ac.getResponse().getWriter().println("async done after " + ms + " ms");
            } catch (IOException e) {
                // the client left
            }
            ac.complete();
        });
    }
}
