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

;; The EDN reader recurses (a few frames) for each level of nesting, so a
;; value nested 100,000 deep overflows the reading thread's stack: a
;; StackOverflowError, which no catch of Exception stops: a 500 where a
;; value that is not a session should be no session. No session of ours nests
;; so deep (pr-str of one would overflow first), but a value written into
;; Redis by someone else, or by another program, can. So the text is
;; measured before it is read, in one pass without recursion.

(defn- token-end
  "The index after the token (symbol, number, keyword, character name)
  that goes on at i: the reader's own terminators end it."
  ^long [^String s ^long i]
  (let [n (long (.length s))]
    (loop [i i]
      (if (>= i n)
        i
        (let [c (.charAt s (int i))]
          (if (or (Character/isWhitespace c)
                  (case c (\, \" \; \^ \( \) \[ \] \{ \} \\) true false))
            i
            (recur (inc i))))))))

(defn- string-end
  "The index after the string whose opening quote is at i - 1."
  ^long [^String s ^long i]
  (let [n (long (.length s))]
    (loop [i i]
      (if (>= i n)
        n
        (case (.charAt s (int i))
          \" (inc i)
          \\ (recur (+ i 2))
          (recur (inc i)))))))

(defn- within-depth?
  "Whether text nests at most limit deep as the EDN reader would recurse
  on it: each open bracket ({ [ ( #{) counts until it closes, each tag
  (#inst, #uuid, #foo) until its form is read, and each ^ and #_ (which
  pr-str never writes, and whose chains the reader nests in ways harder
  to follow) until the enclosing bracket closes. Counts too much rather
  than too little; text that is not EDN is left to the reader to refuse."
  [^String s ^long limit]
  (let [n (long (.length s))
        tags (long-array (+ limit 2))       ; per level: tags awaiting a form
        sticky (long-array (+ limit 2))]    ; per level: ^ and #_
    ;; a form was read at level: the tags waiting at that level are done
    (loop [i 0 level 0 total 0 form false]
      (cond
        form (let [t (aget tags level)]
               (aset tags level 0)
               (recur i level (- total t) false))
        (> total limit) false
        (>= i n) true
        :else
        (let [c (.charAt s (int i))
              c2 (if (< (inc i) n) (.charAt s (int (inc i))) \space)]
          (case c
            (\space \tab \newline \return \,) (recur (inc i) level total false)
            \; (let [j (.indexOf s "\n" (int i))]
                 (recur (if (neg? j) n (inc j)) level total false))
            \" (recur (string-end s (inc i)) level total true)
            \\ (recur (token-end s (+ i 2)) level total true)
            (\( \[ \{) (let [l (inc level)]
                         (aset tags l 0)
                         (aset sticky l 0)
                         (recur (inc i) l (inc total) false))
            (\) \] \}) (if (zero? level)
                         true               ; unbalanced: the reader says so
                         (recur (inc i) (dec level)
                                (- total 1 (aget tags level) (aget sticky level))
                                true))
            \^ (do (aset sticky level (inc (aget sticky level)))
                   (recur (inc i) level (inc total) false))
            \# (case c2
                 \{ (let [l (inc level)]
                      (aset tags l 0)
                      (aset sticky l 0)
                      (recur (+ i 2) l (inc total) false))
                 \_ (do (aset sticky level (inc (aget sticky level)))
                        (recur (+ i 2) level (inc total) false))
                 \# (recur (token-end s (+ i 2)) level total true)  ; ##Inf, ##NaN
                 ;; a tag, then its form
                 (do (aset tags level (inc (aget tags level)))
                     (recur (token-end s (inc i)) level (inc total) false)))
            (if (Character/isWhitespace c)
              (recur (inc i) level total false)
              (recur (token-end s (inc i)) level total true))))))))

(defn- encode
  "A session as EDN text; throws when it is over max-bytes, nests deeper
  than max-depth (it would not be read back) or is not data."
  ^String [data max-bytes max-depth]
  (let [text (binding [*print-length* nil *print-level* nil *print-meta* false
                       *print-dup* false *print-readably* true]
               (pr-str data))]
    (when (> (count text) max-bytes)
      (throw (IllegalArgumentException.
              (str "a session of " (count text) " characters is over the store's :max-bytes "
                   max-bytes))))
    (when-not (within-depth? text max-depth)
      (throw (IllegalArgumentException.
              (str "a session nests deeper than the store's :max-depth " max-depth))))
    ;; what does not read back (an object, a function: #object[...]) would
    ;; be a lost session later: refuse it now
    (when-not (try (= data (edn/read-string text)) (catch Exception _ false))
      (throw (IllegalArgumentException.
              "a session holds something that is not EDN data (an object, a function)")))
    text))

(defn- decode
  "The session map in text, or nil for anything else: never code. Text
  nested deeper than max-depth is no session either, said at warn."
  [^String text max-depth]
  (when text
    (if-not (within-depth? text max-depth)
      (do (Log/warn "nginx.jvm.session"
                    (str "a stored session nests deeper than :max-depth " max-depth
                         ": read as no session"))
          nil)
      (try
        (let [v (edn/read-string {:eof nil} text)]
          (when (map? v) v))
        (catch Exception _ nil)))))

(def ^:private defaults {:ttl-ms (* 30 60 1000) :max-bytes 65536 :max-depth 100})

(defn- options [opts prefix]
  (let [o (merge defaults {:prefix prefix} opts)]
    (when-not (and (integer? (:ttl-ms o)) (<= 0 (:ttl-ms o)))
      (throw (IllegalArgumentException. ":ttl-ms must be an integer, 0 or more")))
    (when-not (and (integer? (:max-bytes o)) (pos? (:max-bytes o)))
      (throw (IllegalArgumentException. ":max-bytes must be a positive integer")))
    (when-not (and (integer? (:max-depth o)) (<= 1 (:max-depth o) 10000))
      (throw (IllegalArgumentException. ":max-depth must be an integer from 1 to 10000")))
    o))

;; --- a shared dictionary: every worker of one nginx -------------------------

(deftype SharedStore [dict-name dict prefix ttl max-bytes max-depth]   ; dict: a delay, looked up on first use
  store/SessionStore
  (read-session [_ k]
    (when-let [k (valid-key k)]
      (let [^SharedDict d @dict
            full (str prefix k)]
        (when-let [v (decode (.getString d full) max-depth)]
          (when (pos? (long ttl)) (.expire d full (long ttl)))   ; sliding expiry
          v))))
  (write-session [_ k data]
    (let [k (or (valid-key k) (new-key))
          text (encode data max-bytes max-depth)]
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
    :max-depth  the deepest nesting of a session (100: maps, vectors, sets,
                lists and tags, one level each); a deeper one throws when
                written, and reads as no session (a [warn] line) when some
                other writer stored it, rather than overflow the stack
    :prefix     of the dictionary's keys (\"session:\")
  The dictionary's size bounds the sessions: when it is full, the least
  recently used go first (docs/shared.md). Every call is one or two
  operations under the zone's lock, fit for the event loop."
  ([dict-name] (shared-store dict-name {}))
  ([dict-name opts]
   (let [o (options opts "session:")]
     (SharedStore. dict-name (delay (SharedDict/named (str dict-name)))
                   (:prefix o) (long (:ttl-ms o)) (long (:max-bytes o))
                   (long (:max-depth o))))))

;; --- Redis: every host ------------------------------------------------------

(defn- utf8 ^bytes [^String s] (.getBytes s StandardCharsets/UTF_8))

(deftype RedisStore [^Redis redis prefix ttl max-bytes max-depth]
  store/SessionStore
  (read-session [_ k]
    (when-let [k (valid-key k)]
      (when-let [b (.get redis (utf8 (str prefix k)) (long ttl))]
        (decode (String. ^bytes b StandardCharsets/UTF_8) max-depth))))
  (write-session [_ k data]
    (let [k (or (valid-key k) (new-key))]
      (.set redis (utf8 (str prefix k)) (utf8 (encode data max-bytes max-depth)) (long ttl))
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
     (RedisStore. r (:prefix o) (long (:ttl-ms o)) (long (:max-bytes o))
                  (long (:max-depth o))))))

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
