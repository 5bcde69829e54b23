(ns realapp.core
  "TechEmpower's six Framework Benchmarks test types as one Ring handler,
  the same on every server bench/realapp measures:

    /json        {\"message\":\"Hello, World!\"}, serialised per request
    /db          one random World row
    /queries     ?queries=N random World rows, one query each
    /fortunes    the Fortune rows and one added at request time, sorted by
                 message, in an HTML table (escaped)
    /updates     ?queries=N random World rows, each given a new random
                 number, written back in one batch
    /plaintext   Hello, World!

  N is clamped to 1..500; missing or not an integer is 1.  JSON from
  clojure.data.json, HTML from hiccup (both Debian's), the rows from
  PostgreSQL through a HikariCP pool (Maven Central).  The pool starts when
  this namespace is loaded (with the server, as TechEmpower's applications
  start theirs), from two system properties:
  realapp.db (a JDBC URL) and realapp.pool (its size, default 8; per JVM,
  so an nginx with N workers has N pools).  No in-memory cache of rows, no
  ORDER BY: the rules forbid both."
  (:require [clojure.data.json :as json]
            [hiccup.page :as page]
            [hiccup.util :as hu])
  (:import (com.zaxxer.hikari HikariConfig HikariDataSource)
           (java.sql Connection PreparedStatement ResultSet)
           (java.util.concurrent ThreadLocalRandom)))

(set! *warn-on-reflection* true)

(def ^:private max-queries 500)
(def ^:private world-rows 10000)

;; --- the pool ---------------------------------------------------------------

(defn- make-pool ^HikariDataSource []
  (let [url (or (System/getProperty "realapp.db")
                (throw (IllegalStateException.
                        "realapp: -Drealapp.db=jdbc:postgresql://... is not set")))
        size (Integer/parseInt (System/getProperty "realapp.pool" "8"))
        config (doto (HikariConfig.)
                 (.setJdbcUrl url)
                 (.setPoolName "realapp")
                 ;; a fixed pool, as HikariCP recommends
                 (.setMaximumPoolSize size)
                 (.setMinimumIdle size)
                 (.setAutoCommit true))]
    (HikariDataSource. config)))

(defonce ^:private pool (delay (make-pool)))

;; Started with the server, not by the first request that needs it: a cold
;; pool costs its first requests ~200 ms (the driver's classes, the first
;; connection), and a benchmark's warm-up cannot be sure to reach every
;; nginx worker's JVM (measured: after a warm-up that all landed on one
;; worker, the other's first /db requests took 0.13-0.28 s).  Without
;; realapp.db the namespace still loads, and a database route says why.
(when (System/getProperty "realapp.db")
  @pool)

(defn- connection ^Connection []
  (.getConnection ^HikariDataSource @pool))

;; --- the rows ---------------------------------------------------------------

(defn- random-id ^long []
  (inc (.nextInt (ThreadLocalRandom/current) world-rows)))

(defn- world [^PreparedStatement select id]
  (.setInt select 1 (int id))
  (with-open [rs (.executeQuery select)]
    (when-not (.next rs)
      (throw (IllegalStateException. (str "realapp: no World row " id))))
    (array-map "id" (.getInt rs 1) "randomNumber" (.getInt rs 2))))

(defn- worlds
  "n World rows at random ids, each by its own query."
  [^Connection c n]
  (with-open [select (.prepareStatement
                      c "SELECT id, randomNumber FROM World WHERE id = ?")]
    (mapv (fn [_] (world select (random-id))) (range n))))

(defn- update-worlds
  "n random World rows with new random numbers, written back in one batch
  (in id order, so that two batches never wait on each other)."
  [n]
  (with-open [c (connection)]
    (let [ws (mapv #(assoc % "randomNumber" (random-id)) (worlds c n))]
      (with-open [update (.prepareStatement
                          c "UPDATE World SET randomNumber = ? WHERE id = ?")]
        (doseq [w (sort-by #(get % "id") ws)]
          (.setInt update 1 (int (get w "randomNumber")))
          (.setInt update 2 (int (get w "id")))
          (.addBatch update))
        (.executeBatch update))
      ws)))

(defn- fortunes []
  (with-open [c (connection)
              s (.prepareStatement c "SELECT id, message FROM Fortune")
              rs (.executeQuery s)]
    (loop [rows (transient [])]
      (if (.next rs)
        (recur (conj! rows [(.getInt rs 1) (.getString rs 2)]))
        (persistent! rows)))))

;; --- the answers ------------------------------------------------------------

(defn queries-param
  "The queries parameter of a query string, clamped to 1..500 (missing,
  empty or not an integer: 1)."
  [query-string]
  (let [v (some->> query-string (re-find #"(?:^|&)queries=([^&]*)") second)
        n (try (Long/parseLong (or v "")) (catch NumberFormatException _ 1))]
    (max 1 (min max-queries n))))

(defn- json-response [value]
  {:status 200
   :headers {"Content-Type" "application/json"}
   :body (json/write-str value)})

(defn fortunes-html
  "The HTML table of [id message] rows, sorted by message; messages are
  escaped (one of them is a <script>)."
  [rows]
  (page/html5
   [:head [:title "Fortunes"]]
   [:body
    [:table
     [:tr [:th "id"] [:th "message"]]
     (for [[id message] (sort-by second rows)]
       [:tr [:td id] [:td (hu/escape-html message)]])]]))

(defn handler [request]
  (case (:uri request)
    "/plaintext" {:status 200
                  :headers {"Content-Type" "text/plain"}
                  :body "Hello, World!"}
    "/json" (json-response {"message" "Hello, World!"})
    "/db" (json-response (with-open [c (connection)]
                           (first (worlds c 1))))
    "/queries" (json-response (with-open [c (connection)]
                                (worlds c (queries-param
                                           (:query-string request)))))
    "/updates" (json-response (update-worlds (queries-param
                                              (:query-string request))))
    "/fortunes" {:status 200
                 :headers {"Content-Type" "text/html; charset=utf-8"}
                 :body (fortunes-html
                        (conj (fortunes)
                              [0 "Additional fortune added at request time."]))}
    {:status 404
     :headers {"Content-Type" "text/plain"}
     :body "Not found"}))
