(ns connbench.httpkit
  "bench/conns.py's server on http-kit, the same three routes as
  bench/conns/java/connbench/Conns.java: GET /ping (keep-alive), /ws (an
  echo that also gets every broadcast) and /publish, which sends \"B\" and
  the time (ns since the epoch) to every open WebSocket of the process."
  (:require [org.httpkit.server :as hk])
  (:import (java.time Instant)
           (java.util.concurrent ConcurrentHashMap)))

(def ^ConcurrentHashMap sockets (ConcurrentHashMap.))

(defn- now-ns []
  (let [i (Instant/now)]
    (+ (* (.getEpochSecond i) 1000000000) (.getNano i))))

(defn handler [req]
  (cond
    (:websocket? req)
    (hk/as-channel req {:on-open (fn [ch] (.put sockets ch true))
                        :on-receive (fn [ch msg] (hk/send! ch msg))
                        :on-close (fn [ch _] (.remove sockets ch))})

    (= "/publish" (:uri req))
    (let [ns (now-ns)
          msg (str "B" ns)
          failed (count (remove #(hk/send! % msg) (enumeration-seq (.keys sockets))))]
      (when (pos? failed)
        (binding [*out* *err*]
          (println "connbench: broadcast send failed:" failed)))
      {:status 200 :headers {"Content-Type" "text/plain"} :body (str ns)})

    :else
    {:status 200 :headers {"Content-Type" "text/plain"} :body "pong"}))
