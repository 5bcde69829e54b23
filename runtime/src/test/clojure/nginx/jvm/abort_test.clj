(ns nginx.jvm.abort-test
  "nginx.jvm.request/on-abort and aborted? on the Ring side: a request
  made for a handler on the event loop is never aborted, and a map that
  nginx-jvm did not make is refused. The abort itself is driven in
  AbortTest (JUnit) and tests/test_abort.py (a real nginx)."
  (:require [clojure.test :refer [deftest is]]
            [nginx.jvm.request :as request]
            [nginx.jvm.ring-test :refer [ring-request sample]]))

(deftest a-request-on-the-loop-cannot-be-aborted
  (let [req (ring-request sample)
        ran (atom 0)]
    (is (false? (request/on-abort req #(swap! ran inc))))
    (is (false? (request/aborted? req)))
    (is (zero? @ran))))

(deftest a-map-nginx-jvm-did-not-make-is-refused
  (is (thrown? IllegalArgumentException
               (request/on-abort {:uri "/"} (fn [])))))
