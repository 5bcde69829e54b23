(ns testapp.offloop
  "Handlers for the off-the-event-loop tests: slow, async, streaming."
  (:import [java.io ByteArrayInputStream]))

(defn thread-name [] (.getName (Thread/currentThread)))

(defn slow
  "Sleeps ?ms= milliseconds (200 by default), then names its thread."
  [req]
  (let [ms (or (some->> (:query-string req) (re-find #"ms=(\d+)") second
                        Long/parseLong)
               200)]
    (Thread/sleep ms)
    {:status 200 :headers {"Content-Type" "text/plain"}
     :body (str "slept " ms " on " (thread-name))}))

(defn fast [_]
  {:status 200 :headers {"Content-Type" "text/plain"}
   :body (str "fast on " (thread-name))})

(defn virtual? [_]
  {:status 200 :body (str (.isVirtual (Thread/currentThread)))})

(defn read-file
  "Answers the file ?path= holds: a FIFO's open blocks until a writer comes,
  in native code, where a virtual thread cannot leave its carrier."
  [req]
  (let [path (java.net.URLDecoder/decode
              (second (re-find #"path=([^&]+)" (:query-string req))) "UTF-8")]
    {:status 200 :headers {"Content-Type" "text/plain"} :body (slurp path)}))

(defn carriers
  "The handler's thread and that of a virtual thread it starts, as the JDK
  prints them (a mounted virtual thread names its carrier after the @).
  By reflection: this namespace also loads on JDK 17."
  [_]
  (let [child (promise)
        start (.getMethod Thread "startVirtualThread" (into-array Class [Runnable]))]
    (.invoke start nil (object-array [(fn [] (deliver child (str (Thread/currentThread))))]))
    {:status 200 :headers {"Content-Type" "text/plain"}
     :body (str (Thread/currentThread) "\n" (deref child 5000 "none"))}))

;; Ring async: the 3-arity form

(defn async-later [req respond _]
  (future (Thread/sleep 100)
          (respond {:status 200 :body (str "later from " (thread-name))})))

(defn async-now [_ respond _]
  (respond {:status 201 :body "at once"}))

(defn async-raise [_ _ raise]
  (future (raise (ex-info "raised on purpose" {}))))

(defn async-throw [_ _ _]
  (throw (ex-info "thrown instead of raise" {})))

(def late-calls (atom 0))

(defn async-twice [_ respond raise]
  (future
    (respond {:status 200 :body "first"})
    (respond {:status 200 :body "second"})
    (raise (ex-info "too late" {}))
    (swap! late-calls inc)))

(defn async-never [_ _ _] nil)

(def late-responses (atom 0))

(defn async-late
  "Answers after ?ms= milliseconds, whatever happened to the request."
  [req respond _]
  (let [ms (Long/parseLong (second (re-find #"ms=(\d+)" (:query-string req))))]
    (future (Thread/sleep ms)
            (respond {:status 200 :body "late"})
            (swap! late-responses inc))))

(defn late-count [_]
  {:status 200 :body (str @late-responses)})

(defn async-stream [_ respond _]
  (future (respond {:status 200
                    :body (map (fn [i] (Thread/sleep 5) (str i "\n")) (range 50))})))

;; streaming bodies produced on the handler's thread

(defn seq-body [_]
  {:status 200 :headers {"Content-Type" "text/plain"}
   :body (map (fn [i] (Thread/sleep 5) (str "line " i "\n")) (range 100))})

(defn big-stream
  "5 MB of a repeating pattern, as an InputStream."
  [_]
  (let [n (* 5 1024 1024)
        bytes (byte-array n (map #(unchecked-byte (mod % 251)) (range n)))]
    {:status 200 :headers {"Content-Type" "application/octet-stream"}
     :body (ByteArrayInputStream. bytes)}))

(defn broken-seq
  "Fails after 20 pieces (iterate is not chunked: one element at a time)."
  [_]
  {:status 200
   :body (map (fn [i] (if (< i 20) (str "piece " i "\n")
                          (throw (ex-info "producer failed" {}))))
              (take 40 (iterate inc 0)))})

(defn pid [_]
  {:status 200 :body (str (.pid (java.lang.ProcessHandle/current)))})

(defn live-tasks
  "How many tasks the runtime still tracks (read by reflection: a test's
  window into nginx.jvm.Tasks, to prove that abandoned requests are freed)."
  [_]
  (let [field (fn [obj cls name]
                (let [f (.getDeclaredField cls name)]
                  (.setAccessible f true)
                  (.get f obj)))
        tasks (field nil nginx.jvm.Worker "tasks")
        live (field tasks (class tasks) "live")]
    {:status 200 :body (str (.size ^java.util.Map live))}))
