(ns wsbench.echo
  "The Ring WebSocket echo of bench/websocket.py, on Ring's own websocket API
  (ring.websocket, which nginx-jvm's runtime provides when the class path
  lacks it): every message comes back as it came."
  (:require [ring.websocket :as ws]))

(defn handler [req]
  (if (ws/upgrade-request? req)
    {::ws/listener {:on-message (fn [sock msg] (ws/send sock msg))}}
    {:status 200 :headers {"Content-Type" "text/plain"} :body "ws echo"}))
