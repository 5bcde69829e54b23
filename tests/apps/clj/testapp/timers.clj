(ns testapp.timers
  "nginx.jvm.timers in a worker."
  (:require [nginx.jvm.timers :as timers]))

(defonce state (atom {}))

(defn handler [req]
  (case (:query-string req)
    "start" (do (reset! state {:once 0 :every 0})
                (timers/after 50 #(swap! state update :once inc))
                (let [t (timers/every 30 #(swap! state update :every inc) {:on :thread})]
                  (timers/after 200 #(do (timers/cancel! t)
                                         (swap! state assoc :cancelled (timers/done? t)))))
                {:status 200 :body "started"})
    ;; {:on :coloop}: a virtual thread the loop carries in a coloop worker
    ;; (named nginx-jvm-coloop), a timer thread elsewhere; it may sleep
    "coloop" (do (swap! state dissoc :coloop)
                 (timers/after 0 #(do (Thread/sleep 50)
                                      (swap! state assoc :coloop (.getName (Thread/currentThread))))
                               {:on :coloop})
                 {:status 200 :body "started"})
    "bad" {:status 200
           :body (try (timers/after 1 #() {:on :moon}) "no"
                      (catch IllegalArgumentException e (.getMessage e)))}
    {:status 200 :headers {"Content-Type" "application/edn"} :body (pr-str @state)}))
