(ns testapp.errors
  "Handlers that fail in each way a handler can.")

(defn boom [_]
  (throw (ex-info "boom-marker" {:why "the test asked for it"})))

(defn returns-nil [_] nil)

(defn returns-string [_] "not a response map")

(defn returns-number [_] 42)

(defn seq-throws
  "A seq body whose producer throws after 50 elements of 1000 bytes."
  [_]
  {:status 200
   :headers {"Content-Type" "text/plain"}
   :body (concat (map (fn [i] (apply str (repeat 1000 (char (+ 97 (mod i 26))))))
                      (range 50))
                 (lazy-seq (throw (IllegalStateException. "seq-boom-marker"))))})

(defn bad-response
  "A response that cannot be sent as it is, chosen by the query string;
  \"vector-body\" and \"token-names\" are good ones next to the bad."
  [request]
  (let [ok {:status 200 :headers {"Content-Type" "text/plain"} :body "sent"}]
    (case (:query-string request)
      "space-name" (assoc ok :headers {"Bad Name" "v"})
      "colon-name" (assoc ok :headers {"X:Y" "v"})
      "empty-name" (assoc ok :headers {"" "v"})
      "utf8-name" (assoc ok :headers {"X-Naïve" "v"})
      "crlf-value" (assoc ok :headers {"X-A" "a\r\nX-B: b"})
      "map-body" (assoc ok :body {:a 1 :b 2})
      "set-body" (assoc ok :body #{"a" "b"})
      "vector-body" (assoc ok :body ["vec" "tor"])
      "token-names" (assoc ok :headers {"X-Ok!#$%&'*+-.^_`|~09" "v"}))))

(defn exit
  "Ends the JVM as the query string says: \"exit\" (System/exit 2) or
  \"halt\" (Runtime.halt 2). Status 2 is nginx's \"fatal\" exit code."
  [request]
  (case (:query-string request)
    "exit" (System/exit 2)
    "halt" (.halt (Runtime/getRuntime) 2))
  {:status 200 :body "not reached"})
