package nginx.jvm.servlet.tomcat;

import java.io.IOException;
import java.io.Serializable;
import java.security.Principal;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;
import nginx.jvm.Log;
import nginx.jvm.servlet.session.SharedSessionException;
import nginx.jvm.servlet.session.SharedSessionStore;
import org.apache.catalina.Context;
import org.apache.catalina.LifecycleException;
import org.apache.catalina.LifecycleState;
import org.apache.catalina.Loader;
import org.apache.catalina.Session;
import org.apache.catalina.session.ManagerBase;
import org.apache.catalina.session.StandardSession;

/**
 * Tomcat's sessions kept in a store every worker reads (a
 * {@code jvm_shared_dict}, or Redis) rather than in the worker's memory:
 * a request that asks for its session reads it from the store, and what
 * the request changed is written back when the servlet is done, before
 * the response leaves (runtime/servlet/README.md, Sessions).
 *
 * <p>The worker keeps no session between requests, so nothing here can be
 * stale: a session set on one worker is what the next request reads on
 * any other, and an invalidated or expired one is gone for all. Expiry is
 * the store's: each read gives the entry its max inactive interval again.
 */
public final class SharedSessionManager extends ManagerBase {
    static final String LOGGER = "nginx.jvm.servlet.sessions";
    /** A session a request asked for that the store does not have (or could not read). */
    private static final SharedSession ABSENT = new SharedSession(null);

    /**
     * The sessions a request thread has in hand while the valve runs, by
     * manager and id (Tomcat asks every context's manager for an id the
     * client sent): one object per request.
     */
    private static final ThreadLocal<Map<Key, SharedSession>> SCOPE = new ThreadLocal<>();

    record Key(SharedSessionManager manager, String id) {
    }

    private final SharedSessionStore store;
    /**
     * The shape of this manager's ids: Tomcat's generator's (16 random bytes
     * in upper-case hex by default), with the engine's jvmRoute if it has one.
     */
    private volatile Pattern ids = Pattern.compile("[0-9A-F]{32}");

    SharedSessionManager(SharedSessionStore store) {
        this.store = store;
    }

    SharedSessionStore store() {
        return store;
    }

    @Override
    public String getName() {
        return "SharedSessionManager";
    }

    @Override
    protected void startInternal() throws LifecycleException {
        super.startInternal();
        String route = getJvmRoute();
        ids = Pattern.compile("[0-9A-F]{" + getSessionIdGenerator().getSessionIdLength() * 2 + "}"
                + (route == null || route.isEmpty() ? "" : Pattern.quote("." + route)));
        // a worker that stops takes no session with it (there is none in
        // memory to expire or to unload)
        setState(LifecycleState.STARTING);
    }

    @Override
    protected void stopInternal() throws LifecycleException {
        setState(LifecycleState.STOPPING);
        super.stopInternal();
    }

    @Override
    public void load() {
    }

    @Override
    public void unload() {
    }

    @Override
    protected StandardSession getNewSession() {
        return new SharedSession(this);
    }

    /** Only the store knows every session: a worker's count is of none. */
    @Override
    public Session[] findSessions() {
        return new Session[0];
    }

    /** Expiry is the store's (each entry's time to live); nothing to sweep in memory. */
    @Override
    public void processExpires() {
    }

    // --- a request's sessions ---------------------------------------------

    /** The valve: the sessions this thread loads or makes from now on are the request's. */
    static Map<Key, SharedSession> enter() {
        Map<Key, SharedSession> had = SCOPE.get();
        SCOPE.set(new HashMap<>(4));
        return had;
    }

    /** The valve, when the request leaves it: the sessions it used. */
    static Collection<SharedSession> leave(Map<Key, SharedSession> had) {
        Map<Key, SharedSession> mine = SCOPE.get();
        if (had == null) {
            SCOPE.remove();
        } else {
            SCOPE.set(had);
        }
        return mine.values();
    }

    /** The sessions this thread's request has used so far (none outside the valve). */
    static Collection<SharedSession> inScope() {
        Map<Key, SharedSession> scope = SCOPE.get();
        return scope == null ? java.util.List.of() : new java.util.ArrayList<>(scope.values());
    }

    /** A session made by this manager (createSession, changeSessionId): the request's. */
    @Override
    public void add(Session session) {
        Map<Key, SharedSession> scope = SCOPE.get();
        if (scope != null && session instanceof SharedSession s && s != ABSENT) {
            scope.put(new Key(this, s.getIdInternal()), s);
        }
    }

    /**
     * Tomcat calls this when a session expires or is invalidated (update
     * true: its entry goes from the store, for every worker) and when its
     * id changes (the entry goes when the new one is saved).
     */
    @Override
    public void remove(Session session, boolean update) {
        String id = session.getIdInternal();
        if (id == null) {
            return;
        }
        Map<Key, SharedSession> scope = SCOPE.get();
        if (scope != null) {
            scope.remove(new Key(this, id), session);
        }
        if (update) {
            super.remove(session, true);                 // the expired sessions' figures
            if (session instanceof SharedSession s) {
                delete(id);
                if (s.oldId != null) {
                    delete(s.oldId);
                    s.oldId = null;
                }
            }
        }
    }

    private void delete(String id) {
        try {
            store.delete(id);
        } catch (RuntimeException e) {
            // invalidate() must not fail the request; the entry expires in the end
            Log.error(LOGGER, "session " + abbreviate(id) + " could not be removed from " + store.describe()
                    + ": it stays until it expires", e);
        }
    }

    @Override
    protected void changeSessionId(Session session, String newId, boolean notifySessionListeners,
            boolean notifyContainerListeners) {
        String oldId = session.getIdInternal();
        super.changeSessionId(session, newId, notifySessionListeners, notifyContainerListeners);
        if (session instanceof SharedSession s && s.stored != null && s.oldId == null) {
            // the first id the store knows goes when the session is saved under the new one
            s.oldId = oldId;
        }
    }

    /**
     * The session of {@code id}: the one this request already has, else the
     * store's, or null (an id of any other shape is none, without a read).
     */
    @Override
    public Session findSession(String id) throws IOException {
        if (id == null || !ids.matcher(id).matches()) {
            return null;
        }
        Map<Key, SharedSession> scope = SCOPE.get();
        Key key = new Key(this, id);
        if (scope != null) {
            SharedSession s = scope.get(key);
            if (s != null) {
                return s == ABSENT ? null : s;
            }
        }
        SharedSession s = load(id);
        if (scope != null) {
            // asked again in this request (Tomcat does), the answer is the same
            scope.put(key, s == null ? ABSENT : s);
        }
        return s;
    }

    private long ttlMillis(int maxInactiveInterval) {
        return maxInactiveInterval > 0 ? maxInactiveInterval * 1000L : 0;
    }

    private SharedSession load(String id) {
        int timeout = getContext().getSessionTimeout() * 60;
        // the entry's time to live starts again: the context's session
        // timeout, the entry's own below when setMaxInactiveInterval changed it
        SharedSessionStore.Loaded got = store.load(id, ttlMillis(timeout));
        if (got == null) {
            return null;
        }
        SharedSessionCodec.Entry e;
        try {
            e = SharedSessionCodec.decode(got.value());
        } catch (IOException x) {
            Log.warn(LOGGER, "session " + abbreviate(id) + " in " + store.describe()
                    + " is not one this version writes (" + x.getMessage() + "): read as no session");
            return null;
        }
        if (!id.equals(e.id)) {
            Log.warn(LOGGER, "the entry of session " + abbreviate(id) + " in " + store.describe()
                    + " holds another id: read as no session");
            return null;
        }
        long ttl = ttlMillis(e.maxInactiveInterval);
        if (e.maxInactiveInterval != timeout) {
            store.touch(id, ttl);
        }
        SharedSession s = (SharedSession) createEmptySession();
        // when the session was last used: what was left of its time to live
        // tells, where the store says (each use gives it its whole time again)
        long left = got.ttlLeft();
        long last = ttl > 0 && left > 0 && left <= ttl ? System.currentTimeMillis() - (ttl - left) : e.lastWrite;
        s.loaded(id, e.creationTime, last, e.maxInactiveInterval);
        ClassLoader loader = classLoader();
        ClassLoader was = Thread.currentThread().getContextClassLoader();
        Thread.currentThread().setContextClassLoader(loader);
        try {
            if (e.auth.length > 0) {
                Object[] auth = (Object[]) SharedSessionCodec.deserialize(e.auth, loader, null);
                s.restoreAuth((String) auth[0], (Principal) auth[1], auth[2], auth[3]);
            }
            for (Map.Entry<String, byte[]> a : e.attributes.entrySet()) {
                s.attributes().put(a.getKey(), SharedSessionCodec.deserialize(a.getValue(), loader,
                        getSessionAttributeValueClassNamePattern()));
            }
        } catch (IOException | ClassNotFoundException | RuntimeException x) {
            // a class that changed or went since it was written (a new
            // version of the application), one the filter refuses, a
            // readObject that throws: the user starts again rather than
            // with half a session
            Log.warn(LOGGER, "session " + abbreviate(id) + " in " + store.describe()
                    + " could not be read (" + x + "): read as no session");
            return null;
        } finally {
            Thread.currentThread().setContextClassLoader(was);
        }
        s.stored = e.attributes;
        s.activate();
        return s;
    }

    private ClassLoader classLoader() {
        Context c = getContext();
        Loader l = c.getLoader();
        if (l != null && l.getClassLoader() != null) {
            return l.getClassLoader();
        }
        ClassLoader cl = c.getParentClassLoader();
        return cl != null ? cl : SharedSessionManager.class.getClassLoader();
    }

    // --- writing back ------------------------------------------------------

    /**
     * Writes what the request changed: a new session (or one whose id
     * changed) whole, else each attribute it set or removed, and each it
     * read whose value now serializes otherwise (changed in place), merged
     * into the store's entry as it is now: changes of other requests to
     * other attributes are kept. A session invalidated meanwhile (its entry
     * gone) is not brought back.
     *
     * @throws SharedSessionException when an attribute does not serialize
     *         or the store has no room; the request's changes are then lost
     */
    void save(SharedSession s) {
        synchronized (s) {
            if (!s.live() || !s.dirty()) {
                return;
            }
            String id = s.getIdInternal();
            long now = System.currentTimeMillis();
            Map<String, byte[]> mine = new LinkedHashMap<>();
            byte[] auth = null;
            ClassLoader was = Thread.currentThread().getContextClassLoader();
            Thread.currentThread().setContextClassLoader(classLoader());
            try {
                s.passivate();
                Map<String, byte[]> stored = s.stored;
                boolean whole = stored == null || s.oldId != null;
                for (String name : whole ? s.attributes().keySet() : s.changed) {
                    Object v = s.attributes().get(name);
                    mine.put(name, v == null ? null : serialize(id, name, v));
                }
                if (!whole) {
                    for (String name : s.read) {
                        Object v = s.attributes().get(name);
                        if (v != null && !mine.containsKey(name)) {
                            byte[] b = serialize(id, name, v);
                            if (!Arrays.equals(b, stored.get(name))) {
                                mine.put(name, b);             // changed in place
                            }
                        }
                    }
                }
                if (whole || s.metaChanged) {
                    auth = auth(s);
                }
                if (!whole && mine.isEmpty() && auth == null) {
                    s.read.clear();
                    return;
                }
                long ttl = ttlMillis(s.getMaxInactiveInterval());
                if (whole) {
                    SharedSessionCodec.Entry e = new SharedSessionCodec.Entry();
                    e.id = id;
                    e.creationTime = s.getCreationTimeInternal();
                    e.lastWrite = now;
                    e.maxInactiveInterval = s.getMaxInactiveInterval();
                    e.auth = auth;
                    mine.forEach((k, v) -> {
                        if (v != null) {
                            e.attributes.put(k, v);
                        }
                    });
                    store.put(id, SharedSessionCodec.encode(e), ttl);
                    if (s.oldId != null) {
                        store.delete(s.oldId);
                        s.oldId = null;
                    }
                    s.stored = e.attributes;
                } else {
                    byte[] authNow = auth;
                    AtomicReference<Map<String, byte[]>> result = new AtomicReference<>();
                    store.update(id, new SharedSessionStore.Merge() {
                        @Override
                        public byte[] apply(byte[] current) {
                            SharedSessionCodec.Entry e = current == null ? null : decodeOrNull(current);
                            if (e == null || !id.equals(e.id)) {
                                result.set(null);
                                return null;                    // gone meanwhile: not brought back
                            }
                            for (Map.Entry<String, byte[]> a : mine.entrySet()) {
                                if (a.getValue() == null) {
                                    e.attributes.remove(a.getKey());
                                } else {
                                    e.attributes.put(a.getKey(), a.getValue());
                                }
                            }
                            if (authNow != null) {
                                e.auth = authNow;
                                e.maxInactiveInterval = s.getMaxInactiveInterval();
                            }
                            e.lastWrite = now;
                            result.set(e.attributes);
                            return SharedSessionCodec.encode(e);
                        }

                        /*
                         * A write of another request that read the entry before
                         * ours was written brings back, for the attributes this
                         * one changed, the values they had before: those are
                         * written again. A value that is neither (another
                         * request set it too) is left: the last write wins.
                         */
                        @Override
                        public boolean undone(byte[] current) {
                            SharedSessionCodec.Entry e = decodeOrNull(current);
                            if (e == null || !id.equals(e.id)) {
                                return false;
                            }
                            for (Map.Entry<String, byte[]> a : mine.entrySet()) {
                                byte[] before = stored.get(a.getKey());
                                if (!Arrays.equals(a.getValue(), before)
                                        && Arrays.equals(e.attributes.get(a.getKey()), before)) {
                                    return true;
                                }
                            }
                            return false;
                        }
                    }, ttl);
                    if (result.get() == null) {
                        Log.info(LOGGER, "session " + abbreviate(id) + " was invalidated or expired in "
                                + store.describe() + " while a request used it: that request's changes"
                                + " are not kept");
                        s.stored = Map.of();
                    } else {
                        s.stored = result.get();
                    }
                }
            } catch (RuntimeException e) {
                // said once, by whoever called: not again when the request ends
                s.abandoned = true;
                throw e;
            } finally {
                Thread.currentThread().setContextClassLoader(was);
                // saved, or failed: either way this request's changes are dealt with
                s.changed.clear();
                s.read.clear();
                s.metaChanged = false;
            }
        }
    }

    private static SharedSessionCodec.Entry decodeOrNull(byte[] b) {
        try {
            return SharedSessionCodec.decode(b);
        } catch (IOException x) {
            return null;
        }
    }

    private static byte[] serialize(String id, String name, Object v) {
        try {
            return SharedSessionCodec.serialize(v);
        } catch (IOException e) {
            throw new SharedSessionException("session attribute \"" + name + "\" ("
                    + v.getClass().getName() + ") cannot be saved: " + e
                    + ": every object an attribute holds must be Serializable, as sessions are"
                    + " shared by nginx's workers; this request's changes to session "
                    + abbreviate(id) + " are lost", e);
        }
    }

    /** The authentication Tomcat caches in the session, serialized (empty when there is none). */
    private static byte[] auth(SharedSession s) {
        Principal p = s.getPrincipal();
        Object idNote = s.getNote(org.apache.catalina.authenticator.Constants.SESSION_ID_NOTE);
        Object saved = s.getNote(org.apache.catalina.authenticator.Constants.FORM_REQUEST_NOTE);
        if (s.getAuthType() == null && p == null && idNote == null && saved == null) {
            return new byte[0];
        }
        Object[] auth = {s.getAuthType(), p instanceof Serializable ? p : null,
            idNote instanceof Serializable ? idNote : null, saved instanceof Serializable ? saved : null};
        try {
            return SharedSessionCodec.serialize(auth);
        } catch (IOException e) {
            Log.warn(LOGGER, "the authentication cached in session " + abbreviate(s.getIdInternal())
                    + " does not serialize (" + e + "): other workers will not see it");
            return new byte[0];
        }
    }

    /**
     * Tomcat recycles the request: changes not saved by the valve (an async
     * request's, an error page's) are saved now, and a failure can only be
     * logged.
     */
    void saveLate(SharedSession s) {
        if (!s.live() || !s.dirty() || s.abandoned) {
            return;
        }
        try {
            save(s);
        } catch (RuntimeException e) {
            Log.error(LOGGER, e.getMessage(), e instanceof SharedSessionException ? null : e);
        }
    }

    /** An id in a log line: enough to tell sessions apart, not enough to use one. */
    static String abbreviate(String id) {
        return id == null || id.length() <= 8 ? String.valueOf(id) : id.substring(0, 6) + "...";
    }
}
