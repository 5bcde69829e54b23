package example;

import jakarta.servlet.annotation.WebServlet;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpSession;
import java.io.IOException;

/** A visit counter in the HttpSession: "count N, pid P". */
@WebServlet("/count")
public class CountServlet extends HttpServlet {
    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
        HttpSession s = req.getSession();
        Integer n = (Integer) s.getAttribute("count");
        n = n == null ? 1 : n + 1;
        s.setAttribute("count", n);
        res.setContentType("text/plain");
        res.getWriter().println("count " + n + ", pid " + ProcessHandle.current().pid());
    }
}
