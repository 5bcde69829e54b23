(ns nginx.jvm.session-test
  "nginx.jvm.session's measure of nesting, outside nginx: it must never
  count less than the EDN reader recurses (the stores read what passes),
  and must let a session pr-str writes through (tests/test_sessions.py
  has the stores in a real nginx and Redis)."
  (:require [clojure.edn :as edn]
            [clojure.test :refer [deftest is]]
            [nginx.jvm.session]))

(def ^:private within? #'nginx.jvm.session/within-depth?)

(defn- nest [n open close inner]
  (str (apply str (repeat n open)) inner (apply str (repeat n close))))

(deftest brackets-count-until-they-close
  (is (within? "{:a 1}" 1))
  (is (not (within? "{:a {:b 1}}" 1)))
  (is (within? (nest 100 "[" "]" "") 100))
  (is (not (within? (nest 101 "[" "]" "") 100)))
  (is (not (within? (nest 101 "#{" "}" "") 100)))
  (is (within? (apply str "[" (concat (repeat 1000 "[1] ") ["]"])) 2)
      "siblings are not depth"))

(deftest tags-count-until-their-form-is-read
  (is (within? "[#inst \"2026-01-01\" #uuid \"x\" #inst \"2026-01-02\"]" 2))
  (is (not (within? (str "[" (apply str (repeat 100 "#inst ")) "\"x\"]") 100)))
  (is (within? "#:a{:b 1}" 2)))

(deftest meta-and-discard-count-until-their-bracket-closes
  (is (not (within? (str "{:a " (apply str (repeat 200 "^:m ")) "x}") 100)))
  (is (not (within? (str "[" (apply str (repeat 150 "#_ #_ 1 ")) "2]") 100))))

(deftest brackets-in-strings-characters-and-comments-are-not-nesting
  (is (within? (pr-str {:s (apply str (repeat 500 "[{(")) :c \[}) 1))
  (is (within? "[\"a\\\"[[[\" \\( \\[ ##Inf]" 1))
  (is (within? "; [[[[\n[1]" 1)))

(deftest what-passes-reads-without-overflow
  (doseq [text [(nest 100 "[" "]" "") (nest 99 "{:a " "}" "1")
                (str (apply str (repeat 99 "#inst ")) "\"x\"")]]
    (is (within? text 100))
    (is (try (edn/read-string text) true
             (catch StackOverflowError _ false)
             (catch Exception _ true)))))
