package nginx.jvm.servlet.tomcat;

import java.io.Serializable;
import java.security.Principal;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.catalina.authenticator.Constants;
import org.apache.catalina.session.StandardSession;

/**
 * A session of {@link SharedSessionManager}: Tomcat's own, which remembers
 * what the request changed so that only that is written back, merged into
 * what the store holds then.
 *
 * <p>One object per request that uses the session (never kept by the
 * worker between requests): each request sees the session as the store
 * held it when the request first asked for it, with the request's own
 * changes.
 */
final class SharedSession extends StandardSession {
    private static final long serialVersionUID = 1L;

    /** The attributes as the store held them when loaded or last saved, serialized; null: never stored. */
    transient volatile Map<String, byte[]> stored;
    /** Attributes set or removed by this request. */
    final transient Set<String> changed = ConcurrentHashMap.newKeySet();
    /** Attributes read whose values may have been changed in place (a List one adds to). */
    final transient Set<String> read = ConcurrentHashMap.newKeySet();
    /** The max inactive interval or the cached authentication changed. */
    transient volatile boolean metaChanged;
    /** The request that used it is over (Tomcat recycled it). */
    transient volatile boolean ended;
    /** A save failed (and said so): the request's end does not try again. */
    transient volatile boolean abandoned;
    /** The id the session had before changeSessionId, whose entry goes when it is saved. */
    transient volatile String oldId;

    SharedSession(SharedSessionManager manager) {
        super(manager);
    }

    /** Fields as a loaded session has them (no listener hears of it: the session is not new). */
    void loaded(String id, long creationTime, long lastAccess, int maxInactiveInterval) {
        this.id = id;
        this.creationTime = creationTime;
        this.lastAccessedTime = lastAccess;
        // this request is an access: what Tomcat checks idleness against
        this.thisAccessedTime = System.currentTimeMillis();
        this.maxInactiveInterval = maxInactiveInterval;
        this.isNew = false;
        this.isValid = true;
    }

    /** The attribute map itself, for the manager to fill and read. */
    Map<String, Object> attributes() {
        return attributes;
    }

    /** Not invalidated (isValidInternal, from the manager's package). */
    boolean live() {
        return isValid;
    }

    boolean dirty() {
        return stored == null || oldId != null || metaChanged || !changed.isEmpty() || !read.isEmpty();
    }

    /**
     * Valid until invalidated: whether it had expired was the store's to
     * say when it was read (an entry whose time to live ran out is gone),
     * and a request that outlives the interval must not delete an entry
     * other workers' requests have kept alive meanwhile.
     */
    @Override
    public boolean isValid() {
        return isValid;
    }

    @Override
    public void setAttribute(String name, Object value, boolean notify) {
        if (value != null && !(value instanceof Serializable)) {
            throw new IllegalArgumentException("session attribute \"" + name + "\": "
                    + value.getClass().getName() + " is not Serializable, and every attribute of a"
                    + " session shared by nginx's workers is written to "
                    + ((SharedSessionManager) manager).store().describe()
                    + " (runtime/servlet/README.md, Sessions)");
        }
        if (name != null && SharedSessionCodec.utf8Length(name) > 65535) {
            throw new IllegalArgumentException("a session attribute's name over 65535 bytes");
        }
        super.setAttribute(name, value, notify);
        if (name != null && value != null) {
            changed.add(name);
            late();
        }
    }

    @Override
    protected void removeAttributeInternal(String name, boolean notify) {
        super.removeAttributeInternal(name, notify);
        changed.add(name);
        late();
    }

    @Override
    public Object getAttribute(String name) {
        Object v = super.getAttribute(name);
        if (v != null && !immutable(v)) {
            read.add(name);
        }
        return v;
    }

    /** Values that cannot change in place: read, they need no second look at the end. */
    private static boolean immutable(Object v) {
        return v instanceof String || v instanceof Number && v.getClass().getName().startsWith("java.lang.")
                || v instanceof Boolean || v instanceof Character || v instanceof Enum<?>;
    }

    @Override
    public void setMaxInactiveInterval(int interval) {
        super.setMaxInactiveInterval(interval);
        metaChanged = true;
        late();
    }

    @Override
    public void setAuthType(String authType) {
        super.setAuthType(authType);
        metaChanged = true;
    }

    @Override
    public void setPrincipal(Principal principal) {
        super.setPrincipal(principal);
        metaChanged = true;
    }

    @Override
    public void setNote(String name, Object value) {
        super.setNote(name, value);
        if (authNote(name)) {
            metaChanged = true;
        }
    }

    @Override
    public void removeNote(String name) {
        super.removeNote(name);
        if (authNote(name)) {
            metaChanged = true;
        }
    }

    /** FORM login's notes, kept with the session as Tomcat's persistAuthentication keeps them. */
    static boolean authNote(String name) {
        return Constants.SESSION_ID_NOTE.equals(name) || Constants.FORM_REQUEST_NOTE.equals(name);
    }

    /** What setAuthType, setPrincipal and the notes set, as loaded, without marking a change. */
    void restoreAuth(String authType, Principal principal, Object sessionIdNote, Object savedRequest) {
        this.authType = authType;
        this.principal = principal;
        if (sessionIdNote != null) {
            notes.put(Constants.SESSION_ID_NOTE, sessionIdNote);
        }
        if (savedRequest != null) {
            notes.put(Constants.FORM_REQUEST_NOTE, savedRequest);
        }
    }

    /**
     * The request that used this session is over (Tomcat calls this when it
     * recycles the request): what was not saved yet (an async request's
     * changes, an error page's) is saved now.
     */
    @Override
    public void endAccess() {
        super.endAccess();
        ended = true;
        ((SharedSessionManager) manager).saveLate(this);
    }

    /**
     * A change made after the request ended (a thread of the application's
     * that kept the session, an async servlet whose client left) has no
     * request end to wait for: it is written at once.
     */
    private void late() {
        if (ended) {
            ((SharedSessionManager) manager).saveLate(this);
        }
    }

    @Override
    public String toString() {
        return "SharedSession[" + id + "]";
    }
}
