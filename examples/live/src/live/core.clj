(ns live.core
  "A live page: a chat over a WebSocket and a clock over server-sent
  events, with Ring's own APIs (ring.websocket, StreamableResponseBody).
  The chat spans every worker: it needs `jvm_topic chat 1m;` and
  `jvm_shared_dict chat 64k;` in nginx.conf (the launcher's
  --topic chat:1m --shared-dict chat:64k).
  Serve it with jvm_async on (the launcher's --async): the clock's stream
  is written after the handler returned."
  (:require [clojure.java.io :as io]
            [ring.core.protocols :as protocols]
            [nginx.jvm.request :as request]
            [nginx.jvm.shared :as shared]
            [ring.websocket :as ws])
  (:import [java.io IOException OutputStream]
           [java.time LocalTime]
           [java.time.format DateTimeFormatter]))

;; The chat room spans every worker. Each nginx worker has its own JVM, and
;; so its own sockets: a message goes to the topic "chat" (jvm_topic, in
;; nginx's shared memory), and each worker's subscriber sends what the topic
;; carries to the sockets of that worker. How many are here, in all workers,
;; is a counter in the shared dictionary "chat" (jvm_shared_dict).
(def ^:private room (atom #{}))

(defn- to-room
  "Sends a message to this worker's sockets; on the worker's event loop."
  [message]
  (doseq [socket @room]
    ;; never waits: a reader too slow for its queue misses the message
    (ws/send socket message (fn []) (fn [_] (swap! room disj socket)))))

;; Subscribed once per worker, when its first chat socket opens. With the
;; environment variable NGINX_JVM_REDIS (nginx.conf: `env NGINX_JVM_REDIS;`)
;; the topic is also bridged over that Redis, so that the chat spans every
;; host using it (docs/scale-out.md); nginx.jvm.redis, and Jedis with it,
;; is loaded only then.
(def ^:private topic
  (delay (let [t (doto (shared/topic "chat")
                   (shared/subscribe! to-room))]
           (when-let [redis (not-empty (System/getenv "NGINX_JVM_REDIS"))]
             ((requiring-resolve 'nginx.jvm.redis/bridge!)
              {:topic "chat" :dict "chat" :redis redis :channel "nginx-jvm:live:chat"}))
           t)))

(def ^:private people (delay (shared/dict "chat")))

(defn- broadcast [message]
  (when-not (shared/publish! @topic message)
    ;; the ring is full: the workers are behind; this message is dropped
    nil))

(defn- chat [request]
  {::ws/listener
   {:on-open (fn [socket]
               @topic
               (swap! room conj socket)
               (broadcast (str "* someone joined ("
                               (shared/incr! @people "here") " here)")))
    :on-message (fn [socket message]
                  (when (string? message)
                    (broadcast (subs message 0 (min 500 (count message))))))
    :on-close (fn [socket _ _]
                (swap! room disj socket)
                (broadcast (str "* someone left ("
                                (shared/incr! @people "here" -1) " here)")))}})

(def ^:private hms (DateTimeFormatter/ofPattern "HH:mm:ss"))

(defn- clock
  "Server-sent events: the time, every second, until the client leaves.
  The request's on-abort callback stops the clock's thread at once (a
  sleeping clock would otherwise learn it only at its next write, which
  then throws)."
  [req]
  (reify protocols/StreamableResponseBody
    (write-body-to-stream [_ _ out]
      (let [ticks (future
                    (try
                      (loop []
                        (.write ^OutputStream out
                                (.getBytes (str "data: " (.format (LocalTime/now) hms) "\n\n")))
                        (.flush ^OutputStream out)
                        (Thread/sleep 1000)
                        (recur))
                      (catch IOException _ nil)
                      (catch InterruptedException _ nil)
                      (finally (try (.close ^OutputStream out) (catch IOException _ nil)))))]
        (request/on-abort req #(future-cancel ticks))))))

(def ^:private page
  "index.html: a File (nginx sends it by sendfile) when it is one on the
  class path; its bytes, read once, when it is inside a jar, as with
  jvm_cache, which puts the class path's directories in jars."
  (delay (let [url (io/resource "live/index.html")]
           (if (= "file" (.getProtocol url))
             (io/file url)
             (with-open [in (io/input-stream url)]
               (.readAllBytes in))))))

(defn- route [request]
  (case (:uri request)
    "/" {:status 200 :headers {"Content-Type" "text/html; charset=utf-8"}
         :body @page}
    "/chat" (if (ws/upgrade-request? request)
              (chat request)
              {:status 400 :body "a WebSocket endpoint"})
    "/clock" {:status 200
              :headers {"Content-Type" "text/event-stream" "Cache-Control" "no-cache"}
              :body (clock request)}
    {:status 404 :headers {"Content-Type" "text/plain"} :body "not found"}))

(defn app
  "The Ring handler, in both forms: synchronous and asynchronous."
  ([request] (route request))
  ([request respond _] (respond (route request))))
