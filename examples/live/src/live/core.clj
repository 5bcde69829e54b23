(ns live.core
  "A live page: a chat over a WebSocket and a clock over server-sent
  events, with Ring's own APIs (ring.websocket, StreamableResponseBody).
  Serve it with jvm_async on (the launcher's --async): the clock's stream
  is written after the handler returned."
  (:require [clojure.java.io :as io]
            [ring.core.protocols :as protocols]
            [ring.websocket :as ws])
  (:import [java.io IOException OutputStream]
           [java.time LocalTime]
           [java.time.format DateTimeFormatter]))

;; The chat room of this worker: each nginx worker has its own JVM, so a
;; room spans one worker (pin clients with a single worker, or share rooms
;; through a store all workers see).
(def ^:private room (atom #{}))

(defn- broadcast [message]
  (doseq [socket @room]
    ;; never waits: a reader too slow for its queue misses the message
    (ws/send socket message (fn []) (fn [_] (swap! room disj socket)))))

(defn- chat [request]
  {::ws/listener
   {:on-open (fn [socket]
               (swap! room conj socket)
               (broadcast (str "* someone joined (" (count @room) " here)")))
    :on-message (fn [socket message]
                  (when (string? message)
                    (broadcast (subs message 0 (min 500 (count message))))))
    :on-close (fn [socket _ _]
                (swap! room disj socket)
                (broadcast (str "* someone left (" (count @room) " here)")))}})

(def ^:private hms (DateTimeFormatter/ofPattern "HH:mm:ss"))

(defn- clock
  "Server-sent events: the time, every second, until the client leaves
  (its next write then throws)."
  []
  (reify protocols/StreamableResponseBody
    (write-body-to-stream [_ _ out]
      (future
        (try
          (loop []
            (.write ^OutputStream out
                    (.getBytes (str "data: " (.format (LocalTime/now) hms) "\n\n")))
            (.flush ^OutputStream out)
            (Thread/sleep 1000)
            (recur))
          (catch IOException _ nil)
          (finally (try (.close ^OutputStream out) (catch IOException _ nil))))))))

(defn- route [request]
  (case (:uri request)
    "/" {:status 200 :headers {"Content-Type" "text/html; charset=utf-8"}
         :body (io/file (io/resource "live/index.html"))}
    "/chat" (if (ws/upgrade-request? request)
              (chat request)
              {:status 400 :body "a WebSocket endpoint"})
    "/clock" {:status 200
              :headers {"Content-Type" "text/event-stream" "Cache-Control" "no-cache"}
              :body (clock)}
    {:status 404 :headers {"Content-Type" "text/plain"} :body "not found"}))

(defn app
  "The Ring handler, in both forms: synchronous and asynchronous."
  ([request] (route request))
  ([request respond _] (respond (route request))))
