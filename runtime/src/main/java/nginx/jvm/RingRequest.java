package nginx.jvm;

import clojure.lang.APersistentMap;
import clojure.lang.IObj;
import clojure.lang.IPersistentCollection;
import clojure.lang.IPersistentMap;
import clojure.lang.ISeq;
import clojure.lang.Keyword;
import clojure.lang.MapEntry;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentHashMap;
import java.io.InputStream;
import java.util.Iterator;
import java.util.Map;

/**
 * The Ring request map (Ring SPEC 1.5), built lazily: a key's value is made
 * the first time it is read, so a handler that never looks at the headers
 * never pays for a header map. Anything beyond reading keys (assoc, seq,
 * iteration, metadata) first turns it into an ordinary persistent map, which
 * middleware then works with.
 *
 * <p>It has the keys Ring's servlet adapter gives, including the deprecated
 * :content-type, :content-length and :character-encoding that older
 * middleware reads.
 */
final class RingRequest extends APersistentMap implements IObj {
    static final Keyword SERVER_PORT = Keyword.intern("server-port");
    static final Keyword SERVER_NAME = Keyword.intern("server-name");
    static final Keyword REMOTE_ADDR = Keyword.intern("remote-addr");
    static final Keyword URI = Keyword.intern("uri");
    static final Keyword QUERY_STRING = Keyword.intern("query-string");
    static final Keyword SCHEME = Keyword.intern("scheme");
    static final Keyword REQUEST_METHOD = Keyword.intern("request-method");
    static final Keyword PROTOCOL = Keyword.intern("protocol");
    static final Keyword HEADERS = Keyword.intern("headers");
    static final Keyword CONTENT_TYPE = Keyword.intern("content-type");
    static final Keyword CONTENT_LENGTH = Keyword.intern("content-length");
    static final Keyword CHARACTER_ENCODING = Keyword.intern("character-encoding");
    static final Keyword SSL_CLIENT_CERT = Keyword.intern("ssl-client-cert");
    static final Keyword BODY = Keyword.intern("body");
    /** The {@link Request} itself: nginx variables, through nginx.jvm.request. */
    static final Keyword NGINX_REQUEST = Keyword.intern("nginx.jvm", "request");
    /** Only in the map of a traced request (tracing on): Request#traceId, #spanId. */
    static final Keyword TRACE_ID = Keyword.intern("nginx.jvm", "trace-id");
    static final Keyword SPAN_ID = Keyword.intern("nginx.jvm", "span-id");
    /** Only in the map of a valid WebSocket upgrade request, as Ring's adapters do. */
    static final Keyword WEBSOCKET = Keyword.intern("websocket?");

    private static final Keyword[] KEYS = {
        SERVER_PORT, SERVER_NAME, REMOTE_ADDR, URI, QUERY_STRING, SCHEME,
        REQUEST_METHOD, PROTOCOL, HEADERS, CONTENT_TYPE, CONTENT_LENGTH,
        CHARACTER_ENCODING, SSL_CLIENT_CERT, BODY, NGINX_REQUEST
    };

    private static final Keyword HTTP = Keyword.intern("http");
    private static final Keyword HTTPS = Keyword.intern("https");
    private static final Keyword GET = Keyword.intern("get");
    private static final Keyword POST = Keyword.intern("post");
    private static final Keyword HEAD = Keyword.intern("head");
    private static final Object NOT_FOUND = new Object();

    private final Request request;
    private IPersistentMap headers;
    private InputStream body;
    private IPersistentMap map;

    RingRequest(Request request) {
        this.request = request;
    }

    static Keyword method(String method) {
        switch (method) {
            case "GET":
                return GET;
            case "POST":
                return POST;
            case "HEAD":
                return HEAD;
            default:
                return Keyword.intern(method.toLowerCase(java.util.Locale.ROOT));
        }
    }

    @Override
    public Object valAt(Object key) {
        return valAt(key, null);
    }

    @Override
    public Object valAt(Object key, Object notFound) {
        if (map != null) {
            return map.valAt(key, notFound);
        }
        if (key == URI) {
            return request.uri();
        }
        if (key == REQUEST_METHOD) {
            return method(request.method());
        }
        if (key == HEADERS) {
            return headers();
        }
        if (key == QUERY_STRING) {
            return request.queryString();
        }
        if (key == BODY) {
            return body();
        }
        if (key == SCHEME) {
            return request.isHttps() ? HTTPS : HTTP;
        }
        if (key == SERVER_NAME) {
            return request.serverName();
        }
        if (key == SERVER_PORT) {
            return request.serverPort();
        }
        if (key == REMOTE_ADDR) {
            return request.remoteAddr();
        }
        if (key == PROTOCOL) {
            return request.protocol();
        }
        if (key == CONTENT_TYPE) {
            return request.header("content-type");
        }
        if (key == CONTENT_LENGTH) {
            return contentLength();
        }
        if (key == CHARACTER_ENCODING) {
            return request.characterEncoding();
        }
        if (key == SSL_CLIENT_CERT) {
            return request.sslClientCert();
        }
        if (key == NGINX_REQUEST) {
            return request;
        }
        if (key == WEBSOCKET) {
            return request.isWebSocketUpgrade() ? Boolean.TRUE : notFound;
        }
        if (key == TRACE_ID) {
            String t = request.traceId();
            return t != null ? t : notFound;
        }
        if (key == SPAN_ID) {
            String s = request.spanId();
            return s != null ? s : notFound;
        }
        return notFound;
    }

    private IPersistentMap headers() {
        if (headers == null) {
            // a fresh array: the map may keep it as it is
            Object[] kvs = request.headerPairs();
            headers = kvs.length <= 16 ? new PersistentArrayMap(kvs) : PersistentHashMap.create(kvs);
        }
        return headers;
    }

    private InputStream body() {
        if (body == null) {
            body = request.body();
        }
        return body;
    }

    private Object contentLength() {
        String v = request.header("content-length");
        if (v == null) {
            return null;
        }
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** This request as an ordinary persistent map (made once). */
    IPersistentMap map() {
        if (map == null) {
            Object[] kvs = new Object[KEYS.length * 2];
            for (int i = 0; i < KEYS.length; i++) {
                kvs[2 * i] = KEYS[i];
                kvs[2 * i + 1] = valAt(KEYS[i]);
            }
            IPersistentMap m = PersistentHashMap.create(kvs);
            if (request.traceId() != null) {
                m = m.assoc(TRACE_ID, request.traceId()).assoc(SPAN_ID, request.spanId());
            }
            map = request.isWebSocketUpgrade() ? m.assoc(WEBSOCKET, Boolean.TRUE) : m;
        }
        return map;
    }

    @Override
    public boolean containsKey(Object key) {
        return valAt(key, NOT_FOUND) != NOT_FOUND;
    }

    @Override
    public clojure.lang.IMapEntry entryAt(Object key) {
        Object v = valAt(key, NOT_FOUND);
        return v == NOT_FOUND ? null : MapEntry.create(key, v);
    }

    @Override
    public IPersistentMap assoc(Object key, Object val) {
        return map().assoc(key, val);
    }

    @Override
    public IPersistentMap assocEx(Object key, Object val) {
        return map().assocEx(key, val);
    }

    @Override
    public IPersistentMap without(Object key) {
        return map().without(key);
    }

    @Override
    public int count() {
        return map == null ? KEYS.length + (request.isWebSocketUpgrade() ? 1 : 0)
                + (request.traceId() != null ? 2 : 0) : map.count();
    }

    @Override
    public ISeq seq() {
        return map().seq();
    }

    @Override
    public IPersistentCollection empty() {
        return PersistentArrayMap.EMPTY;
    }

    @Override
    @SuppressWarnings("rawtypes")
    public Iterator iterator() {
        return ((Iterable) map()).iterator();
    }

    @Override
    public IPersistentMap meta() {
        return null;
    }

    @Override
    public IObj withMeta(IPersistentMap meta) {
        return ((IObj) map()).withMeta(meta);
    }
}
