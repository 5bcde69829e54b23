(ns testapp.ws
  "WebSocket handlers for the integration tests, written against Ring's own
  websocket API (ring.websocket, Ring 1.11+), which the runtime provides when
  the class path lacks it."
  (:require [ring.websocket :as ws]
            [ring.websocket.protocols :as wsp]))

;; Every socket event, in the order the listener saw them, by socket name
;; (the ?name= of the upgrade request): what /ws/events answers.
(def events (atom {}))

(defn- record [name & event]
  (swap! events update name (fnil conj []) (vec event)))

(defn- thread-name [] (.getName (Thread/currentThread)))

(defn- query [req k]
  (some->> (:query-string req) (re-find (re-pattern (str k "=([^&]*)"))) second))

(defn echo
  "Echoes every message; a text message \"close\" closes with 4000 \"bye\",
  \"thread\" answers the thread the listener runs on, \"burst N\" sends N
  messages from another thread."
  [req]
  (if-not (ws/upgrade-request? req)
    {:status 200 :headers {"Content-Type" "text/plain"}
     :body (str "not a websocket request; websocket? " (boolean (:websocket? req)))}
    (let [name (or (query req "name") "anon")
          protocols (ws/request-protocols req)]
      (cond->
       {::ws/listener
        {:on-open (fn [sock] (record name :open))
         :on-message
         (fn [sock msg]
           (record name :message (if (string? msg) :text :binary))
           (cond
             (= msg "close") (ws/close sock 4000 "bye")
             (= msg "thread") (ws/send sock (thread-name))
             (and (string? msg) (.startsWith ^String msg "burst "))
             (let [n (Long/parseLong (subs msg 6))]
               (future (dotimes [i n] (ws/send sock (str "m" i)))
                       (ws/send sock "done")))
             (and (string? msg) (.startsWith ^String msg "async "))
             (ws/send sock (subs msg 6)
                      (fn [] (record name :sent))
                      (fn [e] (record name :failed)))
             (= msg "throw") (throw (ex-info "listener threw on purpose" {}))
             :else (ws/send sock msg)))
         :on-pong (fn [sock data] (record name :pong (.remaining ^java.nio.ByteBuffer data)))
         :on-error (fn [sock e] (record name :error (.getMessage ^Throwable e)))
         :on-close (fn [sock code reason] (record name :close code reason))}}
        (some #{"chat"} protocols) (assoc ::ws/protocol "chat")))))

(defn pings
  "A listener that answers pings itself (PingListener): with \"pong:\" and the data."
  [req]
  {::ws/listener
   (reify
     wsp/Listener
     (on-open [_ sock])
     (on-message [_ sock msg] (ws/send sock msg))
     (on-pong [_ sock data])
     (on-error [_ sock e])
     (on-close [_ sock code reason])
     wsp/PingListener
     (on-ping [_ sock data]
       (let [b (byte-array (.remaining ^java.nio.ByteBuffer data))]
         (.get ^java.nio.ByteBuffer data b)
         (ws/send sock (str "ping:" (String. b "UTF-8"))))))})

(defn async-echo
  "The 3-arity form: the listener is given through respond."
  [req respond raise]
  (future (respond {::ws/listener {:on-message (fn [sock msg] (ws/send sock msg))}})))

(defn events-of
  "The events of the socket ?name=, as EDN."
  [req]
  {:status 200 :headers {"Content-Type" "application/edn"}
   :body (pr-str (get @events (query req "name") []))})

(defn live-sockets
  "How many WebSockets the runtime still keeps (read by reflection: a test's
  window into nginx.jvm.WebSockets, to prove closed sockets are forgotten)."
  [_]
  (let [f (.getDeclaredField nginx.jvm.Worker "sockets")]
    (.setAccessible f true)
    (let [sockets (.get f nil)
          size (.getDeclaredMethod (class sockets) "size" (make-array Class 0))]
      (.setAccessible size true)
      {:status 200 :body (str (.invoke size sockets (object-array 0)))})))

(defn pure-echo
  "Echoes every message as it came: the Autobahn test suite's peer."
  [_]
  {::ws/listener {:on-message (fn [sock msg] (ws/send sock msg))}})
