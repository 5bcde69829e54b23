package nginx.jvm.servlet;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpSession;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.TreeMap;

/**
 * The session tests' servlet (tests/test_servlet_sessions.py), selected with
 * {@code -Dnginx.jvm.servlet.class=nginx.jvm.servlet.SessionServlet}: each
 * path does one thing to the request's session and answers, as text lines
 * {@code key=value}, the worker's pid and what the session holds.
 *
 * <pre>
 * /pid                         the worker's pid, no session
 * /set?name=N&amp;value=V          setAttribute (a new session if none)
 * /get?name=N                  getAttribute, without making a session
 * /remove?name=N               removeAttribute
 * /flash?msg=M                 a flash attribute, then 302 to /show (Spring's redirect-after-post)
 * /show                        reads and removes the flash attribute
 * /append?item=I               adds to a List attribute in place (no setAttribute after the first)
 * /invalidate                  invalidate()
 * /interval?s=N                setMaxInactiveInterval(N)
 * /rotate                      changeSessionId(), as Spring Security at login
 * /login?user=U                a session, changeSessionId(), then the user as an attribute
 * /renew?name=N                invalidate(), then a new session with attribute N of the old
 * /encode                      a session, and what encodeURL makes of "/x"
 * /notserializable             an attribute that is not Serializable
 * /nested                      a Serializable List holding an object that is not
 * /big?kb=N                    an attribute of N KB
 * /slow?name=N&amp;value=V&amp;ms=T    setAttribute, then T ms before answering
 * /whole?name=N&amp;value=V&amp;ms=T   setAttribute, then the whole answer with its Content-Length
 *                              (which ends the response, as Spring's message converters
 *                              write), then T ms before returning
 * /async?name=N&amp;value=V[&amp;ms=T]  startAsync; another thread sets the attribute T ms
 *                              later (50), then completes
 * </pre>
 */
public class SessionServlet extends HttpServlet {
    private static final long PID = ProcessHandle.current().pid();

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String op = req.getServletPath();
        String name = req.getParameter("name");
        resp.setContentType("text/plain;charset=UTF-8");
        resp.setHeader("Cache-Control", "no-store");
        TreeMap<String, Object> out = new TreeMap<>();
        out.put("pid", PID);
        HttpSession s;
        switch (op) {
            case "/pid" -> {
            }
            case "/set" -> req.getSession().setAttribute(name, req.getParameter("value"));
            case "/get" -> {
                s = req.getSession(false);
                out.put("value", s == null ? "(no session)" : String.valueOf(s.getAttribute(name)));
            }
            case "/remove" -> req.getSession().removeAttribute(name);
            case "/flash" -> {
                req.getSession().setAttribute("flash", req.getParameter("msg"));
                resp.sendRedirect("/show");
                return;
            }
            case "/show" -> {
                s = req.getSession(false);
                Object flash = s == null ? null : s.getAttribute("flash");
                if (s != null) {
                    s.removeAttribute("flash");
                }
                out.put("flash", String.valueOf(flash));
            }
            case "/append" -> {
                s = req.getSession();
                @SuppressWarnings("unchecked")
                List<String> list = (List<String>) s.getAttribute("list");
                if (list == null) {
                    list = new ArrayList<>();
                    s.setAttribute("list", list);
                }
                list.add(req.getParameter("item"));
                out.put("list", String.join(",", list));
            }
            case "/invalidate" -> {
                s = req.getSession(false);
                if (s != null) {
                    s.invalidate();
                }
                out.put("invalidated", s != null);
            }
            case "/interval" -> req.getSession().setMaxInactiveInterval(Integer.parseInt(req.getParameter("s")));
            case "/rotate" -> {
                out.put("old", req.getSession().getId());
                req.changeSessionId();
            }
            case "/login" -> {
                req.getSession();
                out.put("old", req.getSession().getId());
                req.changeSessionId();
                req.getSession().setAttribute("user", req.getParameter("user"));
            }
            case "/encode" -> {
                req.getSession();
                out.put("url", resp.encodeURL("/x"));
            }
            case "/renew" -> {
                // Spring Security's fixation protection, newSession: the old
                // session goes, a new one takes what is to be kept
                HttpSession old = req.getSession();
                out.put("old", old.getId());
                Object keep = old.getAttribute(name);
                old.invalidate();
                req.getSession().setAttribute(name, keep);
            }
            case "/notserializable" -> req.getSession().setAttribute("thing", new Object());
            case "/nested" -> {
                List<Object> list = new ArrayList<>();
                list.add(new Object());
                req.getSession().setAttribute("nested", list);
            }
            case "/big" -> req.getSession().setAttribute("big",
                    new byte[Integer.parseInt(req.getParameter("kb")) * 1024]);
            case "/slow" -> {
                req.getSession().setAttribute(name, req.getParameter("value"));
                pause(Long.parseLong(req.getParameter("ms")));
            }
            case "/whole" -> {
                s = req.getSession();
                s.setAttribute(name, req.getParameter("value"));
                byte[] body = ("pid=" + PID + "\nid=" + s.getId() + "\n").getBytes(
                        java.nio.charset.StandardCharsets.UTF_8);
                resp.setContentLength(body.length);
                resp.getOutputStream().write(body);
                pause(Long.parseLong(req.getParameter("ms")));
                return;
            }
            case "/async" -> {
                HttpSession session = req.getSession();
                AsyncContext async = req.startAsync();
                String value = req.getParameter("value");
                long ms = req.getParameter("ms") == null ? 50 : Long.parseLong(req.getParameter("ms"));
                Thread t = new Thread(() -> {
                    pause(ms);
                    session.setAttribute(name, value);
                    try {
                        async.getResponse().getWriter().print("pid=" + PID + "\nid=" + session.getId() + "\n");
                        async.complete();
                    } catch (IOException | IllegalStateException e) {
                        // the client left: the request is over already
                    }
                });
                t.setDaemon(true);
                t.start();
                return;
            }
            default -> {
                resp.sendError(404);
                return;
            }
        }
        s = req.getSession(false);
        if (s != null) {
            out.put("id", s.getId());
            out.put("new", s.isNew());
            out.put("interval", s.getMaxInactiveInterval());
            out.put("created", s.getCreationTime());
            out.put("lastAccessed", s.getLastAccessedTime());
            out.put("names", String.join(",", new java.util.TreeSet<>(Collections.list(s.getAttributeNames()))));
        }
        PrintWriter w = resp.getWriter();
        out.forEach((k, v) -> w.print(k + "=" + v + "\n"));
    }

    private static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
