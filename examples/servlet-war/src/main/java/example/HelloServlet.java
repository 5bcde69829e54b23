package example;

import jakarta.servlet.annotation.WebServlet;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;

/** What the container tells a servlet of its request, one "key: value" a line. */
@WebServlet(urlPatterns = {"/hello", "/hello/*"})
public class HelloServlet extends HttpServlet {
    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
        req.setCharacterEncoding("UTF-8");
        res.setContentType("text/plain; charset=UTF-8");
        PrintWriter out = res.getWriter();
        String name = req.getParameter("name");
        out.println("hello " + (name == null ? "world" : name));
        out.println("method: " + req.getMethod());
        out.println("requestURI: " + req.getRequestURI());
        out.println("contextPath: " + req.getContextPath());
        out.println("servletPath: " + req.getServletPath());
        out.println("pathInfo: " + req.getPathInfo());
        out.println("query: " + req.getQueryString());
        out.println("scheme: " + req.getScheme());
        out.println("secure: " + req.isSecure());
        out.println("serverName: " + req.getServerName());
        out.println("serverPort: " + req.getServerPort());
        out.println("remoteAddr: " + req.getRemoteAddr());
        out.println("localAddr: " + req.getLocalAddr());
        out.println("localName: " + req.getLocalName());
        out.println("header X-Test: " + req.getHeader("X-Test"));
        String css = getServletContext().getRealPath("/static/app.css");
        out.println("realPath: " + (css != null && Files.isRegularFile(Path.of(css))));
        out.println("greeting: " + System.getProperty("example.greeting"));
        out.println("pid: " + ProcessHandle.current().pid());
    }

    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse res) throws IOException {
        req.setCharacterEncoding("UTF-8");
        res.setContentType("text/plain; charset=UTF-8");
        res.getWriter().println("posted " + req.getParameter("name"));
    }
}
