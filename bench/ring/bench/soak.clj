(ns bench.soak
  "The soak's handlers (bench/soak.py): a small answer for the load, and a
  long streamed body for the clients that leave after its first bytes.")

(defn hello [_]
  {:status 200 :headers {"Content-Type" "text/plain"} :body "hello, soak"})

;; One 8 KB piece, shared: producing the stream costs next to nothing, so
;; what the soak measures is the module's and runtime's bookkeeping.
(def ^:private piece (apply str (repeat 8192 \x)))

(defn stream
  "?n= pieces of 8 KB (default 2048: 16 MB, more than a loopback socket
  buffers), as a lazy seq: sent as it is produced, chunked."
  [req]
  (let [n (or (some->> (:query-string req) (re-find #"n=(\d+)") second
                       Long/parseLong)
              2048)]
    {:status 200 :headers {"Content-Type" "text/plain"}
     :body (repeat n piece)}))
