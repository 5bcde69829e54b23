(ns wsbench.httpkit
  "bench/websocket.py's echo on http-kit: its own channel API (as-channel,
  send!), which is how http-kit serves WebSockets."
  (:require [org.httpkit.server :as hk]))

(defn handler [req]
  (if (:websocket? req)
    (hk/as-channel req {:on-receive (fn [ch msg] (hk/send! ch msg))})
    {:status 200 :headers {"Content-Type" "text/plain"} :body "ws echo"}))
