(ns testapp.latebody
  "Ring handlers that read their request's body late (test_body_ownership.py);
  what they read is recorded by testapp.LateBody under ?tag=."
  (:import [testapp LateBody]))

(defn- param [req name]
  (some->> (:query-string req)
           (re-find (re-pattern (str "(?:^|&)" name "=([^&]*)")))
           second))

(defn- sleep-ms [req]
  (Long/parseLong (or (param req "sleep") "0")))

(defn late
  "Reads :body after ?sleep= ms; with ?stash=1, answers at once and a thread
  reads it that much later."
  [req]
  (let [tag (param req "tag")
        ms (sleep-ms req)
        body (:body req)]
    (LateBody/record tag "ran")
    (if (param req "stash")
      (do (doto (Thread. ^Runnable (fn []
                                     (Thread/sleep ms)
                                     (LateBody/record tag (LateBody/summary body))))
            (.setDaemon true)
            (.start))
          {:status 200 :headers {"Content-Type" "text/plain"} :body "stashed"})
      (do (Thread/sleep ms)
          (let [s (LateBody/summary body)]
            (LateBody/record tag s)
            {:status 200 :headers {"Content-Type" "text/plain"} :body s})))))

(defn late-async
  "Ring's async arity: a thread reads :body after ?sleep= ms, then answers."
  [req respond _]
  (let [tag (param req "tag")
        ms (sleep-ms req)]
    (LateBody/record tag "ran")
    (doto (Thread. ^Runnable (fn []
                               (Thread/sleep ms)
                               (let [s (LateBody/summary (:body req))]
                                 (LateBody/record tag s)
                                 (respond {:status 200 :body s}))))
      (.setDaemon true)
      (.start))))
