package nginx.jvm;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One HTTP request as nginx parsed it.
 *
 * <p>The C module copies a compact description of the request into a buffer
 * (docs/internals.md describes the layout); this class keeps a copy
 * of those bytes and decodes each part only when asked, so a handler pays only
 * for what it reads. It stays valid after the handler returns.
 */
public final class Request {
    private static final int METHOD = 0, URI = 1, QUERY = 2, PROTOCOL = 3,
            SERVER_NAME = 4, REMOTE_ADDR = 5, CLIENT_CERT = 6, STRINGS = 7;
    /** nginx's $uri, one more string when it is not the path (flag REQ_HAS_URI). */
    private static final int NGINX_URI = 7;
    /** int flags, int server port, int status, long bytes sent; then the strings. */
    private static final int FIXED = 20;

    /**
     * The request's bytes, whose fixed part (flags, port, status, bytes
     * sent) is read from here when asked: every field is an allocated byte
     * per request (bench/results/2026-11-27-alloc.md).
     */
    private final byte[] data;
    /**
     * The address of nginx's request while it lives, 0 afterwards; read and
     * written on the event loop only (a JVM thread reads it after a hop).
     */
    long handle;
    /** Event loop: a task's request, which may wait for subrequests. */
    boolean suspended;
    /**
     * Set before a {@code jvm_rewrite} or {@code jvm_access} handler is
     * called: its request's header fields may change (nginx has not read
     * the body nor begun the content phase).
     */
    boolean beforeContent;
    /**
     * Whether the client of a task's request left (a handler off the loop,
     * or async), or null (a handler on the loop, a header filter, a log
     * handler): what {@link #onAbort} registers with. Cut (null) when a
     * coloop task that answered in its first slice is kept for the next
     * request (Tasks.recycle): the request is over, nothing aborts it.
     */
    volatile Abort abort;
    /** Event loop: the ids of its subrequests in flight; null until it starts one. */
    java.util.List<Integer> subrequests;
    /** Its spans when tracing is on and it is traced (set on the loop before its handler runs), else null. */
    Trace trace;

    /** Event loop: a subrequest of this request's started, id {@code id}. */
    void started(int id) {
        if (subrequests == null) {
            subrequests = new java.util.ArrayList<>(2);
        }
        subrequests.add(id);
    }
    private final int headerCount;
    private final int headersAt;
    private int bodyAt = -1;
    /**
     * The body's temporary files, opened while the request is described (on
     * the event loop) and closed by {@link #end}; null when none.
     */
    private java.nio.channels.FileChannel[] files;
    private java.io.IOException filesError;
    /** The body while it still arrives (jvm_request_buffering off), or null. */
    UploadBody upload;

    private String method, uri, path, query, protocol, serverName, remoteAddr;
    private Map<String, String> headers;
    private String[] pairs;

    Request(byte[] data) {
        this.data = data;
        int pos = FIXED;
        int strings = (flags() & Wire.REQ_HAS_URI) != 0 ? STRINGS + 1 : STRINGS;
        for (int i = 0; i < strings; i++) {
            pos += 4 + Wire.getInt(data, pos);
        }
        this.headerCount = Wire.getInt(data, pos);
        this.headersAt = pos + 4;
        if ((flags() & Wire.REQ_BODY_FILE) != 0) {
            pairs();
            try {
                files = RequestBody.openFiles(data, bodyAt);
            } catch (java.io.IOException e) {
                filesError = e;
            }
        }
    }

    /** True while the body's temporary files are open ({@link #end} closes them). */
    boolean holdsFiles() {
        return files != null;
    }

    /**
     * Event loop: the request is over, or the call that described it is, and
     * nothing else reads its body: its temporary files are closed, and a read
     * of its body from now on fails.
     */
    void end() {
        java.nio.channels.FileChannel[] f = files;
        if (f != null) {
            RequestBody.close(f);
        }
        UploadBody u = upload;
        if (u != null) {
            u.end();
        }
    }

    /** True when the body still arrives and is read as it does (jvm_request_buffering off). */
    boolean streamsBody() {
        return (flags() & Wire.REQ_BODY_STREAM) != 0;
    }

    private String string(int at) {
        return new String(data, at + 4, Wire.getInt(data, at), StandardCharsets.ISO_8859_1);
    }

    private int flags() {
        return Wire.getInt(data, 0);
    }

    /** Where fixed string {@code which} (its length word) is: a few reads, no table kept. */
    private int offset(int which) {
        int pos = FIXED;
        for (int i = 0; i < which; i++) {
            pos += 4 + Wire.getInt(data, pos);
        }
        return pos;
    }

    private String field(int which) {
        return string(offset(which));
    }

    /**
     * The methods, protocols and header names nearly every request has,
     * answered as these constants rather than a new String each time (a
     * String and its bytes: 48 bytes or more a request each;
     * bench/results/2026-11-27-alloc.md). Header names lower-case.
     */
    private static final String[] METHODS = {"GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"};
    private static final String[] PROTOCOLS = {"HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/3.0"};
    private static final String[] NAMES = {"host", "user-agent", "accept", "accept-encoding",
        "accept-language", "connection", "content-type", "content-length", "cookie", "referer",
        "origin", "cache-control", "pragma", "authorization", "if-none-match", "if-modified-since",
        "upgrade", "upgrade-insecure-requests", "x-forwarded-for", "x-forwarded-proto", "x-real-ip",
        "x-requested-with", "sec-fetch-dest", "sec-fetch-mode", "sec-fetch-site", "sec-fetch-user",
        "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "dnt", "te",
        "transfer-encoding", "range", "priority"};

    /**
     * The string of {@code table} that the {@code len} bytes at {@code off}
     * spell (ASCII letters in any case when {@code anyCase}: the table's are
     * lower-case), or null.
     */
    static String known(String[] table, byte[] b, int off, int len, boolean anyCase) {
        for (String k : table) {
            if (k.length() != len) {
                continue;
            }
            int i = 0;
            while (i < len) {
                int c = b[off + i];
                if (anyCase && c >= 'A' && c <= 'Z') {
                    c += 32;
                }
                if (c != k.charAt(i)) {
                    break;
                }
                i++;
            }
            if (i == len) {
                return k;
            }
        }
        return null;
    }

    private String field(int which, String[] table) {
        int at = offset(which);
        String k = known(table, data, at + 4, Wire.getInt(data, at), false);
        return k != null ? k : string(at);
    }

    /**
     * The response status nginx has so far: the status a log handler
     * (jvm_log) or header filter sees; 0 before a response exists.
     */
    public int status() {
        return Wire.getInt(data, 8);
    }

    /** For a log handler (jvm_log): the bytes nginx sent to the client, headers included. */
    public long bytesSent() {
        return Wire.getLong(data, 12);
    }

    /**
     * The value of the nginx variable {@code name} ("remote_user",
     * "$ssl_client_s_dn", "arg_id", "cookie_session", a map's or a
     * {@code jvm_set} variable...), or null when it has none for this request.
     *
     * <p>Variables live in nginx's request: on the event loop they are read at
     * once; from any other thread (pool, virtual, async) the call hops to the
     * event loop and waits for it, which costs a wake-up of the loop (tens of
     * microseconds). Use {@link #variables} to read several in one hop.
     *
     * @throws IllegalArgumentException nginx knows no variable of that name
     * @throws IllegalStateException the request is over (a log handler off the
     *     loop, or a handler that kept the request)
     */
    public String variable(String name) {
        byte[] n = variableName(name);
        byte[] v = LoopCalls.call(() -> Natives.getVariable(live(), n));
        return v == null ? null : new String(v, StandardCharsets.UTF_8);
    }

    /** Several variables in one go (one hop to the loop off it): name to value (null: none). */
    public Map<String, String> variables(String... names) {
        byte[][] n = new byte[names.length][];
        for (int i = 0; i < names.length; i++) {
            n[i] = variableName(names[i]);
        }
        byte[][] v = LoopCalls.call(() -> {
            long r = live();
            byte[][] out = new byte[n.length][];
            for (int i = 0; i < n.length; i++) {
                out[i] = Natives.getVariable(r, n[i]);
            }
            return out;
        });
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < names.length; i++) {
            m.put(names[i], v[i] == null ? null : new String(v[i], StandardCharsets.UTF_8));
        }
        return m;
    }

    /**
     * Sets the nginx variable {@code name}: one declared with {@code set} or
     * {@code jvm_set}, or one nginx lets change ({@code args},
     * {@code limit_rate}). Hops to the event loop when called off it.
     *
     * @throws IllegalArgumentException unknown, or not changeable
     */
    public void setVariable(String name, String value) {
        byte[] n = variableName(name);
        if (value == null) {
            throw new IllegalArgumentException("a variable's value cannot be null");
        }
        byte[] v = value.getBytes(StandardCharsets.UTF_8);
        LoopCalls.call(() -> {
            Natives.setVariable(live(), n, v);
            return null;
        });
    }

    /**
     * In a {@code jvm_rewrite} handler: the URI nginx routes on from now on
     * (a path starting with "/", without the query string; change that with
     * {@code setVariable("args", ...)}). When the handler lets the request go
     * on, nginx looks for the location of the new URI, as after
     * {@code rewrite ... last}.
     */
    public void setUri(String uri) {
        if (uri == null || !uri.startsWith("/")) {
            throw new IllegalArgumentException("a URI must start with \"/\": " + uri);
        }
        byte[] u = uri.getBytes(StandardCharsets.UTF_8);
        LoopCalls.call(() -> {
            Natives.setUri(live(), u);
            return null;
        });
        path = uri;
    }

    /**
     * In a {@code jvm_rewrite} or {@code jvm_access} handler: the request
     * header field {@code name} (any case) gets {@code value}, in place of
     * every field of that name the request has (in the place of the first
     * one, or at the end), so that what follows in nginx ({@code proxy_pass},
     * {@code $http_...} variables, a content handler) sees it as if the
     * client had sent it. A null value removes the fields. Hops to the event
     * loop when called off it.
     *
     * <p>Host also changes {@code $host} (nginx has already chosen the
     * server block); User-Agent and Connection what nginx derives from them.
     * This request's own {@link #header}, {@link #headers} and header
     * list stay as the client sent them; {@code variable("http_x_name")}
     * reads the field as nginx has it now.
     *
     * @throws IllegalArgumentException the name is no HTTP token (letters,
     *     digits and {@code !#$%&'*+-.^_`|~}); the value holds a control
     *     character other than HTAB (CR, LF, NUL, ...: it would split the
     *     request to the upstream); a Host value is no host; the name is
     *     Content-Length or Transfer-Encoding (nginx reads the request body
     *     by them, after this phase: they cannot change)
     * @throws IllegalStateException not a rewrite or access handler, or its
     *     request has gone on (or is over)
     */
    public void setHeader(String name, String value) {
        editHeaders(new HeaderEdit(name, value, false));
    }

    /**
     * As {@link #setHeader}, but one more field {@code name}, after those
     * there are (a second Host is refused).
     */
    public void addHeader(String name, String value) {
        if (value == null) {
            throw new IllegalArgumentException("a header field's value cannot be null");
        }
        editHeaders(new HeaderEdit(name, value, true));
    }

    /** As {@link #setHeader}: removes every field {@code name} (any case). */
    public void clearHeader(String name) {
        editHeaders(new HeaderEdit(name, null, false));
    }

    /**
     * Several changes in one go (one hop to the event loop off it), in the
     * map's order: a String (or any object, as its {@code toString()}) sets
     * the field as {@link #setHeader} does; null removes it; an
     * {@code Iterable} (a list, a Clojure vector or seq) replaces the fields
     * of that name with one per non-null element. All are checked before any
     * is made.
     */
    public void setHeaders(Map<String, ?> fields) {
        java.util.List<HeaderEdit> edits = new java.util.ArrayList<>(fields.size());
        for (Map.Entry<String, ?> e : fields.entrySet()) {
            Object v = e.getValue();
            if (v instanceof Iterable) {
                edits.add(new HeaderEdit(e.getKey(), null, false));
                for (Object item : (Iterable<?>) v) {
                    if (item != null) {
                        edits.add(new HeaderEdit(e.getKey(), item.toString(), true));
                    }
                }
            } else {
                edits.add(new HeaderEdit(e.getKey(), v == null ? null : v.toString(), false));
            }
        }
        editHeaders(edits.toArray(new HeaderEdit[0]));
    }

    private void editHeaders(HeaderEdit... edits) {
        if (!beforeContent) {
            throw new IllegalStateException("the request's header fields can change only in a"
                    + " jvm_rewrite or jvm_access handler");
        }
        LoopCalls.call(() -> {
            long r = handle;
            if (r == 0) {
                throw new IllegalStateException("the request's header fields can change only while"
                        + " its jvm_rewrite or jvm_access handler runs: it has answered, or the"
                        + " request is over");
            }
            for (HeaderEdit e : edits) {
                Natives.setHeader(r, e.name, e.value, e.add);
            }
            return null;
        });
    }

    /** One change of a header field, its name and value checked and encoded. */
    private static final class HeaderEdit {
        final byte[] name;
        final byte[] value;
        final boolean add;

        HeaderEdit(String name, String value, boolean add) {
            this.name = fieldName(name);
            this.value = value == null ? null : fieldValue(name, value);
            this.add = add;
        }
    }

    /** An HTTP token (RFC 9110, 5.6.2), as a response's field names are. */
    static byte[] fieldName(String name) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("a header field needs a name");
        }
        String refused = Gate.token(Gate.REQUEST_NAME, name);
        if (refused != null) {
            throw new IllegalArgumentException(refused);
        }
        byte[] b = new byte[name.length()];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) name.charAt(i);
        }
        if (name.equalsIgnoreCase("Content-Length") || name.equalsIgnoreCase("Transfer-Encoding")) {
            throw new IllegalArgumentException(name + ": Content-Length and Transfer-Encoding tell nginx"
                    + " how to read the request body, which it reads after this phase: they cannot"
                    + " change (proxy_pass sends its own)");
        }
        return b;
    }

    /**
     * A value as ISO-8859-1 bytes (above U+00FF: '?'), as a response's are:
     * visible characters, SP, HTAB and obs-text; CR, LF, NUL or another
     * control would split the request to the upstream, or read differently
     * to nginx and to it.
     */
    static byte[] fieldValue(String name, String value) {
        String refused = Gate.value(Gate.REQUEST_VALUE, name, value);
        if (refused != null) {
            throw new IllegalArgumentException(refused);
        }
        byte[] b = new byte[value.length()];
        for (int i = 0; i < b.length; i++) {
            char c = value.charAt(i);
            b[i] = c > 0xff ? (byte) '?' : (byte) c;
        }
        if (name.equalsIgnoreCase("Host") && !isHost(value)) {
            throw new IllegalArgumentException("Host " + quote(value)
                    + " is not a host name or address with an optional port");
        }
        return b;
    }

    /**
     * What nginx takes for a Host: a name or an IPv4 address, or an IPv6
     * one in brackets, then an optional ":port"; no "..", "/", space or
     * control character, not empty (a trailing dot does not count).
     */
    static boolean isHost(String v) {
        String host = v;
        String port = "";
        if (v.startsWith("[")) {
            int close = v.indexOf(']');
            if (close < 0) {
                return false;
            }
            host = v.substring(0, close + 1);
            String rest = v.substring(close + 1);
            if (!rest.isEmpty()) {
                if (rest.charAt(0) != ':') {
                    return false;
                }
                port = rest.substring(1);
            }
        } else if (v.indexOf(':') >= 0) {
            host = v.substring(0, v.indexOf(':'));
            port = v.substring(v.indexOf(':') + 1);
        }
        for (int i = 0; i < port.length(); i++) {
            if (port.charAt(i) < '0' || port.charAt(i) > '9') {
                return false;
            }
        }
        if (host.endsWith(".")) {
            host = host.substring(0, host.length() - 1);
        }
        if (host.isEmpty() || host.contains("..")) {
            return false;
        }
        for (int i = 0; i < host.length(); i++) {
            char c = host.charAt(i);
            if (c <= 0x20 || c == 0x7f || c == '/' || c > 0xff) {
                return false;
            }
        }
        return true;
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length() && i < 64; i++) {
            char c = s.charAt(i);
            b.append(c < 0x20 || c == 0x7f ? String.format("\\x%02X", (int) c) : String.valueOf(c));
        }
        return b.append(s.length() > 64 ? "...\"" : "\"").toString();
    }

    private static byte[] variableName(String name) {
        if (name == null || name.isEmpty() || name.equals("$")) {
            throw new IllegalArgumentException("an nginx variable needs a name");
        }
        return (name.charAt(0) == '$' ? name.substring(1) : name).getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Sends {@code GET uri} (a path of this server, with an optional query
     * string) through nginx as a subrequest; see
     * {@link #subrequest(String, String, String, Map, byte[])}.
     */
    public java.util.concurrent.CompletableFuture<Response> subrequest(String uri) {
        int q = uri.indexOf('?');
        return q < 0 ? subrequest("GET", uri, null, null, null)
                : subrequest("GET", uri.substring(0, q), uri.substring(q + 1), null, null);
    }

    /**
     * Sends a request through nginx as a subrequest of this one, to a
     * location of the same server (typically an {@code internal} one with
     * {@code proxy_pass}, so that nginx's upstreams, keep-alive, TLS,
     * caching and timeouts apply), and answers its response (status, header
     * fields, body as {@code byte[]}) without blocking any thread. The
     * subrequest gets this request's header fields, less those named in
     * {@code headers}, plus those; a body only if one is given. Its response
     * is kept in memory up to nginx's {@code subrequest_output_buffer_size}.
     *
     * <p>The future completes on the event loop: callbacks attached without
     * an executor run there (keep them short, or use the {@code ...Async}
     * forms). It completes exceptionally when the subrequest cannot start or
     * fails; an upstream that refuses or times out answers 502 or 504, a
     * missing location 404. Only a request that can wait may start
     * subrequests: a handler with {@code jvm_async on}, or one in
     * {@code jvm_mode pool} or {@code virtual} (which may block on the
     * future). Several may be in flight at once.
     */
    public java.util.concurrent.CompletableFuture<Response> subrequest(String method, String uri, String args,
            Map<String, String> headers, byte[] body) {
        if (method == null || method.isEmpty()) {
            method = "GET";
        }
        if (uri == null || !uri.startsWith("/")) {
            throw new IllegalArgumentException("a subrequest's URI must start with \"/\": " + uri);
        }
        Trace tr = trace;
        if (tr != null && (headers == null || !headers.containsKey("traceparent"))) {
            // the subrequest (and the upstream a proxy_pass location sends it to) joins the trace
            Map<String, String> h = headers == null ? new java.util.HashMap<>() : new java.util.HashMap<>(headers);
            h.put("traceparent", tr.traceparent);
            headers = h;
        }
        byte[] spec = Subrequests.spec(method, uri, args, headers, body);
        java.util.concurrent.CompletableFuture<Response> f = new java.util.concurrent.CompletableFuture<>();
        Runnable start = () -> {
            try {
                long r = live();
                if (!suspended) {
                    throw new IllegalStateException("a subrequest needs a request that can wait for it:"
                            + " a handler with jvm_async on, or in jvm_mode pool or virtual");
                }
                started(Subrequests.start(r, spec, f));
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        };
        if (LoopCalls.direct()) {
            start.run();
        } else {
            LoopCalls.post(start);
        }
        return f;
    }

    /**
     * Runs {@code callback} once if the client leaves before this request's
     * response is complete: its connection closed or failed (for HTTP/2,
     * its stream was reset), or it read too slowly ({@code send_timeout}).
     * The callback runs on one of the runtime's "nginx-jvm-abort" threads,
     * never on the event loop; a request's callbacks run in the order they
     * were registered, and one that throws is logged. Registered after the
     * client left, it runs at once (on such a thread). With
     * {@code jvm_abort_interrupt on} the handler's thread is also
     * interrupted, while the handler's call lasts.
     *
     * <p>A request whose response was complete (normally, or a 504 of
     * {@code jvm_response_timeout}) never runs its callbacks.
     *
     * @return true when registered (or run, the client having left); false
     *     when nothing can abort the request any more: its response is
     *     complete, or its handler runs on the event loop (jvm_mode loop
     *     without jvm_async), whose call nothing interrupts
     */
    public boolean onAbort(Runnable callback) {
        Abort a = abort;
        if (a == null) {
            java.util.Objects.requireNonNull(callback, "callback");
            return false;
        }
        return a.onAbort(this, callback);
    }

    /** True once the client left before the response was complete (see {@link #onAbort}). */
    public boolean isAborted() {
        Abort a = abort;
        return a != null && a.aborted(this);
    }

    /** Event loop: the request's address, if it still lives. */
    long live() {
        long h = handle;
        if (h == 0) {
            throw new IllegalStateException("the request is over (or this is a jvm_log handler"
                    + " off the event loop): its nginx variables are gone");
        }
        return h;
    }

    /**
     * The id of this request's trace (32 lower-case hex digits) when tracing
     * is on (docs/operations.md, "Tracing"), else null: the client's when it
     * sent a W3C {@code traceparent}, sampled or not.
     */
    public String traceId() {
        Trace t = trace;
        return t == null ? null : t.traceId;
    }

    /**
     * The id of the handler's span (16 lower-case hex digits) when tracing
     * is on, else null: the parent of the spans the handler makes through
     * the OpenTelemetry API, whose current span it is while the handler runs.
     */
    public String spanId() {
        Trace t = trace;
        return t == null ? null : t.spanId;
    }

    /**
     * The W3C {@code traceparent} naming the handler's span, for the calls
     * the handler makes by other means than {@link #subrequest} (which sends
     * it), or null when tracing is off.
     */
    public String traceparent() {
        Trace t = trace;
        return t == null ? null : t.traceparent;
    }

    /** The method as sent, in upper case: "GET", "POST", ... */
    public String method() {
        if (method == null) {
            method = field(METHOD, METHODS);
        }
        return method;
    }

    /**
     * The request path as sent, not decoded or normalised, each byte one
     * char (ISO-8859-1): Ring's {@code :uri}. After a rewrite or an internal
     * redirect, the new path as nginx has it. {@link #path} is the path
     * nginx routes on.
     */
    public String uri() {
        if (uri == null) {
            uri = field(URI);
        }
        return uri;
    }

    /**
     * The path nginx routes on, its {@code $uri}: the request path with
     * {@code %XX} decoded, as UTF-8 (a byte that is no UTF-8 becomes
     * U+FFFD), {@code .} and {@code ..} segments resolved and {@code //}
     * merged (merge_slashes), after any {@code rewrite}, {@code try_files},
     * {@code error_page} or other internal redirect; a subrequest's own URI.
     * The location that runs this handler was chosen by it.
     *
     * <p>What {@code variable("uri")} answers, but read from this request's
     * copy, as {@link #uri}: on any thread, with no hop to the event loop. As
     * it was when the handler was called, or as {@link #setUri} set it.
     */
    public String path() {
        if (path == null) {
            if ((flags() & Wire.REQ_HAS_URI) != 0) {
                path = utf8(offset(NGINX_URI));
            } else {
                // the path is $uri: the same String when it is ASCII
                String u = uri();
                path = ascii(u) ? u : utf8(offset(URI));
            }
        }
        return path;
    }

    private String utf8(int at) {
        return new String(data, at + 4, Wire.getInt(data, at), StandardCharsets.UTF_8);
    }

    private static boolean ascii(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) >= 0x80) {
                return false;
            }
        }
        return true;
    }

    /** What follows the first '?' of the request target, or null when there is no '?'. */
    public String queryString() {
        if ((flags() & Wire.REQ_HAS_QUERY) == 0) {
            return null;
        }
        if (query == null) {
            query = field(QUERY);
        }
        return query;
    }

    /** "HTTP/1.0", "HTTP/1.1" or "HTTP/2.0". */
    public String protocol() {
        if (protocol == null) {
            protocol = field(PROTOCOL, PROTOCOLS);
        }
        return protocol;
    }

    /** True for a valid WebSocket opening handshake (RFC 6455), which nginx checked. */
    public boolean isWebSocketUpgrade() {
        return (flags() & Wire.REQ_WEBSOCKET) != 0;
    }

    public boolean isHttps() {
        return (flags() & Wire.REQ_HTTPS) != 0;
    }

    public String scheme() {
        return isHttps() ? "https" : "http";
    }

    /** The host the client asked for (Host header, without port), else the server's name. */
    public String serverName() {
        if (serverName == null) {
            serverName = field(SERVER_NAME);
        }
        return serverName;
    }

    /** The local port the connection arrived on. */
    public int serverPort() {
        return Wire.getInt(data, 4);
    }

    public String remoteAddr() {
        if (remoteAddr == null) {
            remoteAddr = field(REMOTE_ADDR);
        }
        return remoteAddr;
    }

    /** The verified client certificate of a TLS connection, or null. */
    public X509Certificate sslClientCert() {
        int at = offset(CLIENT_CERT);
        int len = Wire.getInt(data, at);
        if (len == 0) {
            return null;
        }
        try {
            return (X509Certificate) CertificateFactory.getInstance("X.509")
                    .generateCertificate(new ByteArrayInputStream(data, at + 4, len));
        } catch (Exception e) {
            return null;
        }
    }

    /** How many header fields the request has, repeated names counted each time. */
    public int headerCount() {
        return headerCount;
    }

    private int headerAt(int i) {
        if (i < 0 || i >= headerCount) {
            throw new IndexOutOfBoundsException(i);
        }
        int pos = headersAt;
        for (int n = 0; n < 2 * i; n++) {
            pos += 4 + Wire.getInt(data, pos);
        }
        return pos;
    }

    /** The name of the i-th header field, as the client spelled it. */
    public String headerName(int i) {
        return string(headerAt(i));
    }

    public String headerValue(int i) {
        int at = headerAt(i);
        return string(at + 4 + Wire.getInt(data, at));
    }

    /**
     * The header fields by lower-case name. Repeated fields are joined with
     * ","; Cookie fields with "; ", as Ring's SPEC says.
     */
    public Map<String, String> headers() {
        if (headers == null) {
            String[] kv = pairs();
            Map<String, String> map = new LinkedHashMap<>(kv.length);
            for (int i = 0; i < kv.length; i += 2) {
                map.put(kv[i], kv[i + 1]);
            }
            headers = map;
        }
        return headers;
    }

    /**
     * The header fields as lower-case names and joined values, alternating
     * (name, value, name, value, ...), in the order of their first field: a
     * copy, which the Ring adapter makes its header map of.
     */
    String[] headerPairs() {
        return pairs().clone();
    }

    private String[] pairs() {
        if (pairs == null) {
            String[] kv = new String[headerCount * 2];
            int n = 0;
            int pos = headersAt;
            for (int i = 0; i < headerCount; i++) {
                int nameLen = Wire.getInt(data, pos);
                String name = lowerCase(data, pos + 4, nameLen);
                pos += 4 + nameLen;
                int valueLen = Wire.getInt(data, pos);
                String value = new String(data, pos + 4, valueLen, StandardCharsets.ISO_8859_1);
                pos += 4 + valueLen;
                int seen = 0;
                while (seen < n && !kv[seen].equals(name)) {
                    seen += 2;
                }
                if (seen < n) {
                    kv[seen + 1] += (name.equals("cookie") ? "; " : ",") + value;
                } else {
                    kv[n++] = name;
                    kv[n++] = value;
                }
            }
            bodyAt = pos;
            pairs = n == kv.length ? kv : java.util.Arrays.copyOf(kv, n);
        }
        return pairs;
    }

    /** The joined value of the header named {@code name} (any case), or null. */
    public String header(String name) {
        String[] kv = pairs();
        for (int i = 0; i < kv.length; i += 2) {
            if (kv[i].equalsIgnoreCase(name)) {
                return kv[i + 1];
            }
        }
        return null;
    }

    /** The charset parameter of the Content-Type header, or null. */
    public String characterEncoding() {
        return charsetParameter(header("content-type"));
    }

    /**
     * The one parser of "charset=" in a Content-Type value (request and
     * response alike): its value without quotes, or null.
     */
    static String charsetParameter(String contentType) {
        int at = charsetAt(contentType);
        if (at < 0) {
            return null;
        }
        int n = contentType.length();
        int end = at;
        while (end < n && contentType.charAt(end) != ';' && contentType.charAt(end) != ' ') {
            end++;
        }
        return contentType.substring(at, end).replace("\"", "");
    }

    /** Where the value of the first "charset=" of a Content-Type value begins, or -1. */
    static int charsetAt(String contentType) {
        if (contentType == null) {
            return -1;
        }
        int n = contentType.length();
        for (int i = 0; i + 8 <= n; i++) {
            if (contentType.regionMatches(true, i, "charset=", 0, 8)) {
                return i + 8;
            }
        }
        return -1;
    }

    /**
     * A new stream over the request body; empty when there is none. With
     * {@code jvm_request_buffering off} the body may still be arriving: the
     * stream is then the one stream of the body as it arrives (every call
     * answers it), whose reads block until nginx has read more from the
     * client and throw an IOException when the client leaves, stalls for
     * client_body_timeout, or sends a malformed or too large body.
     */
    public InputStream body() {
        if (upload != null) {
            return upload;
        }
        if (bodyAt < 0) {
            pairs();
        }
        return RequestBody.open(data, bodyAt, files, filesError);
    }

    /**
     * For a reader of {@link #body()} that must not block (a servlet
     * engine's non-blocking reads): true when a read would answer at once:
     * always for a body nginx read whole first (in memory or a file); with
     * {@code jvm_request_buffering off}, when bytes have come, or the body
     * ended, failed or the request is over. Otherwise false, and
     * {@code whenReadable} runs once when a read would answer, on the event
     * loop: it must only hand work to another thread, never block. A later
     * call replaces the callback of an earlier one that has not run; a null
     * callback only asks.
     */
    public boolean bodyReadable(Runnable whenReadable) {
        UploadBody u = upload;
        return u == null || u.readable(whenReadable);
    }

    /** True when the request came with a body (possibly empty). */
    public boolean hasBody() {
        if (upload != null) {
            return true;
        }
        if (bodyAt < 0) {
            pairs();
        }
        return Wire.getInt(data, bodyAt) > 0;
    }

    static String lowerCase(byte[] b, int off, int len) {
        String k = known(NAMES, b, off, len, true);
        if (k != null) {
            return k;
        }
        for (int i = off; i < off + len; i++) {
            if (b[i] >= 'A' && b[i] <= 'Z') {
                byte[] copy = new byte[len];
                for (int j = 0; j < len; j++) {
                    byte c = b[off + j];
                    copy[j] = (c >= 'A' && c <= 'Z') ? (byte) (c + 32) : c;
                }
                return new String(copy, StandardCharsets.ISO_8859_1);
            }
        }
        return new String(b, off, len, StandardCharsets.ISO_8859_1);
    }
}
