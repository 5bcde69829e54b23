package nio;

import jakarta.servlet.annotation.WebServlet;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * What the test servlets saw, by the test's id: how a request ended
 * (onAllDataRead, onError, ...) and how far it got. GET /events?id=X: one
 * line each, then "progress N".
 */
@WebServlet("/events")
public class Events extends HttpServlet {
    private static final Map<String, List<String>> EVENTS = new ConcurrentHashMap<>();
    private static final Map<String, Long> PROGRESS = new ConcurrentHashMap<>();

    static void add(String id, String event) {
        EVENTS.computeIfAbsent(String.valueOf(id), k -> new CopyOnWriteArrayList<>()).add(event);
    }

    static void progress(String id, long n) {
        PROGRESS.put(String.valueOf(id), n);
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
        String id = req.getParameter("id");
        res.setContentType("text/plain");
        StringBuilder b = new StringBuilder();
        for (String e : EVENTS.getOrDefault(id, List.of())) {
            b.append(e).append('\n');
        }
        b.append("progress ").append(PROGRESS.getOrDefault(id, 0L)).append('\n');
        res.getWriter().print(b);
    }
}
