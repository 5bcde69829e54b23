package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class HandlersTest {

    public static class Hello implements Handler {
        @Override
        public Response handle(Request r) {
            return Response.of(200, "text/plain", "hello");
        }
    }

    public static class NotAHandler {
    }

    public static class NoDefaultConstructor implements Handler {
        public NoDefaultConstructor(int unused) {
        }

        @Override
        public Response handle(Request r) {
            return null;
        }
    }

    @Test
    void clojureVarNames() {
        assertTrue(Handlers.isClojureVar("my.ns/handler"));
        assertTrue(Handlers.isClojureVar("app/handler"));
        assertTrue(Handlers.isClojureVar("my-app.core/handle-request!"));
        assertFalse(Handlers.isClojureVar("com.example.Hello"));
        assertFalse(Handlers.isClojureVar("com.example.Outer$Inner"));
        assertFalse(Handlers.isClojureVar("Hello"));
        assertFalse(Handlers.isClojureVar("/handler"), "a leading slash names no namespace");
    }

    @Test
    void javaHandlerClass() throws Exception {
        Object h = Handlers.load(Hello.class.getName());
        assertInstanceOf(Hello.class, h);
        assertEquals("hello", ((Handler) h).handle(new RequestBytes().request()).body());
    }

    @Test
    void classThatIsNotAHandler() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Handlers.load(NotAHandler.class.getName()));
        assertEquals(NotAHandler.class.getName() + " implements none of nginx.jvm.Handler,"
                + " nginx.jvm.AsyncHandler, nginx.jvm.HeaderFilter, nginx.jvm.VariableHandler,"
                + " nginx.jvm.BodyFilter",
                e.getMessage());
        // Checked before any instance is made: String has a no-argument constructor too.
        assertThrows(IllegalArgumentException.class, () -> Handlers.load("java.lang.String"));
    }

    @Test
    void classWithoutANoArgumentConstructor() {
        assertThrows(NoSuchMethodException.class, () -> Handlers.load(NoDefaultConstructor.class.getName()));
    }

    @Test
    void missingClass() {
        assertThrows(ClassNotFoundException.class, () -> Handlers.load("com.example.Missing"));
    }

    @Test
    void initClassMustBeRunnable() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Handlers.runInit(NotAHandler.class.getName()));
        assertTrue(e.getMessage().contains("does not implement java.lang.Runnable"), e.getMessage());
    }

    // Clojure is on the test class path (a "provided" dependency), so the Ring side loads.

    @Test
    void clojureVarBecomesARingHandler() throws Exception {
        Object h = Handlers.load("clojure.core/identity");
        assertEquals("nginx.jvm.RingHandler", h.getClass().getName());
        // A Ring handler serves both ways: (handler request) and (handler request respond raise).
        assertInstanceOf(Handler.class, h);
        assertInstanceOf(AsyncHandler.class, h);
    }

    @Test
    void undefinedClojureVar() {
        Exception e = assertThrows(IllegalArgumentException.class,
                () -> Handlers.load("clojure.core/no-such-var-here"));
        assertTrue(e.getMessage().contains("clojure.core/no-such-var-here is not defined"), e.getMessage());
    }

    @Test
    void missingClojureNamespace() {
        // Whatever require throws reaches the caller unwrapped (no InvocationTargetException).
        Exception e = assertThrows(Exception.class, () -> Handlers.load("no.such.namespace/handler"));
        assertFalse(e instanceof java.lang.reflect.InvocationTargetException);
        assertTrue(String.valueOf(e.getMessage()).contains("no/such/namespace"), e.toString());
    }

    public static final class ThrowsInConstructor implements Handler {
        public ThrowsInConstructor() {
            throw new IllegalStateException("database down, in the constructor");
        }

        @Override
        public Response handle(Request request) {
            return null;
        }
    }

    @Test
    void whatAConstructorThrowsIsWhatLoadThrows() {
        // not an InvocationTargetException: the error log's first line and
        // the launcher's last name the cause
        Exception e = assertThrows(IllegalStateException.class,
                () -> Handlers.load(ThrowsInConstructor.class.getName()));
        assertTrue(e.getMessage().contains("database down"), e.toString());
    }
}
