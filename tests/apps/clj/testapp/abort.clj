(ns testapp.abort
  "Ring handlers for tests/test_abort.py, as testapp.Abort for Java: each
  request is named by ?name=, and what happened to it is kept in this
  worker's memory, read back by `state` on the event loop. Times are
  System/currentTimeMillis, the clock the test reads too."
  (:require [nginx.jvm.request :as request]))

(def ^:private states (atom {}))

(defn- note [name k v] (swap! states assoc-in [name k] v))

(defn- param [req k dflt]
  (or (some->> (:query-string req)
               (re-find (re-pattern (str "(?:^|&)" k "=([^&]*)")))
               second)
      dflt))

(defn- callback [name]
  (fn []
    (swap! states update-in [name "callbacks"] (fnil inc 0))
    (note name "callbackAt" (System/currentTimeMillis))
    (note name "callbackThread" (.getName (Thread/currentThread)))))

(defn sleep
  "Registers a callback, then sleeps ?ms= (30 s), noting an interrupt."
  [req]
  (let [name (param req "name" "none")
        ms (Long/parseLong (param req "ms" "30000"))]
    (note name "registered" (request/on-abort req (callback name)))
    (note name "started" (System/currentTimeMillis))
    (try
      (Thread/sleep ms)
      (note name "slept" (System/currentTimeMillis))
      (catch InterruptedException _
        (note name "interruptedAt" (System/currentTimeMillis))))
    (when (request/aborted? req)
      (note name "abortedSeen" true)
      (note name "lateRegistered"
            (request/on-abort req #(swap! states update-in [name "lateRan"]
                                          (fnil inc 0)))))
    (note name "ended" (System/currentTimeMillis))
    {:status 200 :body (str "slept " name)}))

(defn wait
  "Ring async: registers a callback and never answers."
  [req respond raise]
  (let [name (param req "name" "none")]
    (note name "started" (System/currentTimeMillis))
    (note name "registered" (request/on-abort req (callback name)))))

(defn state [req]
  (let [name (param req "name" "none")]
    {:status 200
     :headers {"Content-Type" "text/plain"}
     :body (apply str (for [[k v] (sort (get @states name))] (str k "=" v "\n")))}))
