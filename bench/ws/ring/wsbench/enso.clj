(ns wsbench.enso
  "bench/websocket.py's echo on enso: its listener map (Ring's
  :ring.websocket/listener key), and its own socket's send: enso's sockets
  are not Ring's Socket protocol."
  (:require [clojure.string :as str])
  (:import (com.s_exp.enso.websocket WebSocketSocket)
           (java.nio ByteBuffer)))

(defn- upgrade? [req]
  (= "websocket" (some-> (get-in req [:headers "upgrade"]) str/lower-case)))

(defn handler [req]
  (if (upgrade? req)
    {:ring.websocket/listener
     {:on-message (fn [^WebSocketSocket sock msg]
                    (if (instance? CharSequence msg)
                      (.sendText sock ^CharSequence msg)
                      (.sendBinary sock ^ByteBuffer msg)))}}
    {:status 200 :headers {"Content-Type" "text/plain"} :body "ws echo"}))
