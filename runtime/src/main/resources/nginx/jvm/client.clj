(ns nginx.jvm.client
  "Calls out through nginx's upstreams, from any thread (a handler in any
  mode, a timer, a listener): a request into a location marked
  `jvm_client NAME`, whose proxy_pass does the work (balancing, keepalive,
  retries, timeouts, TLS, cache). The Clojure face of nginx.jvm.Upstream
  (docs/handlers.md).

    (client/call \"api\" \"/items?page=2\" {:headers {\"X-User\" \"alice\"}})
    ;; => a CompletableFuture of {:status 200 :headers {...} :body <InputStream>}

  The :body is read as it arrives, with back-pressure; close it (or read
  it to its end). The future completes on the event loop: keep callbacks
  short, read the body elsewhere (a pool or virtual thread), or hand it
  to a Ring response as its :body."
  (:import (nginx.jvm Upstream Upstream$Reply)
           (java.io InputStream)
           (java.util LinkedHashMap)
           (java.util.concurrent CompletableFuture CompletionException)
           (java.util.function BiConsumer Function)))

(defn- ring-reply
  "A Ring-style map of a reply: lower-case header names, repeated fields
  joined with \",\"."
  [^Upstream$Reply r]
  {:status (.status r)
   :headers (reduce (fn [m ^String n]
                      (let [k (.toLowerCase n)]
                        (if (contains? m k)
                          m
                          (assoc m k (clojure.string/join "," (.headers r n))))))
                    {} (.names r))
   :body (.body r)})

(defn call
  "Calls `uri` (after the jvm_client location's prefix, with ?args or not)
  through the jvm_client location named `client`. Options: :method
  (\"GET\"), :args (a query string), :headers (a map of name to value),
  :body (a String or bytes, sent with its Content-Length, or an
  InputStream, streamed chunked). Answers a CompletableFuture of
  {:status :headers :body}, :body an InputStream. With a `callback`, calls
  it instead with that map, or with the exception when no answer came.
  nginx's own 502 and 504 are answers; a body cut short throws from its
  read."
  ([client uri] (call client uri {}))
  ([client uri {:keys [method args headers body]}]
   (let [i (.indexOf ^String uri "?")
         [path query] (if (neg? i) [uri args] [(subs uri 0 i) (subs uri (inc i))])
         method (or method "GET")
         hs (when headers
              (let [m (LinkedHashMap.)]
                (doseq [[k v] headers] (.put m (if (keyword? k) (name k) (str k)) (str v)))
                m))
         ^CompletableFuture f
         (if (instance? InputStream body)
           (Upstream/stream client method path query hs ^InputStream body)
           (Upstream/call client method path query hs
                          ^bytes (cond (nil? body) nil
                                       (bytes? body) body
                                       :else (.getBytes (str body) "UTF-8"))))]
     (let [^CompletableFuture out (.thenApply f (reify Function (apply [_ r] (ring-reply r))))]
       ;; cancelling the map's future before the answer came ends the call,
       ;; as cancelling Upstream's own does (thenApply would not pass it on)
       (.whenComplete out (reify BiConsumer
                            (accept [_ _ _]
                              (when (.isCancelled out) (.cancel f false)))))
       out)))
  ([client uri opts callback]
   (.whenComplete ^CompletableFuture (call client uri opts)
                  (reify BiConsumer
                    (accept [_ r e]
                      (callback (or r (if (instance? CompletionException e)
                                        (.getCause ^Throwable e) e))))))))
