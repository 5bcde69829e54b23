(ns nginx.jvm.request
  "nginx's side of a Ring request: its variables, the URI nginx routes on
  and, before the content phase, its header fields. Every function takes
  the Ring request map nginx-jvm made (it carries its nginx.jvm.Request
  under :nginx.jvm/request).

  On the event loop (jvm_mode loop) a call reads nginx at once; on any other
  thread (pool, virtual, an async handler's callback) it hops to the event
  loop and waits for it: one wake-up of the loop per call (`variables` reads
  several in one hop). After the request is over the variables are gone and
  the calls throw."
  (:import (nginx.jvm Request)))

(defn ^Request nginx-request
  "The nginx.jvm.Request of a Ring request map."
  [req]
  (or (:nginx.jvm/request req)
      (throw (IllegalArgumentException.
              "not a request map made by nginx-jvm (no :nginx.jvm/request)"))))

(defn- var-name [v]
  (if (or (keyword? v) (symbol? v)) (name v) (str v)))

(defn variable
  "The value of the nginx variable `v` (a string, keyword or symbol, with or
  without \"$\": :remote_user, \"arg_id\", \"$cookie_session\"), or nil when
  it has none for this request. Throws IllegalArgumentException when nginx
  knows no such variable."
  [req v]
  (.variable (nginx-request req) (var-name v)))

(defn variables
  "A map of each of `vs` (as given) to its value, read in one go."
  [req & vs]
  (let [m (.variables (nginx-request req)
                      ^"[Ljava.lang.String;" (into-array String (map var-name vs)))]
    (zipmap vs (map #(.get m (var-name %)) vs))))

(defn set-variable!
  "Sets the nginx variable `v` (declared with set or jvm_set, or one nginx
  lets change such as :args) to the string `value`."
  [req v value]
  (.setVariable (nginx-request req) (var-name v) (str value)))

(defn set-uri!
  "In a jvm_rewrite handler: the URI nginx routes on once the handler lets
  the request go on (it looks for the location again)."
  [req uri]
  (.setUri (nginx-request req) uri))

(defn- field-name [k]
  (if (keyword? k) (name k) (str k)))

(defn set-header!
  "In a jvm_rewrite or jvm_access handler: the request header field `h` (a
  string or keyword, any case) gets `value` in place of every field of that
  name, so that proxy_pass (and $http_... variables, a content handler)
  sees it as if the client had sent it; nil removes the fields. The
  request map keeps the :headers the client sent.

  Throws IllegalArgumentException for a name that is no HTTP token, a
  value with CR, LF, NUL or another control but HTAB, a Host that is no
  host, Content-Length or Transfer-Encoding (nginx reads the body by
  them); IllegalStateException outside a rewrite or access handler."
  [req h value]
  (.setHeader (nginx-request req) (field-name h) (some-> value str)))

(defn add-header!
  "As set-header!, but one more field `h`, after those there are."
  [req h value]
  (.addHeader (nginx-request req) (field-name h) (str value)))

(defn clear-header!
  "As set-header!: removes every field `h`."
  [req h]
  (.clearHeader (nginx-request req) (field-name h)))

(defn set-headers!
  "Several changes in one go (one hop to the event loop off it), as a Ring
  response's :headers: name to a string (set), a seq of strings (one field
  each) or nil (removed). All are checked before any is made."
  [req fields]
  (let [m (java.util.LinkedHashMap.)]
    (doseq [[k v] fields]
      (.put m (field-name k) (if (or (nil? v) (string? v) (sequential? v)) v (str v))))
    (.setHeaders (nginx-request req) m)))

(defn on-abort
  "Calls `f` (no arguments) once if the client leaves before the response
  to `req` is complete: it closed or reset its connection (an HTTP/2
  stream reset), or read too slowly (send_timeout). For handlers off the
  event loop (jvm_mode pool or virtual) and asynchronous ones (jvm_async
  on, in any mode), including a body that goes on after the handler
  returned. `f` runs on one of the runtime's nginx-jvm-abort threads,
  never on the event loop, after the callbacks registered before it; an
  exception it throws is logged. Registered after the client left, it runs
  at once. With jvm_abort_interrupt on, the handler's thread is also
  interrupted (a Thread/sleep or a blocking read throws) while the call of
  the handler lasts.

  Returns true when `f` was registered (or run, the client having left);
  false when nothing can abort the request any more: its response is
  complete, or its handler runs on the event loop (jvm_mode loop without
  jvm_async), which nothing interrupts mid-call."
  [req f]
  (.onAbort (nginx-request req) ^Runnable f))

(defn aborted?
  "True once the client of `req` left before its response was complete
  (see on-abort)."
  [req]
  (.isAborted (nginx-request req)))

(defn status
  "In a jvm_log handler: the status nginx answered."
  [req]
  (.status (nginx-request req)))

(defn bytes-sent
  "In a jvm_log handler: the bytes nginx sent to the client."
  [req]
  (.bytesSent (nginx-request req)))

(defn- ring-response [^nginx.jvm.Response r]
  (let [headers (reduce (fn [m i]
                          (let [k (.toLowerCase (.headerName r i))
                                v (.headerValue r i)]
                            (assoc m k (if-let [old (get m k)] (str old "," v) v))))
                        {} (range (.headerCount r)))
        ^bytes body (.body r)]
    {:status (.status r)
     :headers headers
     :body (String. body "UTF-8")
     :body-bytes body}))

(defn subrequest
  "Sends a request through nginx to `uri` (a path of this server, often an
  internal location with proxy_pass), as a subrequest of `req`, without
  blocking any thread. Options: :method (\"GET\"), :args (a query string),
  :headers (a map of name to value, added to or replacing the request's
  own), :body (a String or bytes).

  Answers a java.util.concurrent.CompletableFuture of a Ring-style map:
  :status, :headers (lower-case names), :body (a String, UTF-8) and
  :body-bytes. With a `callback`, calls it instead with that map, or with
  the exception when the subrequest could not be made (it runs on the event
  loop: keep it short). An upstream that refuses or times out answers 502 or
  504; a missing location 404. Needs jvm_async on, or jvm_mode pool or
  virtual (deref the future there)."
  ([req uri] (subrequest req uri {}))
  ([req uri {:keys [method args headers body]}]
   (let [[path query] (let [i (.indexOf ^String uri "?")]
                        (if (neg? i) [uri args] [(subs uri 0 i) (subs uri (inc i))]))
         body (cond (nil? body) nil
                    (bytes? body) body
                    :else (.getBytes (str body) "UTF-8"))
         hs (when headers
              (let [m (java.util.LinkedHashMap.)]
                (doseq [[k v] headers] (.put m (if (keyword? k) (name k) (str k)) (str v)))
                m))]
     (.thenApply (.subrequest (nginx-request req) (or method "GET") path query hs body)
                 (reify java.util.function.Function
                   (apply [_ r] (ring-response r))))))
  ([req uri opts callback]
   (.whenComplete ^java.util.concurrent.CompletableFuture (subrequest req uri opts)
                  (reify java.util.function.BiConsumer
                    (accept [_ r e]
                      (callback (or r (if (instance? java.util.concurrent.CompletionException e)
                                        (.getCause ^Throwable e) e))))))))
