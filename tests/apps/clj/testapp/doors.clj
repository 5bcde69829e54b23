(ns testapp.doors
  "The doors test (tests/test_doors.py): each handler does what an ordinary
  Ring application does, passing a query parameter, already URL-decoded
  (?v=), on to the door ?d= names, with nothing checked."
  (:require [nginx.jvm.request :as nr]))

(defn- door [req] (nr/variable req :arg_d))

(defn- v [req]
  (if-let [s (nr/variable req :arg_v)]
    (java.net.URLDecoder/decode ^String s "ISO-8859-1")
    ""))

(defn content
  "Content: the response's header fields."
  [req]
  (let [v (v req)]
    (case (door req)
      "hv" {:status 200 :headers {"X-Door" (str "a" v "b")} :body "ok"}
      "hn" {:status 200 :headers {(str "X-D" v) "1"} :body "ok"}
      "loc" {:status 302 :headers {"Location" (str "/r?" v)}}
      "cookie" {:status 200 :headers {"Set-Cookie" [(str "s=a" v "b; Path=/")]} :body "ok"}
      "ctype" {:status 200 :headers {"Content-Type" (str "text/plain; x=a" v "b")} :body "ok"}
      "ws" {:ring.websocket/listener {:on-message (fn [_ _])}
            :ring.websocket/protocol (str "a" v "b")}
      "stream" {:status 200 :headers {"X-Door" (str "a" v "b")} :body (list "o" "k")}
      {:status 404 :body "no such door"})))

(defn phase-response
  "jvm_rewrite or jvm_access: a response of the phase."
  [req]
  (let [v (v req)]
    (if (= "loc" (door req))
      {:status 302 :headers {"Location" (str "/r?" v)}}
      {:status 401 :headers {"WWW-Authenticate" (str "Basic realm=\"a" v "b\"")}
       :body "no"})))

(defn filter-headers
  "jvm_header_filter: a field added, by value or by name."
  [req response]
  (let [v (v req)]
    (if (= "fn" (door req))
      (assoc-in response [:headers (str "X-D" v)] "1")
      (assoc-in response [:headers "X-Door"] (str "a" v "b")))))

(defn var-value
  "jvm_set."
  [req]
  (str "a" (v req) "b"))

(defn rewrite
  "jvm_rewrite: the request's variables, URI, args and header fields."
  [req]
  (let [v (v req)]
    (case (door req)
      "args" (do (nr/set-uri! req "/up/args") (nr/set-variable! req :args (str "a=" v)) nil)
      "uri" (do (nr/set-uri! req (str "/up/uri/" v)) nil)
      "setvar" (do (nr/set-variable! req :dv_clj (str "a" v "b")) nil)
      "hdr" (do (nr/set-header! req "X-Door" (str "a" v "b")) nil)
      "hdrn" (do (nr/set-header! req (str "X-D" v) "1") nil)
      {:status 404 :body "no such door"})))

(defn sub
  "jvm_async on: a subrequest to the upstream, its parts from ?v=."
  [req respond raise]
  (let [v (v req)
        opts (case (door req)
               "sm" {:method (str "GET" v)}
               "su" {:uri (str "/up/sub/" v)}
               "sa" {:args (str "a=" v)}
               "shn" {:headers {(str "X-D" v) "1"}}
               "shv" {:headers {"X-Door" (str "a" v "b")}}
               nil)]
    (if-not opts
      (respond {:status 404 :body "no such door"})
      (nr/subrequest req (:uri opts "/up/sub") (dissoc opts :uri)
                     (fn [r]
                       (if (instance? Throwable r)
                         (raise r)
                         (respond {:status 200 :body (str "sub " (:status r))})))))))
