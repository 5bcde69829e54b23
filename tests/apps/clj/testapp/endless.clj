(ns testapp.endless
  "Bodies that never end: seqs of empty strings, and of 16 KB pieces.")

;; name -> how many elements its seq has realized
(def realized (atom {}))

(defn- query [req k]
  (some->> (:query-string req) (re-find (re-pattern (str k "=([^&]*)"))) second))

(defn- counted [name piece]
  (map (fn [_] (swap! realized update name (fnil inc 0)) piece) (range)))

(defn empties
  "An endless seq of \"\", its elements counted under ?name=."
  [req]
  {:status 200 :headers {"Content-Type" "text/plain"}
   :body (counted (query req "name") "")})

(defn repeat-empty
  "The plainest dead stream: (repeat \"\")."
  [_]
  {:status 200 :headers {"Content-Type" "text/plain"} :body (repeat "")})

(def ^:private piece (apply str (repeat (* 16 1024) "x")))

(defn pieces
  "An endless seq of 16 KB strings, counted under ?name=."
  [req]
  {:status 200 :headers {"Content-Type" "text/plain"}
   :body (counted (query req "name") piece)})

(defn realized-count
  [req]
  {:status 200 :headers {"Content-Type" "text/plain"}
   :body (str (get @realized (query req "name") 0))})
