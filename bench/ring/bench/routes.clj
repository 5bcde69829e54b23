(ns bench.routes
  "The benchmark suite's Ring handler (bench/bench.py): the same five routes
  in every server, nginx-jvm in each mode and Ring's Jetty adapter alike.
  The work per request is what a small real handler does: build a string,
  read the body, read some headers."
  (:require [clojure.java.io :as io])
  (:import (java.io InputStream)))

(def ^:private file
  (io/file (System/getProperty "bench.file" "bench/index.html")))

;; The 10 headers the load generator sends to /headers.
(def ^:private header-names
  (mapv #(str "x-bench-" %) (range 10)))

(defn- json-item [i]
  (str "{\"id\":" i ",\"name\":\"item-" i "\",\"price\":" (* i 25)
       ",\"in_stock\":" (even? i) ",\"tags\":[\"bench\",\"json\"]}"))

(defn- json-body
  "About 1 KB of JSON, built anew for every request (bench.py and the Java
  handler build the same bytes)."
  []
  (str "{\"items\":[" (apply str (interpose "," (map json-item (range 13))))
       "],\"count\":13}"))

(defn- read-body ^bytes [request]
  (if-let [^InputStream in (:body request)]
    (.readAllBytes in)
    (byte-array 0)))

(defn- headers-length [request]
  (let [headers (:headers request)]
    (reduce + (map #(count (get headers % "")) header-names))))

(defn handler
  ([request]
   (case (:uri request)
     "/hello" {:status 200
               :headers {"Content-Type" "text/plain"}
               :body "Hello, Clojure!"}
     "/json" {:status 200
              :headers {"Content-Type" "application/json"}
              :body (json-body)}
     "/file" {:status 200
              :headers {"Content-Type" "text/html"}
              :body file}
     "/echo" {:status 200
              :headers {"Content-Type" "application/octet-stream"}
              :body (read-body request)}
     "/headers" {:status 200
                 :headers {"Content-Type" "text/plain"}
                 :body (str (headers-length request))}
     {:status 404 :headers {"Content-Type" "text/plain"} :body "not found"}))
  ;; jvm_async on: answer at once, from the calling thread, so the mode
  ;; measures the asynchronous path itself and not some other thread pool.
  ([request respond raise]
   (try
     (respond (handler request))
     (catch Throwable t (raise t)))))
