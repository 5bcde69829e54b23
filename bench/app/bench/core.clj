(ns bench.core
  "The benchmark's Ring handler: the routes of ../shared/BASELINES.md."
  (:require [clojure.java.io :as io]))

(def ^:private file
  (io/file (System/getProperty "bench.file" "bench/index.html")))

(defn handler [request]
  (case (:uri request)
    "/hello" {:status 200
              :headers {"Content-Type" "text/plain"}
              :body "Hello, Clojure!"}
    "/file" {:status 200
             :headers {"Content-Type" "text/html"}
             :body file}
    {:status 404 :headers {} :body "not found"}))
