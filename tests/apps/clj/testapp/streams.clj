(ns testapp.streams
  "Long-lived streams: server-sent events written after the handler returned."
  (:require [ring.core.protocols :as protocols]))

;; name -> what the producer saw: :written n, then :stopped and why
(def producers (atom {}))

(defn- query [req k]
  (some->> (:query-string req) (re-find (re-pattern (str k "=([^&]*)"))) second))

(defn- ticks
  "A body that writes n events ms apart from a thread of its own, after
  write-body-to-stream has returned; n 0 means until the client leaves."
  [name n ms]
  (reify protocols/StreamableResponseBody
    (write-body-to-stream [_ _ out]
      (future
        (try
          (loop [i 0]
            (when (or (zero? n) (< i n))
              (.write ^java.io.OutputStream out (.getBytes (str "data: tick " i "\n\n")))
              (.flush ^java.io.OutputStream out)
              (swap! producers assoc-in [name :written] (inc i))
              (Thread/sleep ms)
              (recur (inc i))))
          (swap! producers assoc-in [name :stopped] "ended")
          (.close ^java.io.OutputStream out)
          (catch java.io.IOException e
            (swap! producers assoc-in [name :stopped] (str "IOException: " (.getMessage e)))))))))

(defn sse
  "Ring async: ?n= events (0: endless) ?ms= apart, for the producer ?name=."
  [req respond _]
  (respond {:status 200
            :headers {"Content-Type" "text/event-stream" "Cache-Control" "no-cache"}
            :body (ticks (query req "name")
                         (Long/parseLong (or (query req "n") "3"))
                         (Long/parseLong (or (query req "ms") "100")))}))

(defn producer
  "What producer ?name= saw, as EDN."
  [req]
  {:status 200 :body (pr-str (get @producers (query req "name") {}))})
