package nginx.jvm.testing;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Serves {@link #handler()} from a real nginx-jvm for the tests of the
 * annotated class: started once before them, stopped after them.  A test
 * (or constructor, or lifecycle method) takes the server as a parameter:
 *
 * <pre>{@code
 * @NginxJvmTest(handler = "com.example.Hello", args = {"--shared-dict", "hits:1m"})
 * class HelloTest {
 *     @Test
 *     void hello(NginxJvm server) throws Exception {
 *         HttpResponse<String> r = HttpClient.newHttpClient().send(
 *             HttpRequest.newBuilder(server.uri("/")).build(), BodyHandlers.ofString());
 *         assertEquals(200, r.statusCode());
 *     }
 * }
 * }</pre>
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@ExtendWith(NginxJvmExtension.class)
public @interface NginxJvmTest {
    /** A Java class implementing nginx.jvm.Handler, or a Ring var. */
    String handler();

    /** More options of nginx-jvm run (--shared-dict hits:1m, --mode pool, ...). */
    String[] args() default {};

    /** nginx worker processes. */
    int workers() default 1;
}
