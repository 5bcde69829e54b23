(ns testapp.warmup
  "Handlers for jvm_warmup's tests: each worker counts the warm-up's
  requests it served, and a real request is told how many came before it.")

(def ^:private warmups (atom 0))
(def ^:private seen (atom nil))    ; the last warm-up request's details

(defn- warmup? [req]
  (= "nginx-jvm-warmup" (get-in req [:headers "user-agent"])))

(defn- answer [req]
  (if (warmup? req)
    (do (swap! warmups inc)
        (reset! seen (str (:remote-addr req) " " (get-in req [:headers "host"])
                          " " (:server-name req) " " (:uri req)))
        {:status 200 :headers {"Content-Type" "text/plain"} :body "warm"})
    {:status 200
     :headers {"Content-Type" "text/plain"}
     :body (str "pid=" (.pid (java.lang.ProcessHandle/current))
                " warmups=" @warmups
                " seen=" @seen)}))

(defn hit
  "A warm-up request is counted; any other is told the count."
  [req]
  (answer req))

(defn slow
  "As hit, after ?ms= (default 5) on the handler's thread."
  [req]
  (Thread/sleep (Long/parseLong (or (second (re-find #"ms=(\d+)"
                                                     (or (:query-string req) "")))
                                    "5")))
  (answer req))

(defn stall
  "A warm-up request waits a minute (an abort interrupts it); any other
  answers at once."
  [req]
  (when (warmup? req)
    (swap! warmups inc)
    (try (Thread/sleep 60000) (catch InterruptedException _ nil)))
  (answer req))
