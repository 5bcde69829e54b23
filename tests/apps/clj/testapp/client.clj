(ns testapp.client
  "Ring handlers of tests/test_client.py: calls out through jvm_client."
  (:require [nginx.jvm.client :as client]))

(defn relay
  "Async: ?to= through jvm_client b, its answer relayed (the body streamed)."
  [req respond raise]
  (let [to (java.net.URLDecoder/decode (or (second (re-find #"to=([^&]*)" (or (:query-string req) ""))) "/echo")
                                       "UTF-8")]
    (client/call "b" to {:headers {"X-Call" "clj"}}
                 (fn [r]
                   (if (instance? Throwable r)
                     (respond {:status 502 :body (str "failed: " (.getMessage ^Throwable r))})
                     (respond {:status (:status r)
                               :headers {"X-Was" (str (get-in r [:headers "x-upstream"]))}
                               :body (:body r)}))))))

(defn post
  "Blocking (pool): a String body POSTed, the answer read whole."
  [req]
  (let [r @(client/call "b" "/post" {:method "POST" :body "from clojure"})]
    {:status 200 :body (str (:status r) " " (slurp (:body r)))}))

(defn cancel
  "Blocking (pool): a call of ?to= whose future is cancelled after 200 ms,
  before its answer: \"cancelled true\"."
  [req]
  (let [to (java.net.URLDecoder/decode (or (second (re-find #"to=([^&]*)" (or (:query-string req) ""))) "/hang")
                                       "UTF-8")
        f (client/call "b" to)]
    (Thread/sleep 200)
    {:status 200 :body (str "cancelled " (.cancel ^java.util.concurrent.Future f false))}))
