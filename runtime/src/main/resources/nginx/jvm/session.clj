(ns nginx.jvm.session
  "Ring session stores that span workers and hosts, for
  ring.middleware.session/wrap-session (ring-core on the class path):

      (require '[nginx.jvm.session :as session]
               '[ring.middleware.session :refer [wrap-session]])

      ;; every worker of this nginx: jvm_shared_dict sessions 10m;
      (def app (wrap-session handler {:store (session/shared-store \"sessions\")}))

      ;; every host sharing one Redis (Jedis, build/redis-lib, on the
      ;; class path; jvm_mode pool or virtual, never loop)
      (def app (-> handler
                   (wrap-session {:store (session/redis-store \"redis://10.0.0.5:6379\")})
                   session/wrap-unavailable))

  Both keep a session as EDN text (pr-str), read back with clojure.edn,
  which builds data and nothing else: no code runs, no class is named, so a
  forged or corrupted value cannot do more than be refused (a fresh
  session). Session data must therefore be EDN data: maps, vectors, sets,
  strings, numbers, keywords, symbols, booleans, nil, #inst and #uuid.
  Session keys are 128 random bits (22 characters of base64url); a cookie
  that is not such a key (garbage, another store's key, too long) reads as
  no session, and the store makes a new key when the session is written."
  (:require [clojure.edn :as edn]
            [ring.middleware.session.store :as store])
  (:import [java.nio.charset StandardCharsets]
           [java.security SecureRandom]
           [java.util Base64]
           [nginx.jvm Log Redis RedisUnavailable SharedDict]))

(def ^:private random (SecureRandom.))

(defn- new-key ^String []
  (let [b (byte-array 16)]
    (.nextBytes ^SecureRandom random b)
    (.encodeToString (.withoutPadding (Base64/getUrlEncoder)) b)))

(def ^:private key-shape #"[A-Za-z0-9_-]{22}")

(defn- valid-key
  "The key when it has the shape of ours, else nil: no lookup for junk."
  [k]
  (when (and (string? k) (re-matches key-shape k)) k))

(defn- encode
  "A session as EDN text; throws when it is over max-bytes or not data."
  ^String [data max-bytes]
  (let [text (binding [*print-length* nil *print-level* nil *print-meta* false
                       *print-dup* false *print-readably* true]
               (pr-str data))]
    (when (> (count text) max-bytes)
      (throw (IllegalArgumentException.
              (str "a session of " (count text) " characters is over the store's :max-bytes "
                   max-bytes))))
    ;; what does not read back (an object, a function: #object[...]) would
    ;; be a lost session later: refuse it now
    (when-not (try (= data (edn/read-string text)) (catch Exception _ false))
      (throw (IllegalArgumentException.
              "a session holds something that is not EDN data (an object, a function)")))
    text))

(defn- decode
  "The session map in text, or nil for anything else: never code."
  [^String text]
  (when text
    (try
      (let [v (edn/read-string {:eof nil} text)]
        (when (map? v) v))
      (catch Exception _ nil))))

(def ^:private defaults {:ttl-ms (* 30 60 1000) :max-bytes 65536})

(defn- options [opts prefix]
  (let [o (merge defaults {:prefix prefix} opts)]
    (when-not (and (integer? (:ttl-ms o)) (<= 0 (:ttl-ms o)))
      (throw (IllegalArgumentException. ":ttl-ms must be an integer, 0 or more")))
    (when-not (and (integer? (:max-bytes o)) (pos? (:max-bytes o)))
      (throw (IllegalArgumentException. ":max-bytes must be a positive integer")))
    o))

;; --- a shared dictionary: every worker of one nginx -------------------------

(deftype SharedStore [dict-name dict prefix ttl max-bytes]   ; dict: a delay, looked up on first use
  store/SessionStore
  (read-session [_ k]
    (when-let [k (valid-key k)]
      (let [^SharedDict d @dict
            full (str prefix k)]
        (when-let [v (decode (.getString d full))]
          (when (pos? (long ttl)) (.expire d full (long ttl)))   ; sliding expiry
          v))))
  (write-session [_ k data]
    (let [k (or (valid-key k) (new-key))
          text (encode data max-bytes)]
      (when-not (.put ^SharedDict @dict (str prefix k) text (long ttl))
        (throw (IllegalStateException.
                (str "the shared dictionary \"" dict-name "\" has no room for a session"))))
      k))
  (delete-session [_ k]
    (when-let [k (valid-key k)]
      (.delete ^SharedDict @dict (str prefix k)))
    nil)
  Object
  (toString [_] (str "#session/shared-store " (pr-str dict-name))))

(defn shared-store
  "A session store in the shared dictionary `jvm_shared_dict name SIZE;`:
  every worker of this nginx sees every session. Options:
    :ttl-ms     a session unused for this long expires (30 minutes; 0: never);
                each read gives it its full time again
    :max-bytes  the largest session, as EDN text (64 KB); a larger one throws
    :prefix     of the dictionary's keys (\"session:\")
  The dictionary's size bounds the sessions: when it is full, the least
  recently used go first (docs/shared.md). Every call is one or two
  operations under the zone's lock, fit for the event loop."
  ([dict-name] (shared-store dict-name {}))
  ([dict-name opts]
   (let [o (options opts "session:")]
     (SharedStore. dict-name (delay (SharedDict/named (str dict-name)))
                   (:prefix o) (long (:ttl-ms o)) (long (:max-bytes o))))))

;; --- Redis: every host ------------------------------------------------------

(defn- utf8 ^bytes [^String s] (.getBytes s StandardCharsets/UTF_8))

(deftype RedisStore [^Redis redis prefix ttl max-bytes]
  store/SessionStore
  (read-session [_ k]
    (when-let [k (valid-key k)]
      (when-let [b (.get redis (utf8 (str prefix k)) (long ttl))]
        (decode (String. ^bytes b StandardCharsets/UTF_8)))))
  (write-session [_ k data]
    (let [k (or (valid-key k) (new-key))]
      (.set redis (utf8 (str prefix k)) (utf8 (encode data max-bytes)) (long ttl))
      k))
  (delete-session [_ k]
    (when-let [k (valid-key k)]
      (.delete redis (utf8 (str prefix k))))
    nil)
  Object
  (toString [_] (str "#session/redis-store " (pr-str (.where redis)))))

(defn redis-store
  "A session store in Redis: every host using that Redis sees every
  session. `redis` is a redis:// URI or an nginx.jvm.Redis
  (nginx.jvm.redis/connect). Options as shared-store's, with
    :prefix      of the Redis keys (\"nginx-jvm:session:\"), so that several
                 applications share one Redis
    :timeout-ms  connect and command timeout (1000), for a URI
  Each call blocks for one round trip (up to the timeout): use it in
  jvm_mode pool or virtual locations; on the event loop it throws. When
  Redis is down or does not answer in time it throws
  nginx.jvm.RedisUnavailable, which wrap-unavailable turns into a 503."
  ([redis] (redis-store redis {}))
  ([redis opts]
   (let [o (options opts "nginx-jvm:session:")
         r (if (instance? Redis redis)
             redis
             (Redis/connect (str redis) (int (:timeout-ms o Redis/DEFAULT_TIMEOUT)) 16))]
     (RedisStore. r (:prefix o) (long (:ttl-ms o)) (long (:max-bytes o))))))

;; --- Redis down: a 503 ------------------------------------------------------

(defn- unavailable-cause [^Throwable e]
  (loop [t e]
    (cond (nil? t) nil
          (instance? RedisUnavailable t) t
          :else (recur (.getCause t)))))

(defn- unavailable [req ^Throwable e]
  (Log/error "nginx.jvm.session"
             (str (.getMessage e) ", answering 503 to " (name (:request-method req :get))
                  " " (:uri req))
             nil)
  {:status 503
   :headers {"Content-Type" "text/plain; charset=utf-8" "Retry-After" "5"}
   :body "the session store is unavailable; try again in a moment\n"})

(defn wrap-unavailable
  "Middleware, outside wrap-session: a Redis that is down or too slow
  (nginx.jvm.RedisUnavailable, within the store's timeout) becomes a 503
  with Retry-After and one line in the error log, rather than a 500 with a
  stack trace. Both Ring forms (synchronous and asynchronous)."
  [handler]
  (fn
    ([req]
     (try
       (handler req)
       (catch Exception e
         (if-let [u (unavailable-cause e)] (unavailable req u) (throw e)))))
    ([req respond raise]
     (let [fail (fn [e] (if-let [u (unavailable-cause e)] (respond (unavailable req u)) (raise e)))]
       (try
         (handler req respond fail)
         (catch Exception e (fail e)))))))
