(ns ring.websocket
  "Ring's websocket API (Ring SPEC, section 3), provided by nginx-jvm for
  class paths without Ring 1.11's ring-core: the same names, written from
  the spec, loaded only when Ring's own is absent."
  (:refer-clojure :exclude [send])
  (:require [clojure.string :as str]
            [ring.websocket.protocols :as p])
  (:import [java.nio ByteBuffer]))

(defn- token? [value token]
  (and value (some #(.equalsIgnoreCase ^String token (str/trim %))
                   (str/split value #","))))

(defn upgrade-request?
  "True if the request asks to become a websocket."
  [request]
  (let [headers (:headers request)]
    (boolean (and (token? (get headers "connection") "upgrade")
                  (token? (get headers "upgrade") "websocket")))))

(defn websocket-response?
  "True if the response upgrades the connection to a websocket."
  [response]
  (and (map? response) (contains? response ::listener)))

(defn request-protocols
  "The subprotocols the client offered, in its order."
  [request]
  (if-let [value (get-in request [:headers "sec-websocket-protocol"])]
    (vec (remove str/blank? (map str/trim (str/split value #","))))
    []))

(defn open?
  "True if the socket is open."
  [socket]
  (boolean (p/-open? socket)))

(defn send
  "Sends a message (a String or a ByteBuffer); with succeed and fail, without
  blocking, calling one of them."
  ([socket message]
   (p/-send socket message))
  ([socket message succeed fail]
   (p/-send-async socket message succeed fail)))

(defn ping
  "Sends a ping (data: a ByteBuffer of at most 125 bytes)."
  ([socket] (p/-ping socket (ByteBuffer/allocate 0)))
  ([socket data] (p/-ping socket data)))

(defn pong
  "Sends an unsolicited pong."
  ([socket] (p/-pong socket (ByteBuffer/allocate 0)))
  ([socket data] (p/-pong socket data)))

(defn close
  "Closes the socket: with code 1000 by default."
  ([socket] (p/-close socket 1000 "Normal Closure"))
  ([socket code reason] (p/-close socket code reason)))
