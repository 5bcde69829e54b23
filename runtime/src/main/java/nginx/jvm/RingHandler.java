package nginx.jvm;

import clojure.lang.AFn;
import clojure.lang.IFn;
import clojure.lang.IKVReduce;
import clojure.lang.ILookup;
import clojure.lang.IMapIterable;
import clojure.lang.Keyword;
import clojure.lang.Named;
import clojure.lang.RT;
import clojure.lang.Symbol;
import clojure.lang.Var;
import java.io.File;
import java.io.InputStream;
import java.util.Iterator;
import java.util.Map;

/**
 * A Ring handler (a Clojure var) served as a {@link Handler}: the request
 * becomes a lazy Ring request map, the response map becomes a
 * {@link Response}. The runtime reaches this class only by reflection, so it
 * needs Clojure only when a Clojure handler is configured.
 */
final class RingHandler implements Handler, AsyncHandler, PhaseHandler, VariableHandler, HeaderFilter,
        BodyFilter {
    private static final Keyword STATUS = Keyword.intern("status");
    private static final Keyword HEADERS = Keyword.intern("headers");
    private static final Keyword BODY = Keyword.intern("body");
    private static final Keyword WS_LISTENER = Keyword.intern("ring.websocket", "listener");
    private static final Keyword WS_PROTOCOL = Keyword.intern("ring.websocket", "protocol");

    private static final IFn REQUIRE = RT.var("clojure.core", "require");
    private static final IFn SATISFIES = RT.var("clojure.core", "satisfies?");
    // ring.core.protocols, when ring-core is on the class path; else null.
    // The protocol's var is read at each use: extending the protocol (in a
    // handler's namespace, loaded later) replaces the var's value.
    private static final Var STREAMABLE;
    private static final IFn WRITE_BODY;

    static {
        Var protocol = null;
        IFn write = null;
        ClassLoader loader = RT.baseLoader();
        if (loader.getResource("ring/core/protocols.clj") != null
                || loader.getResource("ring/core/protocols__init.class") != null) {
            REQUIRE.invoke(Symbol.intern("ring.core.protocols"));
            protocol = RT.var("ring.core.protocols", "StreamableResponseBody");
            write = RT.var("ring.core.protocols", "write-body-to-stream");
        }
        STREAMABLE = protocol;
        WRITE_BODY = write;
        // Ring's websocket API must be there before the app's namespaces
        // load: nginx-jvm's copy of it when the class path has none.
        if (loader.getResource("ring/websocket.clj") == null
                || loader.getResource("ring/websocket/protocols.clj") == null) {
            REQUIRE.invoke(Symbol.intern("nginx.jvm.ring.websocket"));
        }
    }

    private final Var var;

    private RingHandler(Var var) {
        this.var = var;
    }

    /** Loads the var {@code ns/name}, requiring its namespace. */
    static Var resolve(String name) {
        Symbol sym = Symbol.intern(name);
        if (sym.getNamespace() == null) {
            throw new IllegalArgumentException("\"" + name + "\" is not a namespace-qualified var");
        }
        REQUIRE.invoke(Symbol.intern(sym.getNamespace()));
        Var v = (Var) RT.var(sym.getNamespace(), sym.getName());
        if (!v.isBound()) {
            throw new IllegalArgumentException("the var " + name + " is not defined");
        }
        return v;
    }

    public static Handler handler(String name) {
        return new RingHandler(resolve(name));
    }

    public static Object runInit(String name) {
        return resolve(name).invoke();
    }

    @Override
    public Response handle(Request request) {
        return response(var.invoke(new RingRequest(request)));
    }

    /** A rewrite, access or log handler: nil lets the request go on. */
    @Override
    public Response handlePhase(Request request) {
        Object ring = var.invoke(new RingRequest(request));
        return ring == null ? null : response(ring);
    }

    /** A jvm_set handler: the value's string, nil for none. */
    @Override
    public String value(Request request) {
        Object v = var.invoke(new RingRequest(request));
        return v == null ? null : v instanceof String ? (String) v
                : v instanceof Named ? ((Named) v).getName() : String.valueOf(v);
    }

    /**
     * A header filter: {@code (f request response)} with the response as a
     * Ring map of :status and :headers (lower-case names; a vector for a
     * repeated field); answers a response map, or nil to leave it.
     */
    @Override
    public Response filter(Request request, Response response) {
        java.util.Map<String, Object> headers = new java.util.LinkedHashMap<>();
        for (int i = 0; i < response.headerCount(); i++) {
            String name = response.headerName(i).toLowerCase(java.util.Locale.ROOT);
            Object prev = headers.get(name);
            String v = response.headerValue(i);
            if (prev == null) {
                headers.put(name, v);
            } else if (prev instanceof clojure.lang.IPersistentVector) {
                headers.put(name, ((clojure.lang.IPersistentVector) prev).cons(v));
            } else {
                headers.put(name, clojure.lang.PersistentVector.create(prev, v));
            }
        }
        clojure.lang.IPersistentMap h = clojure.lang.PersistentArrayMap.EMPTY;
        for (java.util.Map.Entry<String, Object> e : headers.entrySet()) {
            h = h.assoc(e.getKey(), e.getValue());
        }
        Object ring = var.invoke(new RingRequest(request),
                clojure.lang.PersistentArrayMap.EMPTY.assoc(STATUS, response.status()).assoc(HEADERS, h));
        return ring == null ? null : response(ring);
    }

    /**
     * A body filter: {@code (f request chunk last?)} with the chunk as a byte
     * array of its own; answers nil (the chunk as it is), bytes or a String
     * (UTF-8) to send instead, empty to send nothing for it.
     */
    @Override
    public byte[] filter(Request request, java.nio.ByteBuffer chunk, boolean last) {
        byte[] bytes = new byte[chunk.remaining()];
        chunk.get(bytes);
        Object out = var.invoke(new RingRequest(request), bytes, last ? Boolean.TRUE : Boolean.FALSE);
        if (out == null || out instanceof byte[]) {
            return (byte[]) out;
        }
        if (out instanceof String) {
            return ((String) out).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        }
        throw new BadResponseException("the jvm_body_filter handler returned a "
                + out.getClass().getName() + ", not bytes, a String or nil");
    }

    /**
     * A var whose value is a {@link BodyFilter} (a {@code reify}) filters
     * itself, with its own {@code start}: state per response from Clojure.
     */
    @Override
    public BodyFilter start(Request request) throws Exception {
        Object v = var.deref();
        return v instanceof BodyFilter ? ((BodyFilter) v).start(request) : this;
    }

    /** The 3-arity form: {@code (handler request respond raise)}. */
    @Override
    public void handle(Request request, Responder responder) {
        IFn respond = new AFn() {
            @Override
            public Object invoke(Object ring) {
                Response r;
                if (ring == null) {
                    // a rewrite or access handler lets the request go on
                    responder.respond(null);
                    return null;
                }
                try {
                    r = response(ring);
                } catch (RuntimeException e) {
                    responder.raise(e);
                    return null;
                }
                responder.respond(r);
                return null;
            }
        };
        IFn raise = new AFn() {
            @Override
            public Object invoke(Object error) {
                responder.raise(error instanceof Throwable ? (Throwable) error
                        : new IllegalStateException("raise called with " + error));
                return null;
            }
        };
        var.invoke(new RingRequest(request), respond, raise);
    }

    /** Converts a Ring response map; anything else is the handler's mistake. */
    static Response response(Object ring) {
        if (!(ring instanceof ILookup) || !(ring instanceof Map)) {
            throw new BadResponseException("the handler returned "
                    + (ring == null ? "nil" : "a " + ring.getClass().getName())
                    + ", not a Ring response map");
        }
        ILookup map = (ILookup) ring;
        Object listener = map.valAt(WS_LISTENER);
        if (listener != null) {
            return upgrade(listener, map.valAt(WS_PROTOCOL));
        }
        Object status = map.valAt(STATUS);
        Response response;
        if (status == null) {
            response = new Response(200);
        } else if (status instanceof Number) {
            response = new Response(status((Number) status));
        } else {
            throw new BadResponseException("the handler returned :status "
                    + RT.printString(status) + ", not a number");
        }
        Object headers = map.valAt(HEADERS);
        if (headers instanceof IKVReduce && headers instanceof Map) {
            // Clojure's maps reduce over their own arrays: no iterator, no entry
            // (a vector is an IKVReduce too, of index and element: not a map)
            ((IKVReduce) headers).kvreduce(ADD_HEADER, response);
        } else if (headers instanceof IMapIterable) {
            // keys and values without an entry object each
            Iterator<?> keys = ((IMapIterable) headers).keyIterator();
            Iterator<?> values = ((IMapIterable) headers).valIterator();
            while (keys.hasNext()) {
                header(response, keys.next(), values.next());
            }
        } else if (headers instanceof Map) {
            for (Map.Entry<?, ?> e : ((Map<?, ?>) headers).entrySet()) {
                header(response, e.getKey(), e.getValue());
            }
        } else if (headers != null) {
            throw new BadResponseException("the handler returned :headers of type "
                    + headers.getClass().getName() + ", not a map");
        }
        response.body(body(map.valAt(BODY), ring));
        return response;
    }

    /**
     * A response holding {@code :ring.websocket/listener}: the connection
     * becomes a WebSocket (Ring SPEC, section 3), with the subprotocol of
     * {@code :ring.websocket/protocol}.
     */
    private static Response upgrade(Object listener, Object protocol) {
        Var adapt = websocketAdapter();
        Response response = Response.upgrade((nginx.jvm.WebSocketListener) adapt.invoke(listener));
        if (protocol != null) {
            response.header("Sec-WebSocket-Protocol", String.valueOf(protocol));
        }
        return response;
    }

    private static volatile Var websocketAdapter;

    /** nginx.jvm.ring.websocket, loaded the first time an app upgrades. */
    private static Var websocketAdapter() {
        Var v = websocketAdapter;
        if (v == null) {
            synchronized (RingHandler.class) {
                if (websocketAdapter == null) {
                    REQUIRE.invoke(Symbol.intern("nginx.jvm.ring.websocket"));
                    websocketAdapter = RT.var("nginx.jvm.ring.websocket", "listener");
                }
                v = websocketAdapter;
            }
        }
        return v;
    }

    /**
     * An integer status, exactly (Ring: "Integer"): 200.0 or 2^32 + 200 is
     * no status, rather than one made of it by rounding or wrapping.
     */
    private static int status(Number n) {
        long v;
        if (n instanceof Long || n instanceof Integer || n instanceof Short || n instanceof Byte) {
            v = n.longValue();
        } else if (n instanceof clojure.lang.BigInt && ((clojure.lang.BigInt) n).bipart == null) {
            v = ((clojure.lang.BigInt) n).lpart;
        } else if (n instanceof java.math.BigInteger && ((java.math.BigInteger) n).bitLength() < 32) {
            v = n.longValue();
        } else {
            v = Long.MIN_VALUE;
        }
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new BadResponseException("the handler returned :status "
                    + RT.printString(n) + ", not an integer status");
        }
        return (int) v;
    }

    /** (f response name value): adds the field, answers the response (kvreduce's accumulator). */
    private static final IFn ADD_HEADER = new AFn() {
        @Override
        public Object invoke(Object response, Object key, Object value) {
            header((Response) response, key, value);
            return response;
        }
    };

    /** One Ring header: a String, or a seq of Strings for several fields. */
    private static void header(Response response, Object key, Object value) {
        String name = key instanceof Named ? ((Named) key).getName() : String.valueOf(key);
        if (value instanceof String) {
            response.header(name, (String) value);
        } else if (value instanceof Iterable) {
            for (Object v : (Iterable<?>) value) {
                // nil leaves a field out, as a nil value does
                if (v != null) {
                    response.header(name, String.valueOf(v));
                }
            }
        } else if (value != null) {
            response.header(name, String.valueOf(value));
        }
    }

    private static Object body(Object body, Object ring) {
        if (body == null || body instanceof String || body instanceof byte[]
                || body instanceof File || body instanceof InputStream
                || body instanceof clojure.lang.ISeq) {
            return body;
        }
        if (STREAMABLE != null && SATISFIES.invoke(STREAMABLE.deref(), body) == Boolean.TRUE) {
            return (BodyWriter) out -> WRITE_BODY.invoke(body, ring, out);
        }
        if (body instanceof Iterable) {
            return body;
        }
        throw new BadResponseException("the handler returned a :body of type "
                + body.getClass().getName() + ", which Ring does not define");
    }
}
