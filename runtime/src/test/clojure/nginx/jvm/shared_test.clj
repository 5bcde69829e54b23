(ns nginx.jvm.shared-test
  "nginx.jvm.shared outside nginx: what can be checked without a worker's
  shared memory (the rest is tests/test_shared.py, in a real nginx)."
  (:require [clojure.test :refer [deftest is]]
            [nginx.jvm.shared :as shared]))

(deftest dict-outside-nginx-says-so
  (is (thrown-with-msg? IllegalStateException #"only in an nginx worker"
                        (shared/dict "anything"))))

(deftest key-names
  (let [key-name #'nginx.jvm.shared/key-name]
    (is (= "a" (key-name "a")))
    (is (= "a" (key-name :a)))
    (is (= "ns/a" (key-name :ns/a)))
    (is (= "42" (key-name 42)))
    (is (thrown? IllegalArgumentException (key-name nil)))))
