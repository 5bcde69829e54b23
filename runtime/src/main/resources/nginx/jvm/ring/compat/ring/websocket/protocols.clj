(ns ring.websocket.protocols
  "Ring's websocket protocols (Ring SPEC, section 3), provided by nginx-jvm
  for class paths without Ring 1.11's ring-websocket-protocols: the same
  names, written from the spec, loaded only when Ring's own are absent.")

(defprotocol Listener
  "What an application does with a websocket's events."
  (on-open [listener socket])
  (on-message [listener socket message])
  (on-pong [listener socket data])
  (on-error [listener socket throwable])
  (on-close [listener socket code reason]))

(defprotocol PingListener
  "A listener that answers pings itself."
  (on-ping [listener socket data]))

(defprotocol Socket
  "An open websocket."
  (-open? [socket])
  (-send [socket message])
  (-ping [socket data])
  (-pong [socket data])
  (-close [socket code reason]))

(defprotocol AsyncSocket
  "A websocket that sends without blocking."
  (-send-async [socket message succeed fail]))

(extend-type clojure.lang.IPersistentMap
  Listener
  (on-open [m socket]
    (when-let [f (:on-open m)] (f socket)))
  (on-message [m socket message]
    (when-let [f (:on-message m)] (f socket message)))
  (on-pong [m socket data]
    (when-let [f (:on-pong m)] (f socket data)))
  (on-error [m socket throwable]
    (when-let [f (:on-error m)] (f socket throwable)))
  (on-close [m socket code reason]
    (when-let [f (:on-close m)] (f socket code reason)))
  PingListener
  (on-ping [m socket data]
    (if-let [f (:on-ping m)]
      (f socket data)
      (-pong socket data))))
