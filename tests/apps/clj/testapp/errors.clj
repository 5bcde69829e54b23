(ns testapp.errors
  "Handlers that fail in each way a handler can.")

(defn boom [_]
  (throw (ex-info "boom-marker" {:why "the test asked for it"})))

(defn returns-nil [_] nil)

(defn returns-string [_] "not a response map")

(defn returns-number [_] 42)

(defn seq-throws
  "A seq body whose producer throws after 50 elements of 1000 bytes."
  [_]
  {:status 200
   :headers {"Content-Type" "text/plain"}
   :body (concat (map (fn [i] (apply str (repeat 1000 (char (+ 97 (mod i 26))))))
                      (range 50))
                 (lazy-seq (throw (IllegalStateException. "seq-boom-marker"))))})
