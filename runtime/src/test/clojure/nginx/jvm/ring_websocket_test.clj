(ns nginx.jvm.ring-websocket-test
  "Ring's websocket API over nginx.jvm: the namespaces provided when the
  class path lacks them (Debian's Ring 1.8.2), and listeners adapted."
  (:require [clojure.test :refer [deftest is]]
            [nginx.jvm.ring.websocket :as adapter]
            [ring.websocket :as ws]
            [ring.websocket.protocols :as wsp])
  (:import (java.nio ByteBuffer)
           (nginx.jvm WebSocket WebSocket$Callback WebSocketListener
                      WebSocketPingListener)))

(deftest upgrade-requests
  (is (ws/upgrade-request? {:headers {"connection" "keep-alive, Upgrade"
                                      "upgrade" "WebSocket"}}))
  (is (not (ws/upgrade-request? {:headers {"upgrade" "websocket"}})))
  (is (not (ws/upgrade-request? {:headers {}})))
  (is (= ["chat" "superchat"]
         (ws/request-protocols {:headers {"sec-websocket-protocol" "chat, superchat"}})))
  (is (= [] (ws/request-protocols {:headers {}})))
  (is (ws/websocket-response? {::ws/listener {}}))
  (is (not (ws/websocket-response? {:status 200}))))

(defn- fake-socket
  "A nginx.jvm.WebSocket that records what is done to it."
  [log]
  (reify WebSocket
    (isOpen [_] true)
    (^void send [_ ^String text] (swap! log conj [:text text]))
    (^void send [_ ^ByteBuffer data] (swap! log conj [:binary (.remaining data)]))
    (^void sendAsync [_ ^String text ^WebSocket$Callback cb]
      (swap! log conj [:async text]) (.succeeded cb))
    (^void sendAsync [_ ^ByteBuffer data ^WebSocket$Callback cb] (.succeeded cb))
    (ping [_ data] (swap! log conj [:ping (.remaining ^ByteBuffer data)]))
    (pong [_ data] (swap! log conj [:pong (.remaining ^ByteBuffer data)]))
    (^void close [_] (swap! log conj [:close 1000]))
    (^void close [_ ^int code ^String reason] (swap! log conj [:close code reason]))))

(deftest a-map-listener-through-the-java-interface
  (let [events (atom [])
        log (atom [])
        socket (fake-socket log)
        ^WebSocketListener l
        (adapter/listener {:on-open (fn [s] (swap! events conj :open) (ws/send s "hi"))
                           :on-message (fn [s m] (swap! events conj [:message m]))
                           :on-close (fn [s code reason] (swap! events conj [:close code reason]))})]
    (is (not (instance? WebSocketPingListener l)) "nginx answers its pings")
    (.onOpen l socket)
    (.onMessage l socket "text")
    (.onMessage l socket (ByteBuffer/wrap (byte-array 3)))
    (.onPong l socket (ByteBuffer/allocate 0))
    (.onClose l socket 1000 "done")
    (is (= :open (first @events)))
    (is (= [:message "text"] (second @events)))
    (is (instance? ByteBuffer (second (nth @events 2))))
    (is (= [:close 1000 "done"] (last @events)))
    (is (= [[:text "hi"]] @log))))

(deftest socket-functions
  (let [log (atom [])
        s (fake-socket log)
        sent (promise)]
    (ws/send s "a")
    (ws/send s (ByteBuffer/wrap (byte-array 2)))
    (ws/send s "b" (fn [] (deliver sent :ok)) (fn [e] (deliver sent e)))
    (ws/ping s)
    (ws/pong s (ByteBuffer/wrap (byte-array 1)))
    (ws/close s 4000 "bye")
    (is (ws/open? s))
    (is (= :ok (deref sent 1000 :timeout)))
    (is (= [[:text "a"] [:binary 2] [:async "b"] [:ping 0] [:pong 1] [:close 4000 "bye"]] @log))))

(deftest ping-listeners
  (let [log (atom [])
        s (fake-socket log)]
    (is (instance? WebSocketPingListener (adapter/listener {:on-ping (fn [s d] (swap! log conj :pinged))})))
    (.onPing ^WebSocketPingListener (adapter/listener {:on-ping (fn [s d] (swap! log conj :pinged))})
             s (ByteBuffer/allocate 0))
    (is (= [:pinged] @log))
    (is (instance? WebSocketPingListener
                   (adapter/listener (reify wsp/Listener
                                       (on-open [_ _]) (on-message [_ _ _]) (on-pong [_ _ _])
                                       (on-error [_ _ _]) (on-close [_ _ _ _])
                                       wsp/PingListener
                                       (on-ping [_ _ _])))))))
