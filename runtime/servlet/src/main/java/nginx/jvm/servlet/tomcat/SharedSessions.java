package nginx.jvm.servlet.tomcat;

import jakarta.servlet.ServletContainerInitializer;
import jakarta.servlet.ServletContext;
import jakarta.servlet.SessionTrackingMode;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import nginx.jvm.Log;
import nginx.jvm.servlet.session.SharedSessionStore;
import org.apache.catalina.Context;
import org.apache.catalina.Session;
import org.apache.catalina.session.StandardManager;

/**
 * Where a context's HttpSessions live, chosen once at its start from
 * {@code -Dnginx.jvm.servlet.sessions} (runtime/servlet/README.md, Sessions):
 *
 * <ul>
 * <li>{@code dict:NAME}: the {@code jvm_shared_dict NAME} (launcher:
 *     {@code --shared-dict NAME:SIZE}): every worker of this nginx;
 * <li>{@code redis://[[user]:password@]host[:port][/db]}: that Redis (Jedis,
 *     build/redis-lib, on the class path): every worker of every host using it;
 * <li>{@code memory}: Tomcat's own, in each worker's memory: a session is
 *     known only to the worker that made it (one worker, or sticky clients);
 * <li>unset: the shared dictionary named {@code sessions} when nginx.conf
 *     declares one, else {@code memory}, which says at the first session
 *     made that other workers will not know it.
 * </ul>
 *
 * Sessions are tracked by the JSESSIONID cookie only (never in URLs:
 * {@code ;jsessionid=} is not a path parameter nginx's {@code $uri} keeps),
 * HttpOnly, Secure when the request came over TLS, as Tomcat makes it.
 */
public final class SharedSessions {
    /** The system property that chooses the store. */
    public static final String PROPERTY = SharedSessionStore.PROPERTY;
    /** The prefix of the store's keys (default "jsession:" and the context's path). */
    public static final String PREFIX = SharedSessionStore.PREFIX;
    /** The dictionary used when the property is unset, if nginx.conf declares it. */
    public static final String DEFAULT_DICT = SharedSessionStore.DEFAULT_DICT;

    private SharedSessions() {
    }

    /** Before the context starts: its Manager, the valve that writes sessions back, cookies only. */
    public static void install(Context context) {
        String path = context.getPath().isEmpty() ? "/" : context.getPath();
        SharedSessionStore store = SharedSessionStore.named(System.getProperty(PROPERTY), path);
        context.addServletContainerInitializer(new CookiesOnly(), null);
        if (store == null) {
            if (System.getProperty(PROPERTY) == null) {
                context.setManager(new PerWorker());
            }
            return;
        }
        context.setManager(new SharedSessionManager(store));
        context.getPipeline().addValve(new SharedSessionValve());
        Log.notice(SharedSessionManager.LOGGER, "the sessions of " + path + " are in " + store.describe());
    }

    /**
     * Tomcat's default tracking modes are the cookie and the URL
     * ({@code ;jsessionid=}, which encodeURL would add to links before the
     * client has the cookie): the cookie only, whatever web.xml said, since
     * the engine maps nginx's {@code $uri}, in which a path parameter is
     * part of the path. Set here, the first initializer, so the
     * application's own may still read or narrow them.
     */
    static final class CookiesOnly implements ServletContainerInitializer {
        @Override
        public void onStartup(Set<Class<?>> classes, ServletContext ctx) {
            ctx.setSessionTrackingModes(EnumSet.of(SessionTrackingMode.COOKIE));
        }
    }

    /**
     * Tomcat's per-worker sessions when no store was chosen: the first
     * session made says, once, that the other workers will not know it.
     */
    static final class PerWorker extends StandardManager {
        private final AtomicBoolean told = new AtomicBoolean();

        @Override
        public Session createSession(String sessionId) {
            Session s = super.createSession(sessionId);
            if (told.compareAndSet(false, true)) {
                Log.warn(SharedSessionManager.LOGGER, "sessions are kept in this worker's memory:"
                        + " with several workers, a request that lands on another does not have its"
                        + " session. Declare \"jvm_shared_dict " + DEFAULT_DICT + " 10m;\" (launcher: --shared-dict "
                        + DEFAULT_DICT + ":10m) to share them, or set -D" + PROPERTY
                        + "=memory to say per-worker sessions are meant");
            }
            return s;
        }
    }
}
