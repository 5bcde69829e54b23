package nginx.jvm.servlet;

import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Collections;

/**
 * The spike's servlet, mapped at "/": {@code GET /} answers "hello"
 * (text/plain) with a header of its own; a request with parameters or a body
 * answers what the engine made of it, for the checks of runtime/servlet/README.md.
 */
public class HelloServlet extends HttpServlet {
    private static final byte[] HELLO = "hello".getBytes(StandardCharsets.US_ASCII);

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        resp.setContentType("text/plain");
        resp.setHeader("X-Servlet", "hello");
        if (req.getQueryString() == null) {
            resp.setContentLength(HELLO.length);
            resp.getOutputStream().write(HELLO);
            return;
        }
        if (req.getParameter("throw") != null) {
            throw new IllegalStateException("HelloServlet was asked to throw");
        }
        if (req.getParameter("status") != null) {
            resp.sendError(Integer.parseInt(req.getParameter("status")), "asked for");
            return;
        }
        if (req.getParameter("stream") != null) {
            // a line every 100 ms, flushed: streamed to the client with --async
            var out = resp.getOutputStream();
            for (int i = 0, n = Integer.parseInt(req.getParameter("stream")); i < n; i++) {
                out.write(("line " + i + "\n").getBytes(StandardCharsets.US_ASCII));
                out.flush();
                pause(100);
            }
            return;
        }
        if (req.getParameter("async") != null) {
            // answered 50 ms later from a thread of the servlet's own
            var async = req.startAsync();
            Thread t = new Thread(() -> {
                pause(50);
                try {
                    async.getResponse().getOutputStream().write("hello async".getBytes(StandardCharsets.US_ASCII));
                } catch (IOException e) {
                    // the client left
                }
                async.complete();
            });
            t.setDaemon(true);
            t.start();
            return;
        }
        if (req.getParameter("asyncstart") != null) {
            // AsyncContext.start: the engine's own thread answers
            var async = req.startAsync();
            async.start(() -> {
                try {
                    async.getResponse().getOutputStream().write("hello start".getBytes(StandardCharsets.US_ASCII));
                } catch (IOException e) {
                    // the client left
                }
                async.complete();
            });
            return;
        }
        if (req.getParameter("asyncwait") != null) {
            // never completed within the test: a client that leaves is an error to the listener
            var async = req.startAsync();
            async.setTimeout(60_000);
            async.addListener(new jakarta.servlet.AsyncListener() {
                @Override
                public void onError(jakarta.servlet.AsyncEvent e) {
                    System.err.println("HelloServlet: async error: " + e.getThrowable());
                }

                @Override
                public void onComplete(jakarta.servlet.AsyncEvent e) {
                }

                @Override
                public void onTimeout(jakarta.servlet.AsyncEvent e) {
                }

                @Override
                public void onStartAsync(jakarta.servlet.AsyncEvent e) {
                }
            });
            return;
        }
        if (req.getParameter("asynctimeout") != null) {
            // never completed: the engine's async timeout answers (500)
            req.startAsync().setTimeout(500);
            return;
        }
        if (req.getParameter("big") != null) {
            // more than the engine's response buffer: the response commits early
            int n = Integer.parseInt(req.getParameter("big"));
            byte[] line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n"
                    .getBytes(StandardCharsets.US_ASCII);
            var out = resp.getOutputStream();
            for (int i = 0; i < n; i += line.length) {
                out.write(line, 0, Math.min(line.length, n - i));
            }
            return;
        }
        describe(req, resp, null);
    }

    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException, ServletException {
        resp.setContentType("text/plain");
        resp.setHeader("X-Servlet", "hello");
        String body = null;
        String type = req.getContentType();
        if (type == null || !type.startsWith("application/x-www-form-urlencoded")) {
            try (InputStream in = req.getInputStream()) {
                body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
        }
        describe(req, resp, body);
    }

    private static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void describe(HttpServletRequest req, HttpServletResponse resp, String body) throws IOException {
        req.setCharacterEncoding("UTF-8");
        resp.setCharacterEncoding("UTF-8");
        PrintWriter out = resp.getWriter();
        out.println("hello");
        out.println("method=" + req.getMethod());
        out.println("requestURI=" + req.getRequestURI());
        out.println("servletPath=" + req.getServletPath());
        out.println("pathInfo=" + req.getPathInfo());
        out.println("rawURI=" + req.getAttribute(EngineUri.RAW_URI_ATTRIBUTE));
        out.println("queryString=" + req.getQueryString());
        out.println("scheme=" + req.getScheme() + " secure=" + req.isSecure());
        out.println("server=" + req.getServerName() + ":" + req.getServerPort());
        out.println("remote=" + req.getRemoteAddr());
        out.println("contentType=" + req.getContentType() + " contentLength=" + req.getContentLengthLong());
        for (String name : Collections.list(req.getParameterNames())) {
            for (String v : req.getParameterValues(name)) {
                out.println("param " + name + "=" + v);
            }
        }
        if (req.getHeader("X-Test") != null) {
            out.println("X-Test=" + req.getHeader("X-Test"));
        }
        if (body != null) {
            out.println("body " + body.length() + " chars: " + body);
        }
    }
}
