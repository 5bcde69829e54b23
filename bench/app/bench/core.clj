(ns bench.core
  "The benchmark's Ring handler: the routes of ../shared/BASELINES.md, under
  any prefix (/hello, /pool/hello, ...), so one handler serves every mode."
  (:require [clojure.java.io :as io]))

(def ^:private file
  (io/file (System/getProperty "bench.file" "bench/index.html")))

(defn handler [request]
  (let [^String uri (:uri request)]
    (cond
      (.endsWith uri "/hello") {:status 200
                                :headers {"Content-Type" "text/plain"}
                                :body "Hello, Clojure!"}
      (.endsWith uri "/file") {:status 200
                               :headers {"Content-Type" "text/html"}
                               :body file}
      :else {:status 404 :headers {} :body "not found"})))
