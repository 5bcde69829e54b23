(ns app.core-test
  "app.core served by a real nginx-jvm (two workers, its shared
  dictionaries): lein test runs it against the real thing."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is use-fixtures]]
            [nginx.jvm.testing :as t]))

(use-fixtures :once
  (t/with-server {:handler 'app.core/handler
                  :workers 2
                  :args ["--shared-dict" "app:1m" "--shared-dict" "sessions:1m"]}))

(deftest greets
  (let [r (t/GET "/")]
    (is (= 200 (:status r)))
    (is (str/starts-with? (:body r) "Hello from a Leiningen project, on Clojure 1.12"))))

(deftest counts-in-a-shared-dictionary
  (let [counts (for [_ (range 20)] (parse-long (str/trim (:body (t/GET "/hits")))))]
    (is (= (range 1 21) counts))))

(deftest keeps-a-session
  (let [first-visit (t/GET "/visits")
        cookie (first (str/split (get-in first-visit [:headers "set-cookie"]) #";"))
        again (t/GET "/visits" :headers {"Cookie" cookie})
        more (t/GET "/visits" :headers {"Cookie" cookie})]
    (is (= "1\n" (:body first-visit)))
    (is (str/starts-with? cookie "ring-session="))
    (is (= "2\n" (:body again)))
    (is (= "3\n" (:body more)))
    (is (= "1\n" (:body (t/GET "/visits"))) "no cookie, a new session")))

(deftest unknown-paths-answer-404
  (is (= 404 (:status (t/GET "/nothing-here")))))
