package nginx.jvm;

import java.lang.reflect.Method;

/**
 * The one place that turns a handler name from nginx.conf into a handler:
 * {@code my.ns/handler} is a Clojure var holding a Ring handler, anything else
 * a Java class implementing {@link Handler}.
 */
final class Handlers {
    private Handlers() {
    }

    static boolean isClojureVar(String name) {
        return name.indexOf('/') > 0;
    }

    /** A {@link Handler}, an {@link AsyncHandler}, or both (Ring handlers). */
    static Object load(String name) throws Exception {
        if (isClojureVar(name)) {
            return ring("handler", name);
        }
        Class<?> c = Class.forName(name);
        if (!Handler.class.isAssignableFrom(c) && !AsyncHandler.class.isAssignableFrom(c)
                && !HeaderFilter.class.isAssignableFrom(c) && !VariableHandler.class.isAssignableFrom(c)
                && !BodyFilter.class.isAssignableFrom(c)) {
            throw new IllegalArgumentException(name + " implements none of "
                    + Handler.class.getName() + ", " + AsyncHandler.class.getName() + ", "
                    + HeaderFilter.class.getName() + ", " + VariableHandler.class.getName() + ", "
                    + BodyFilter.class.getName());
        }
        try {
            return c.getDeclaredConstructor().newInstance();
        } catch (java.lang.reflect.InvocationTargetException e) {
            // what the constructor threw, which the error log's first line
            // and the launcher's last then name, rather than the wrapper
            Throwable cause = e.getCause();
            if (cause instanceof Exception) {
                throw (Exception) cause;
            }
            if (cause instanceof Error) {
                throw (Error) cause;
            }
            throw e;
        }
    }

    /**
     * Calls a synchronous handler. Whatever goes wrong (it throws, answers
     * null or something that is not a response) becomes a {@link Failure}
     * saying so, for a 500 and the error log.
     */
    static Response call(Handler handler, Request request) {
        Trace trace = request.trace;
        if (trace == null) {
            return invoke(handler, request);
        }
        // the handler's span current on its thread, for the spans it makes
        Object scope = Tracing.enter(trace);
        Throwable failed = null;
        try {
            return invoke(handler, request);
        } catch (Failure f) {
            failed = f.getCause() != null ? f.getCause() : f;
            throw f;
        } finally {
            Tracing.leave(trace, scope, failed);
        }
    }

    private static Response invoke(Handler handler, Request request) {
        Response response;
        try {
            response = handler.handle(request);
        } catch (BadResponseException e) {
            throw new Failure(e.getMessage(), null);
        } catch (Throwable t) {
            throw new Failure("the handler threw", t);
        }
        if (response == null) {
            throw new Failure("the handler returned no response (null)", null);
        }
        return response;
    }

    private static final String[] PHASES = {"jvm_content", "jvm_rewrite", "jvm_access", "jvm_log"};

    /**
     * Calls a rewrite, access or log handler, which may answer null (the
     * request goes on). Failures become a {@link Failure} naming the phase.
     */
    static Response callPhase(Object handler, Request request, int phase) {
        try {
            return handler instanceof PhaseHandler
                    ? ((PhaseHandler) handler).handlePhase(request)
                    : ((Handler) handler).handle(request);
        } catch (BadResponseException e) {
            throw new Failure(e.getMessage(), null);
        } catch (Throwable t) {
            throw new Failure("the " + PHASES[phase] + " handler threw", t);
        }
    }

    /** A Clojure var (called with no arguments) or a Java class implementing Runnable. */
    static void runInit(String name) throws Exception {
        if (isClojureVar(name)) {
            ring("runInit", name);
            return;
        }
        Class<?> c = Class.forName(name);
        if (!Runnable.class.isAssignableFrom(c)) {
            throw new IllegalArgumentException(name + " does not implement java.lang.Runnable");
        }
        ((Runnable) c.getDeclaredConstructor().newInstance()).run();
    }

    /**
     * Calls the Ring adapter by reflection, so that this class (and every Java
     * handler) loads without Clojure on the class path.
     */
    private static Object ring(String method, String name) throws Exception {
        try {
            Class.forName("clojure.lang.RT");
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("\"" + name + "\" names a Clojure var, but Clojure"
                    + " is not on the class path (jvm_classpath)");
        }
        Method m = Class.forName("nginx.jvm.RingHandler").getMethod(method, String.class);
        try {
            return m.invoke(null, name);
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception) {
                throw (Exception) cause;
            }
            throw (Error) cause;
        }
    }
}
