(ns testapp.bridge
  "The topic \"t\" bridged over Redis (NGINX_JVM_TEST_REDIS, channel
  NGINX_JVM_TEST_CHANNEL, or the stream NGINX_JVM_TEST_STREAM when set): /events is a server-sent event stream of what
  the topic carries, /publish?msg=M publishes M on the local topic."
  (:require [clojure.string :as str]
            [nginx.jvm.redis :as redis]
            [nginx.jvm.shared :as shared]
            [ring.core.protocols :as protocols])
  (:import [java.io IOException OutputStream]
           [java.nio.charset StandardCharsets]))

(def ^:private pid (str (.pid (java.lang.ProcessHandle/current))))
(defonce ^:private streams (atom #{}))
(defonce ^:private bridge (atom nil))

(defn- send-all [message]
  (let [b (.getBytes (str "data: " message "\n\n") StandardCharsets/UTF_8)]
    (doseq [^OutputStream out @streams]
      (try (.write out b) (.flush out)
           (catch IOException _ (swap! streams disj out))))))

(defn init []
  (shared/subscribe! (shared/topic "t") send-all)
  (reset! bridge (redis/bridge! {:topic "t" :dict "b"
                                 :redis (System/getenv "NGINX_JVM_TEST_REDIS")
                                 :channel (System/getenv "NGINX_JVM_TEST_CHANNEL")
                                 :stream (System/getenv "NGINX_JVM_TEST_STREAM")})))

(defn- events []
  (reify protocols/StreamableResponseBody
    (write-body-to-stream [_ _ out]
      (.write ^OutputStream out (.getBytes (str ": " pid "\n\n") StandardCharsets/UTF_8))
      (.flush ^OutputStream out)
      (swap! streams conj out))))

(defn- route [req]
  (case (:uri req)
    "/events" {:status 200 :headers {"Content-Type" "text/event-stream"} :body (events)}
    "/publish" (let [msg (java.net.URLDecoder/decode
                          (subs (or (:query-string req) "msg=") 4) "UTF-8")]
                 {:status 200 :headers {"X-Pid" pid}
                  :body (str (shared/publish! (shared/topic "t") msg))})
    "/status" (let [^nginx.jvm.RedisBridge b @bridge]
                {:status 200 :headers {"X-Pid" pid "Content-Type" "application/edn"}
                 :body (pr-str {:leader (.isLeader b) :subscribed (.isSubscribed b)
                                :forwarded (.forwarded b) :received (.received b)
                                :dropped (.dropped b) :origin (.origin b)})})
    {:status 404 :body "?"}))

(defn app
  ([req] (route req))
  ([req respond _] (respond (route req))))
