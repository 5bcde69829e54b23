(ns testapp.reqheaders
  "Ring handlers of tests/test_request_headers.py: request header fields
  changed in the rewrite and access phases, before proxy_pass."
  (:require [clojure.string :as str]
            [nginx.jvm.request :as nr])
  (:import (java.net URLDecoder)))

(defn- edits
  "The query's e=OP:NAME:VALUE, percent-decoded, in order."
  [query]
  (for [kv (str/split (or query "") #"&")
        :when (str/starts-with? kv "e=")]
    (str/split (URLDecoder/decode (subs kv 2) "ISO-8859-1") #":" 3)))

(defn- pattern [n]
  (apply str (take n (cycle "0123456789abcdef"))))

(defn edit
  "As testapp.ReqHeaders$Edit, through nginx.jvm.request: set, add, clear,
  fill, many, rep; with batch=1 the sets and clears in one set-headers!. The
  header names go as keywords when they are lower case."
  [req]
  (try
    (let [batch? (some #{"batch=1"} (str/split (or (:query-string req) "") #"&"))
          field #(if (= % (str/lower-case %)) (keyword %) %)
          batched (reduce
                   (fn [m [op n v]]
                     (case op
                       "set" (if batch? (assoc m (field n) v) (do (nr/set-header! req (field n) v) m))
                       "setlist" (assoc m n (str/split v #","))
                       "add" (do (nr/add-header! req (field n) v) m)
                       "clear" (if batch? (assoc m n nil) (do (nr/clear-header! req (field n)) m))
                       "fill" (do (nr/set-header! req n (pattern (Long/parseLong v))) m)
                       "rep" (do (doseq [i (range 1 (inc (Long/parseLong v)))]
                                   (nr/add-header! req n (str i)))
                                 m)
                       "many" (do (doseq [i (range 1 (inc (Long/parseLong n)))]
                                    (nr/set-header! req (str "X-Many-" i) (str "v" i)))
                                  m)))
                   (array-map) (edits (:query-string req)))]
      (when (seq batched)
        (nr/set-headers! req batched))
      nil)
    (catch RuntimeException e
      {:status 400 :headers {"Content-Type" "text/plain"}
       :body (str (.getSimpleName (class e)) ": " (.getMessage e))})))

(defn edit-async
  "The same, answered later from another thread (jvm_async on)."
  [req respond _]
  (future (respond (edit req))))
