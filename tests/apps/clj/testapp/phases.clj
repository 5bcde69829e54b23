(ns testapp.phases
  "Ring handlers of the rewrite, access, header filter, log and jvm_set
  tests."
  (:require [nginx.jvm.request :as nr]))

(defn- thread-name []
  (let [t (Thread/currentThread)]
    (if (= "" (.getName t)) "virtual" (.getName t))))

(defn auth
  "Access: header x-token \"secret\" passes; else 401."
  [req]
  (when-not (= "secret" (get-in req [:headers "x-token"]))
    {:status 401 :headers {"WWW-Authenticate" "Bearer realm=\"clj\""}
     :body "clj denied"}))

(defn auth-async
  "The same, answered later from another thread (jvm_async on)."
  [req respond _]
  (future
    (Thread/sleep 20)
    (respond (when-not (= "secret" (nr/variable req :http_x_token))
               {:status 401 :body "clj async denied"}))))

(defn rewrite
  "Rewrite: /clj-old/X goes to /new/X."
  [req]
  (let [uri (nr/variable req "$uri")]
    (nr/set-uri! req (str "/new/" (subs uri (count "/clj-old/"))))
    nil))

(defn vars
  "Content: the variables a clojure handler reads."
  [req]
  (let [vs (nr/variables req :arg_a "request_method" :mapped)]
    {:status 200 :headers {"Content-Type" "text/plain"}
     :body (str "a=" (get vs :arg_a)
                " method=" (get vs "request_method")
                " mapped=" (get vs :mapped)
                " remote=" (nr/variable req :remote_addr)
                " thread=" (thread-name))}))

(defn filter-headers
  "Header filter: marks the response, drops x-drop."
  [req response]
  (-> response
      (update :headers dissoc "x-drop")
      (assoc-in [:headers "X-Clj-Filter"] (str (:status response)))))

(defn computed
  "jvm_set: from ?x=."
  [req]
  (some->> (nr/variable req :arg_x) (str "clj-")))

(defn log
  "Log: one line per request."
  [req]
  (locking #'log
    (spit (System/getProperty "testapp.log")
          (str "clj " (:uri req) " " (nr/status req) " " (nr/bytes-sent req) "\n")
          :append true))
  nil)

(defn combine
  "Async: two subrequests in parallel, combined."
  [req respond raise]
  (let [a (nr/subrequest req "/up/echo?which=a")
        b (nr/subrequest req "/up/echo" {:args "which=b" :headers {"X-Clj" "1"}})]
    (.whenComplete (java.util.concurrent.CompletableFuture/allOf
                    (into-array java.util.concurrent.CompletableFuture [a b]))
                   (reify java.util.function.BiConsumer
                     (accept [_ _ e]
                       (if e
                         (raise e)
                         (let [ra @a rb @b]
                           (respond {:status 200
                                     :body (str (:status ra) " "
                                                (boolean (re-find #"which=a" (:body ra)))
                                                "|" (:status rb) " "
                                                (get-in rb [:headers "x-upstream"]) " "
                                                (boolean (re-find #"\"x-clj\": \"1\"" (:body rb))))}))))))))

(defn callback
  "Async: a subrequest answered through a callback."
  [req respond _]
  (nr/subrequest req "/up/status/202" {}
                 (fn [r] (respond {:status 200 :body (str "callback " (:status r))}))))
