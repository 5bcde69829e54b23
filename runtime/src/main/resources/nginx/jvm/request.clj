(ns nginx.jvm.request
  "nginx's side of a Ring request: its variables and the URI nginx routes
  on. Every function takes the Ring request map nginx-jvm made (it carries
  its nginx.jvm.Request under :nginx.jvm/request).

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

(defn status
  "In a jvm_log handler: the status nginx answered."
  [req]
  (.status (nginx-request req)))

(defn bytes-sent
  "In a jvm_log handler: the bytes nginx sent to the client."
  [req]
  (.bytesSent (nginx-request req)))
