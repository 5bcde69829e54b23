(ns nginx.jvm.ring.websocket
  "Ring's websocket API over nginx.jvm.WebSocket: a Ring listener becomes a
  nginx.jvm.WebSocketListener, and the socket satisfies Ring's Socket and
  AsyncSocket. Ring's own protocols are used when they are on the class
  path; otherwise nginx-jvm's, under the same names."
  (:require [clojure.java.io :as io])
  (:import [java.nio ByteBuffer]
           [nginx.jvm WebSocket WebSocket$Callback WebSocketListener
            WebSocketPingListener]))

(defn- provide
  "Loads nginx-jvm's own copy of a Ring namespace the class path lacks."
  [lib path]
  (when-not (some #(io/resource (str path %)) [".clj" ".cljc" "__init.class"])
    (load (str "/nginx/jvm/ring/compat/" path))
    (dosync (commute @#'clojure.core/*loaded-libs* conj lib))))

(provide 'ring.websocket.protocols "ring/websocket/protocols")
(provide 'ring.websocket "ring/websocket")

(require '[ring.websocket.protocols :as p])

(defn- buffer ^ByteBuffer [data]
  (cond (instance? ByteBuffer data) data
        (bytes? data) (ByteBuffer/wrap data)
        (nil? data) (ByteBuffer/allocate 0)
        :else (throw (IllegalArgumentException.
                      (str "websocket data must be a ByteBuffer or bytes, not "
                           (.getName (class data)))))))

(extend-type WebSocket
  p/Socket
  (-open? [s] (.isOpen s))
  (-send [s message]
    (if (instance? CharSequence message)
      (.send s (str message))
      (.send s (buffer message))))
  (-ping [s data] (.ping s (buffer data)))
  (-pong [s data] (.pong s (buffer data)))
  (-close [s code reason] (.close s (int code) (str reason)))
  p/AsyncSocket
  (-send-async [s message succeed fail]
    (let [callback (reify WebSocket$Callback
                     (succeeded [_] (succeed))
                     (failed [_ e] (fail e)))]
      (if (instance? CharSequence message)
        (.sendAsync s (str message) callback)
        (.sendAsync s (buffer message) callback)))))

(defmacro ^:private adapter [iface l & more]
  `(reify ~iface
     (onOpen [_ s#] (p/on-open ~l s#))
     (^void onMessage [_ ^WebSocket s# ^String text#] (p/on-message ~l s# text#))
     (^void onMessage [_ ^WebSocket s# ^ByteBuffer data#] (p/on-message ~l s# data#))
     (onPong [_ s# data#] (p/on-pong ~l s# data#))
     (onError [_ s# e#] (p/on-error ~l s# e#))
     (onClose [_ s# code# reason#] (p/on-close ~l s# code# reason#))
     ~@more))

(defn listener
  "The nginx.jvm.WebSocketListener of a Ring listener. It answers pings
  itself only when it has on-ping (a map with :on-ping, or a PingListener):
  otherwise nginx answers them at once."
  ^WebSocketListener [l]
  (if (if (map? l) (contains? l :on-ping) (satisfies? p/PingListener l))
    (adapter WebSocketPingListener l
             (onPing [_ s data] (p/on-ping l s data)))
    (adapter WebSocketListener l)))
