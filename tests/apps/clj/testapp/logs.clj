(ns testapp.logs
  "Everything a handler may write, for tests/test_logs.py: System.out and
  System.err, java.util.logging, SLF4J (when slf4j-api is on the class
  path) and clojure.tools.logging, from the handler and from many threads."
  (:require [clojure.string :as str]
            [clojure.tools.logging :as log]
            [clojure.tools.logging.impl :as impl])
  (:import (java.util.logging Level Logger)))

(defn- params [req]
  (into {} (for [kv (str/split (or (:query-string req) "") #"&")
                 :let [[k v] (str/split kv #"=" 2)]
                 :when (seq k)]
             [(keyword k) (java.net.URLDecoder/decode (or v "") "UTF-8")])))

(defn- slf4j [logger level msg]
  (let [l (org.slf4j.LoggerFactory/getLogger ^String logger)]
    (case level
      "error" (.error l "{} {}" msg "slf4j-arg")
      "warn" (.warn l "{}" msg)
      "info" (.info l "{}" msg)
      "debug" (.debug l "{}" msg))))

(defn- tools-logging [level msg]
  (log/logp (keyword level) msg)
  (impl/name log/*logger-factory*))

(defonce formatted (atom 0))

(defn- counting
  "An argument that counts how often it is turned into text."
  []
  (reify Object (toString [_] (swap! formatted inc) "counted")))

(defn handler [req]
  (let [{:keys [op msg level threads lines logger]} (params req)]
    (case op
      "out" (do (.println System/out msg) {:status 200 :body "ok"})
      "err" (do (.print System/err (str msg "-part1 "))
                (.println System/err (str msg "-part2"))
                {:status 200 :body "ok"})
      "jul" (let [l (Logger/getLogger (or logger "testapp.jul"))]
              (.log l (Level/parse level) (str msg " {0}") (object-array ["jul-arg"]))
              {:status 200 :body "ok"})
      "jul-throw" (do (.log (Logger/getLogger "testapp.jul") Level/SEVERE msg
                            (IllegalStateException. "jul-cause"))
                      {:status 200 :body "ok"})
      "slf4j" (do (slf4j (or logger "testapp.slf4j") level msg) {:status 200 :body "ok"})
      "lazy" (do (reset! formatted 0)
                 (.log (Logger/getLogger "testapp.lazy") (Level/parse level) "jul {0}"
                       (object-array [(counting)]))
                 (.info (org.slf4j.LoggerFactory/getLogger "testapp.lazy") "slf4j {}" (counting))
                 (.debug (org.slf4j.LoggerFactory/getLogger "testapp.lazy") "slf4j {}" (counting))
                 (log/debug (counting))
                 {:status 200 :body (str @formatted)})
      "slf4j-provider" {:status 200
                        :body (.getName (class (org.slf4j.LoggerFactory/getILoggerFactory)))}
      "tools" {:status 200 :body (tools-logging level msg)}
      "flood" (let [n (Long/parseLong threads)
                    k (Long/parseLong lines)
                    pad (apply str (repeat 300 "x"))
                    ws (doall (for [t (range n)]
                                (future
                                  (dotimes [i k]
                                    (case (mod i 3)
                                      0 (.println System/out (str msg " t" t " i" i " " pad " end"))
                                      1 (.warning (Logger/getLogger "testapp.flood")
                                                  (str msg " t" t " i" i " " pad " end"))
                                      2 (.warn (org.slf4j.LoggerFactory/getLogger "testapp.flood")
                                               (str msg " t" t " i" i " " pad " end")))))))]
                (run! deref ws)
                {:status 200 :body "ok"})
      {:status 404 :body "no such op"})))
