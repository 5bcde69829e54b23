(ns upstream-relay.core
  "Calls out through nginx's upstreams (nginx.jvm.client, jvm_client):

  - /feeds/NAME, a WebSocket that relays the backend's server-sent events
    /NAME (text/event-stream) as they come, each event's data one text
    message; the backend's call ends when the WebSocket's client leaves;
  - a timer that refreshes a cached value from an upstream{} of two
    servers every 200 ms (jvm_init upstream-relay.core/init), and /value,
    which serves it with the counts of refreshes done and failed.

  The calls go to two jvm_client locations of nginx.conf (README.md):
  `events` (proxy_buffering off: an event reaches Java the moment nginx
  reads it) and `values` (proxy_next_upstream: a dead server is skipped).
  nginx does the balancing, the retries, the keep-alive and the timeouts;
  the JVM opens no socket."
  (:require [clojure.data.json :as json]
            [nginx.jvm.client :as client]
            [nginx.jvm.timers :as timers]
            [ring.websocket :as ws])
  (:import [java.io BufferedReader InputStream InputStreamReader]
           [java.nio.charset StandardCharsets]
           [java.util.concurrent CompletableFuture ExecutorService Executors
            ThreadFactory TimeUnit TimeoutException]
           [java.util.concurrent.atomic AtomicLong]
           [java.util.function BiConsumer Consumer]))

;; ---- server-sent events to a WebSocket ------------------------------------

(defn- each-event
  "Calls (emit data) for each event of the event stream `r` until it ends,
  as the HTML standard reads one: the `data:` lines of an event joined
  with newlines, dispatched at the blank line that ends it; comments
  (`:`), `event:`, `id:` and `retry:` lines are read past, and an event
  cut off by the stream's end is dropped."
  [^BufferedReader r emit]
  (loop [data nil]
    (when-let [line (.readLine r)]      ; LF, CRLF or CR, as the standard
      (cond
        (.isEmpty line) (do (when data (emit data)) (recur nil))
        (.startsWith line ":") (recur data)
        :else
        (let [i (.indexOf line ":")
              field (if (neg? i) line (subs line 0 i))
              value (if (neg? i) "" (subs line (inc i)))
              value (if (.startsWith ^String value " ") (subs value 1) value)]
          (recur (if (= "data" field)
                   (if data (str data "\n" value) value)
                   data)))))))

(def ^:private ^ExecutorService readers
  "Where each relay reads its stream. A read waits for the backend's next
  event, which the event loop must never do (and a pool or virtual thread
  of the location's mode would hold the socket's listener: its on-close
  could not run while on-open waited): one daemon thread per open relay,
  a daemon so that a worker's exit never waits for a stream."
  (Executors/newCachedThreadPool
   (let [n (AtomicLong.)]
     (reify ThreadFactory
       (newThread [_ r]
         (doto (Thread. ^Runnable r (str "upstream-relay-" (.incrementAndGet n)))
           (.setDaemon true)))))))

(defn- close-quietly [socket code reason]
  ;; the client may have left meanwhile: nothing is left to tell it
  (try (ws/close socket code reason) (catch Exception _ nil)))

(defn- pump
  "On a reader thread: the backend's answer, its events sent to the
  socket one text message each, then the socket closed with what became
  of the stream. ws/send waits while the socket's queue is full, and the
  body is then read no further: a slow client holds the backend back
  (nginx.jvm.client's back-pressure) instead of filling memory."
  [socket {:keys [status ^InputStream body]} left?]
  (try
    (if (not= 200 status)
      (close-quietly socket 1011 (str "the backend answered " status))
      (let [r (BufferedReader. (InputStreamReader. body StandardCharsets/UTF_8))]
        (each-event r #(ws/send socket %))
        (close-quietly socket 1000 "the stream ended")))
    (catch Exception _
      ;; a read failing because the client left (on-close closed the body)
      ;; or a send failing because it is gone: nothing to say to anyone
      (when-not (left?)
        (close-quietly socket 1011 "the stream broke")))
    (finally (.close body))))

(defn- relay
  "The listener of one WebSocket relaying the backend's stream `path`.
  The call starts when the socket opens; when the client leaves, the
  body is closed, which ends the call: nginx closes its connection to the
  backend, as for any client of a proxy_pass that leaves. The answer may
  come after the client left (or the reader may be about to take it):
  whichever of on-close and the reader comes second closes the body."
  [path]
  (let [state (atom {:left? false :body nil})
        left? #(:left? @state)]
    {:on-open
     (fn [socket]
       ;; completes on the event loop: the reply goes to a reader thread
       (.whenCompleteAsync
        ^CompletableFuture (client/call "events" path
                                        {:headers {"Accept" "text/event-stream"}})
        (reify BiConsumer
          (accept [_ reply e]
            (if e
              (close-quietly socket 1011 "no answer from the backend")
              (let [s (swap! state assoc :body (:body reply))]
                (if (:left? s)
                  (.close ^InputStream (:body reply))
                  (pump socket reply left?))))))
        readers))
     :on-message (fn [_ _])             ; the client only listens
     :on-close
     (fn [_ _ _]
       (let [s (swap! state assoc :left? true)]
         (when-let [^InputStream body (:body s)]
           (.close body))))}))

(defn feed
  "/feeds/NAME: a WebSocket relaying the backend's event stream /NAME."
  [request]
  (let [[_ name] (re-matches #"/feeds/([a-z0-9-]{1,64})" (:uri request))]
    (cond
      (nil? name) {:status 404 :headers {"Content-Type" "text/plain"}
                   :body "no such feed\n"}
      (not (ws/upgrade-request? request))
      {:status 426 :headers {"Content-Type" "text/plain" "Upgrade" "websocket"}
       :body "a WebSocket endpoint\n"}
      :else {::ws/listener (relay (str "/" name))})))

;; ---- a value refreshed by a timer ------------------------------------------

(def ^:private refresh-ms
  "How often the cached value is refreshed (-Dupstream-relay.refresh-ms)."
  (Long/getLong "upstream-relay.refresh-ms" 200))

(def ^:private cache
  "This worker's copy: each worker has its own JVM, its own timer and its
  own cache (a value every worker must share would go to a jvm_shared_dict)."
  (atom {:value nil :at 0 :refreshed 0 :failed 0 :last-error nil}))

(defn- failed! [why]
  (swap! cache #(-> % (update :failed inc) (assoc :last-error why))))

(defn- refresh!
  "On a timer thread, which may wait: one GET of /value through the
  `values` location, whose proxy_next_upstream tries the other server
  when one refuses, resets or times out, so a refresh fails only when
  both do. nginx's timeouts bound the call; the wait here is a guard."
  []
  (let [^CompletableFuture f (client/call "values" "/value")]
    (try
      (let [{:keys [status ^InputStream body]} (.get f 5 TimeUnit/SECONDS)]
        (with-open [body body]
          (let [text (String. (.readNBytes body 65536) StandardCharsets/UTF_8)]
            (if (= 200 status)
              (swap! cache #(-> % (update :refreshed inc)
                                (assoc :value text :at (System/currentTimeMillis))))
              (failed! (str "the upstream answered " status))))))
      (catch TimeoutException _
        ;; an answer that comes later is not wanted: its body closed ends it
        (.thenAccept f (reify Consumer
                         (accept [_ reply] (.close ^InputStream (:body reply)))))
        (failed! "no answer in time"))
      (catch Exception e
        (failed! (str (.getSimpleName (class e)) ": " (.getMessage e)))))))

(defn init
  "jvm_init: starts this worker's refresh timer. On a timer thread (:on
  :thread), where a refresh may wait for its answer without holding the
  event loop; a fixed-rate timer never runs twice at once, so a slow
  refresh delays the next instead of piling up."
  []
  (timers/every refresh-ms refresh! {:on :thread}))

(defn value
  "/value: the cached value (JSON), how old it is, and how many
  refreshes this worker did and how many failed; 503 until the first."
  [_]
  (let [{:keys [value at refreshed failed last-error]} @cache]
    {:status (if value 200 503)
     :headers {"Content-Type" "application/json" "Cache-Control" "no-store"}
     :body (json/write-str {:value value
                            :age_ms (when value (- (System/currentTimeMillis) at))
                            :refreshed refreshed
                            :failed failed
                            :last_error last-error})}))
