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

(defn- note
  "Appends a line to the file the system property names."
  [property line]
  (spit (System/getProperty property) (str line "\n") :append true))

(defn tally
  "As slow (?ms=, default 5), and a warm-up request first appends
  \"PID MILLIS\" to the file named by the system property testapp.warmups:
  what a warm-up did, and when, seen from outside the worker."
  [req]
  (when (warmup? req)
    (note "testapp.warmups" (str (.pid (java.lang.ProcessHandle/current))
                                 " " (System/currentTimeMillis))))
  (slow req))

(defn fail
  "Every request fails."
  [_]
  (throw (IllegalStateException. "warmup-boom-marker")))

(defn hold-init
  "jvm_init: notes \"holding PID\" in the file named by testapp.warmups and
  waits (two minutes at most) while the file named by testapp.hold
  exists; then adds testapp.leave's shutdown hook."
  []
  (note "testapp.warmups" (str "holding " (.pid (java.lang.ProcessHandle/current))))
  (let [hold (java.io.File. (System/getProperty "testapp.hold"))
        until (+ (System/currentTimeMillis) 120000)]
    (while (and (.exists hold) (< (System/currentTimeMillis) until))
      (Thread/sleep 20)))
  ((requiring-resolve 'testapp.leave/add-hook)))
