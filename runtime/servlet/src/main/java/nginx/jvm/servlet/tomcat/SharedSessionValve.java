package nginx.jvm.servlet.tomcat;

import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Collection;
import nginx.jvm.Log;
import nginx.jvm.servlet.session.SharedSessionException;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.valves.ValveBase;

/**
 * First in the context's pipeline (before an authenticator, the filters and
 * the servlet): when the servlet is done it writes back what the request
 * changed in its session, before the response is complete, so that the
 * next request (a redirect's, on another connection, on any worker) reads
 * it. A session that cannot be saved is an error in the log and, if the
 * response has not started, a 500 rather than a silent loss; a store that
 * cannot be reached (Redis) is a 503 with Retry-After.
 */
final class SharedSessionValve extends ValveBase {
    /** The request this thread is in the valve for, while it is (for {@link #saveBeforeTheEnd}). */
    private static final ThreadLocal<Request> IN = new ThreadLocal<>();

    SharedSessionValve() {
        super(true);
    }

    @Override
    public void invoke(Request request, Response response) throws IOException, ServletException {
        if (!(request.getContext().getManager() instanceof SharedSessionManager)) {
            // the application's context.xml chose a Manager of its own
            getNext().invoke(request, response);
            return;
        }
        var had = SharedSessionManager.enter();
        Request was = IN.get();
        IN.set(request);
        Collection<SharedSession> used;
        try {
            getNext().invoke(request, response);
        } catch (SharedSessionException.Unavailable e) {
            // reading the session failed before the servlet ran (Tomcat's
            // authenticator reads it for every request that names one)
            failed(request, response, e);
        } finally {
            used = SharedSessionManager.leave(had);
            if (was == null) {
                IN.remove();
            } else {
                IN.set(was);
            }
        }
        // an async request's later changes are saved when it ends (SharedSession.endAccess)
        save(used, request, response);
        Throwable thrown = (Throwable) request.getAttribute(RequestDispatcher.ERROR_EXCEPTION);
        if (unavailable(thrown) && !response.isCommitted()) {
            // reading the session failed in the servlet: the store, not the application
            response.setStatus(HttpServletResponse.SC_SERVICE_UNAVAILABLE);
            response.setHeader("Retry-After", "5");
        }
    }

    /**
     * The response ends while the servlet still runs (NginxProcessor, just
     * before it hands the end to nginx): the servlet closed its output, or
     * wrote the whole Content-Length it set, which ends it too (Tomcat's
     * OutputBuffer; Spring's message converters set one). Its client may
     * then ask again, on another connection or this one, before the
     * servlet returns to this valve: what the request changed so far is
     * written now, and what it changes later when it returns.
     */
    static void saveBeforeTheEnd() {
        Request request = IN.get();
        if (request != null) {
            save(SharedSessionManager.inScope(), request, request.getResponse());
        }
    }

    private static void save(Collection<SharedSession> used, Request request, Response response) {
        for (SharedSession s : used) {
            if (!s.live()) {
                continue;                                   // invalidated, or none
            }
            SharedSessionManager manager = (SharedSessionManager) s.getManager();
            try {
                manager.save(s);
            } catch (SharedSessionException e) {
                failed(request, response, e);
            } catch (RuntimeException e) {
                failed(request, response, new SharedSessionException("session "
                        + SharedSessionManager.abbreviate(s.getIdInternal()) + " could not be saved in "
                        + manager.store().describe() + ": " + e, e));
            }
        }
    }

    private static boolean unavailable(Throwable t) {
        for (int i = 0; t != null && i < 20; i++, t = t.getCause()) {
            if (t instanceof SharedSessionException.Unavailable) {
                return true;
            }
        }
        return false;
    }

    private static void failed(Request request, Response response, SharedSessionException e) {
        boolean unavailable = e instanceof SharedSessionException.Unavailable;
        boolean answered = response.isCommitted();
        Log.error(SharedSessionManager.LOGGER, e.getMessage()
                + (answered ? " (the response had already started: the client was not told)"
                        : unavailable ? ", answering 503 to " : ", answering 500 to ")
                + (answered ? "" : request.getMethod() + " " + request.getDecodedRequestURI()),
                e.getCause() instanceof RuntimeException && !unavailable ? e.getCause() : null);
        if (answered) {
            return;
        }
        // the servlet's answer said something was done that was not kept:
        // none of it goes (its Set-Cookie, a redirect) and the error page says why
        response.reset();
        try {
            if (unavailable) {
                response.setHeader("Retry-After", "5");
                response.sendError(HttpServletResponse.SC_SERVICE_UNAVAILABLE);
            } else {
                response.sendError(HttpServletResponse.SC_INTERNAL_SERVER_ERROR);
            }
        } catch (IOException | IllegalStateException x) {
            // committed meanwhile: the log line above stands
        }
    }
}
