(ns nginx.jvm.redis
  "Redis for nginx-jvm hosts that scale out (docs/scale-out.md): a
  connection pool with timeouts (nginx.jvm.Redis) and the bridge that
  carries a jvm_topic across hosts over a Redis pub/sub channel
  (nginx.jvm.RedisBridge). Jedis (build/redis-lib) must be on the class
  path; nothing here loads it before it is called.

      (require '[nginx.jvm.redis :as redis])
      ;; jvm_init my.app/init: in every worker
      (defn init []
        (redis/bridge! {:topic \"chat\" :dict \"chat\"
                        :redis \"redis://10.0.0.5:6379\" :channel \"chat\"}))"
  (:import [nginx.jvm Redis RedisBridge SharedDict Topic]))

;; RedisBridge links against Jedis: say so clearly, before compiling a call
(when-not (Redis/available)
  (throw (IllegalStateException.
          (str "nginx.jvm.redis needs the Redis client (Jedis) on the class path:"
               " add build/redis-lib/* (make redis-deps) to jvm_classpath"))))

(defn connect
  "A pool of connections to the Redis at `uri`
  (redis://[[user]:password@]host[:port][/db]); opts :timeout-ms (connect
  and command, 1000) and :max-connections (16). Connections are made when
  first wanted: this never waits for Redis."
  (^Redis [uri] (connect uri {}))
  (^Redis [uri {:keys [timeout-ms max-connections]
                :or {timeout-ms Redis/DEFAULT_TIMEOUT max-connections 16}}]
   (Redis/connect (str uri) (int timeout-ms) (int max-connections))))

(defn bridge!
  "Starts this worker's part of the bridge between the local topic `:topic`
  (jvm_topic) and the Redis pub/sub `:channel` (the topic's name when
  absent) of `:redis` (a URI or a connect result); `:dict` names a
  jvm_shared_dict where the workers elect the one that talks to Redis.
  Call it in every worker (jvm_init); it starts threads and returns the
  nginx.jvm.RedisBridge (.close stops it). At most once delivery; with
  `:stream key` instead of :channel, over that Redis Stream: at least
  once (docs/scale-out.md)."
  ^RedisBridge [{:keys [topic dict redis channel stream]}]
  (when-not (and topic dict redis)
    (throw (IllegalArgumentException. "bridge! needs :topic, :dict and :redis")))
  (let [t (Topic/named (str topic))
        d (SharedDict/named (str dict))
        r (if (instance? Redis redis) redis (connect redis))]
    (if stream
      (RedisBridge/startStream t d r (str stream))
      (RedisBridge/start t d r (str (or channel topic))))))
