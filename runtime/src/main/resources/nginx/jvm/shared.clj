(ns nginx.jvm.shared
  "nginx's shared memory from Clojure: dictionaries every worker of the
  server sees (declared with `jvm_shared_dict NAME SIZE;`), and topics
  every worker publishes to and reads (`jvm_topic NAME SIZE;`).

      (require '[nginx.jvm.shared :as shared])
      (def sessions (shared/dict \"sessions\"))
      (shared/put! sessions \"s1\" \"alice\" {:ttl 60000})
      (get sessions \"s1\")            ;=> \"alice\"
      (sessions :s1)                  ;=> \"alice\" (keywords name keys)
      (shared/incr! sessions \"hits\")  ;=> 1
      @(shared/entry sessions \"hits\") ;=> 1

  A dictionary is looked up like a map (get, keyword or function call,
  count) but it is not a value: every read sees what the workers wrote last.
  Keys are strings, keywords (their name, with the namespace if any) or
  anything else (its str). Values are strings, byte arrays or integers;
  anything else throws IllegalArgumentException. Every function here may
  be called from any thread; each is one atomic operation across workers."
  (:refer-clojure :exclude [keys])
  (:import [nginx.jvm SharedDict Topic TopicListener]))

(defn- key-name ^String [k]
  (cond (string? k) k
        (keyword? k) (if-let [n (namespace k)] (str n "/" (name k)) (name k))
        (nil? k) (throw (IllegalArgumentException. "a shared dictionary key is nil"))
        :else (str k)))

(defn- value [v]
  ;; Clojure's integers are Longs already; other integral types become one
  (if (and (integer? v) (not (instance? Long v)) (<= Long/MIN_VALUE v Long/MAX_VALUE))
    (long v)
    v))

(deftype Dict [^SharedDict d]
  clojure.lang.ILookup
  (valAt [_ k] (.get d (key-name k)))
  (valAt [_ k not-found]
    (let [v (.get d (key-name k))] (if (nil? v) not-found v)))
  clojure.lang.IFn
  (invoke [this k] (.valAt this k))
  (invoke [this k not-found] (.valAt this k not-found))
  (applyTo [this args] (clojure.lang.AFn/applyToHelper this args))
  clojure.lang.Counted
  (count [_] (.size d))
  Object
  (toString [_] (str "#shared/dict " (pr-str (.name d)))))

(defmethod print-method Dict [^Dict x ^java.io.Writer w]
  (.write w (str x)))

(defn dict
  "The dictionary declared with `jvm_shared_dict name SIZE;`. Throws
  IllegalArgumentException when nginx.conf declares none of that name,
  IllegalStateException outside an nginx worker."
  [name]
  (Dict. (SharedDict/named (key-name name))))

(defn java-dict
  "The nginx.jvm.SharedDict under a dictionary, for its whole Java API."
  ^SharedDict [^Dict d]
  (.-d d))

(defn- ttl-opt ^long [opts]
  (long (or (:ttl opts) 0)))

(defn put!
  "Sets k to v (a string, bytes or an integer); opts {:ttl ms}, 0 or none
  to never expire. Returns false when even evicting the least recently
  used entries leaves no room."
  ([d k v] (put! d k v nil))
  ([d k v opts] (.put (java-dict d) (key-name k) (value v) (ttl-opt opts))))

(defn add!
  "As put!, only when k is absent (or expired); false otherwise."
  ([d k v] (add! d k v nil))
  ([d k v opts] (.add (java-dict d) (key-name k) (value v) (ttl-opt opts))))

(defn replace!
  "As put!, only when k is present; false otherwise."
  ([d k v] (replace! d k v nil))
  ([d k v opts] (.replace (java-dict d) (key-name k) (value v) (ttl-opt opts))))

(defn incr!
  "Adds delta (default 1) to the number at k, atomically across workers
  and threads, and returns the new value. A missing key counts as
  (:init opts 0) and then expires after (:ttl opts) ms, if given. A sum
  beyond a long throws ArithmeticException, as + does, and changes
  nothing: a counter never wraps around to the other sign."
  ([d k] (incr! d k 1 nil))
  ([d k delta] (incr! d k delta nil))
  ([d k delta opts]
   (.incr (java-dict d) (key-name k) (long delta) (long (or (:init opts) 0)) (ttl-opt opts))))

(defn delete!
  "Removes k; false when it was absent."
  [d k]
  (.delete (java-dict d) (key-name k)))

(defn clear!
  "Removes every entry."
  [d]
  (.clear (java-dict d)))

(defn keys
  "At most limit (default 1024) keys, most recently used first."
  ([d] (keys d 1024))
  ([d limit] (vec (.keys (java-dict d) (int limit)))))

(defn capacity
  "The dictionary's size in bytes, as declared."
  [d]
  (.capacity (java-dict d)))

(defn entry
  "A reference to one key: deref reads its current value (nil when
  absent), as every worker last wrote it."
  [d k]
  (let [sd (java-dict d) k (key-name k)]
    (reify clojure.lang.IDeref
      (deref [_] (.get sd k)))))

;; Lists, expiry, stale values

(defn lpush!
  "Inserts v (a string, bytes or an integer) at the head of the list at k,
  atomically, and returns the list's new length. A missing or expired key
  becomes a new list that never expires (see expire!). Returns 0 when even
  evicting the least recently used entries leaves no room (the list is then
  as it was). Throws IllegalArgumentException when k holds a value that is
  not a list."
  [d k v]
  (.lpush (java-dict d) (key-name k) (value v)))

(defn rpush!
  "As lpush!, at the tail of the list."
  [d k v]
  (.rpush (java-dict d) (key-name k) (value v)))

(defn lpop!
  "Removes and returns the value at the head of the list at k; nil when
  there is no list (a list whose last value is taken is removed)."
  [d k]
  (.lpop (java-dict d) (key-name k)))

(defn rpop!
  "As lpop!, at the tail of the list."
  [d k]
  (.rpop (java-dict d) (key-name k)))

(defn llen
  "The number of values in the list at k; 0 when absent."
  [d k]
  (.llen (java-dict d) (key-name k)))

(defn ttl
  "The milliseconds k has left to live: 0 when it never expires, nil when
  it is absent or expired."
  [d k]
  (let [t (.ttl (java-dict d) (key-name k))]
    (when-not (neg? t) t)))

(defn expire!
  "Gives k (a value or a list) a new time to live of ms milliseconds from
  now (0: never expires); false when k is absent or expired."
  [d k ms]
  (.expire (java-dict d) (key-name k) (long ms)))

(defn get-stale
  "{:value v :stale? bool} for k even when it has expired but is not yet
  removed (:stale? true); nil when absent. Never count on an expired value
  being there."
  [d k]
  (when-let [^nginx.jvm.SharedDict$Value v (.getStale (java-dict d) (key-name k))]
    {:value (.value v) :stale? (.stale v)}))

(defn flush-expired!
  "Removes expired entries, least recently used first, at most n (default
  0: all), freeing their memory; returns how many went."
  ([d] (flush-expired! d 0))
  ([d n] (.flushExpired (java-dict d) (int n))))

;; Topics

(defn topic
  "The topic declared with `jvm_topic name SIZE;` (an nginx.jvm.Topic).
  Throws IllegalArgumentException when nginx.conf declares none of that
  name, IllegalStateException outside an nginx worker."
  ^Topic [name]
  (Topic/named (key-name name)))

(defn publish!
  "Publishes a string or bytes to the subscribers of every worker. Returns
  false, at once, when the topic's ring has no room (the refusal is
  counted: (.overflows topic))."
  [^Topic t message]
  (.publish t message))

(defn subscribe!
  "Calls (f message) with each message published from now on (a string or
  bytes, as published), on this worker's event loop: f must not block.
  Returns the subscription: call it, or .close it (with-open), to stop."
  [^Topic t f]
  (let [sub (.subscribe t (reify TopicListener (onMessage [_ m] (f m))))]
    (reify
      java.lang.AutoCloseable
      (close [_] (.close sub))
      clojure.lang.IFn
      (invoke [_] (.close sub)))))
