package nginx.jvm.servlet.jetty;

import jakarta.servlet.SessionTrackingMode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.Set;
import nginx.jvm.Log;
import nginx.jvm.servlet.session.SharedSessionStore;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.SessionHandler;
import org.eclipse.jetty.session.AbstractSessionDataStore;
import org.eclipse.jetty.session.NullSessionCache;
import org.eclipse.jetty.session.SessionData;
import org.eclipse.jetty.util.ClassLoadingObjectInputStream;

/**
 * Jetty's HttpSessions kept where Tomcat's are (runtime/servlet/README.md,
 * Sessions): the shared dictionary "sessions", or the store
 * {@code -Dnginx.jvm.servlet.sessions} names ({@link SharedSessionStore}),
 * read by every worker. Under a {@link NullSessionCache} no worker keeps a
 * session between requests: each request that names one reads it from the
 * store, and writes it back when it ends (its time to live, the session's
 * max inactive interval, starts again).
 *
 * <p>An entry is this store's own: a version byte, the session's times and
 * then its attributes as Jetty serializes them (Java serialization, read
 * with the application's class loader). Unlike Tomcat's manager, a request
 * writes the whole session, not only what it changed: two requests of one
 * session at once keep the last one's.
 */
public final class SharedSessionDataStore extends AbstractSessionDataStore {
    private static final String LOGGER = "nginx.jvm.servlet.sessions";
    private static final int VERSION = 1;

    private final SharedSessionStore store;

    SharedSessionDataStore(SharedSessionStore store) {
        this.store = store;
    }

    /**
     * Before the context starts: its sessions in the store the property
     * names, else (no store: "memory", or no dictionary "sessions")
     * Jetty's own, in each worker's memory; tracked by the cookie only.
     */
    public static void install(ServletContextHandler context) {
        String path = context.getContextPath() == null || context.getContextPath().isEmpty()
                ? "/" : context.getContextPath();
        SessionHandler sessions = context.getSessionHandler();
        // tracked by the cookie only: ";jsessionid=" is part of the path in nginx's $uri
        sessions.setSessionTrackingModes(EnumSet.of(SessionTrackingMode.COOKIE));
        SharedSessionStore store = SharedSessionStore.named(System.getProperty(SharedSessionStore.PROPERTY), path);
        if (store == null) {
            return;
        }
        NullSessionCache cache = new NullSessionCache(sessions);
        // written before the response is committed, as well as at the
        // request's end: a client that has its response can ask another
        // worker at once, and the session must be there
        cache.setFlushOnResponseCommit(true);
        cache.setSessionDataStore(new SharedSessionDataStore(store));
        sessions.setSessionCache(cache);
        Log.notice(LOGGER, "the sessions of " + path + " are in " + store.describe() + " (Jetty)");
    }

    private static long ttl(SessionData data) {
        return Math.max(0, data.getMaxInactiveMs());
    }

    /**
     * Jetty's ids are letters and digits (its worker name, then random
     * ones): any other cookie (overlong, a path, another store's key) names
     * no session, with no read of the store.
     */
    static boolean plausible(String id) {
        if (id == null || id.isEmpty() || id.length() > 128) {
            return false;
        }
        for (int i = 0; i < id.length(); i++) {
            char c = id.charAt(i);
            if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')) {
                return false;
            }
        }
        return true;
    }

    @Override
    public SessionData doLoad(String id) throws Exception {
        if (!plausible(id)) {
            return null;
        }
        byte[] b = store.peek(id);
        if (b == null) {
            return null;
        }
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(b))) {
            if (in.readByte() != VERSION) {
                Log.warn(LOGGER, "the session entry " + id + " is not Jetty's (another format): no session");
                return null;
            }
            SessionData data = newSessionData(id, in.readLong(), in.readLong(), in.readLong(), in.readLong());
            data.setCookieSet(in.readLong());
            data.setExpiry(in.readLong());
            String node = in.readUTF();
            data.setLastNode(node.isEmpty() ? null : node);
            try (ObjectInputStream objects = new ClassLoadingObjectInputStream(in)) {
                SessionData.deserializeAttributes(data, objects);
            }
            return data;
        } catch (IOException | ClassNotFoundException e) {
            // a class changed or gone in a new version of the application: the user starts again
            Log.warn(LOGGER, "the session " + id + " in the " + store.describe() + " does not read (" + e
                    + "): no session");
            return null;
        }
    }

    @Override
    public void doStore(String id, SessionData data, long lastSaveTime) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeLong(data.getCreated());
            out.writeLong(data.getAccessed());
            out.writeLong(data.getLastAccessed());
            out.writeLong(data.getMaxInactiveMs());
            out.writeLong(data.getCookieSet());
            out.writeLong(data.getExpiry());
            out.writeUTF(data.getLastNode() == null ? "" : data.getLastNode());
            try (ObjectOutputStream objects = new ObjectOutputStream(out)) {
                SessionData.serializeAttributes(data, objects);
            }
        }
        store.put(id, bytes.toByteArray(), ttl(data));
    }

    @Override
    public boolean doExists(String id) {
        return plausible(id) && store.peek(id) != null;
    }

    @Override
    public boolean delete(String id) {
        if (!plausible(id)) {
            return false;
        }
        boolean was = store.peek(id) != null;
        store.delete(id);
        return was;
    }

    /** Of the ids this worker knows, those the store no longer has (it expires its entries itself). */
    @Override
    public Set<String> doCheckExpired(Set<String> candidates, long time) {
        Set<String> gone = new HashSet<>();
        for (String id : candidates) {
            if (!plausible(id) || store.peek(id) == null) {
                gone.add(id);
            }
        }
        return gone;
    }

    @Override
    public Set<String> doGetExpired(long time) {
        return Set.of();
    }

    @Override
    public void doCleanOrphans(long time) {
        // entries expire in the store
    }

    @Override
    public boolean isPassivating() {
        return true;
    }

    @Override
    public String toString() {
        return "SharedSessionDataStore[" + store.describe() + "]";
    }
}
