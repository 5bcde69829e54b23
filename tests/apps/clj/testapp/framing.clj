(ns testapp.framing
  "Ring handlers whose responses must not break the framing of the
  connection: a File path holding a NUL, a length with no body, a 1xx
  status, header values with control characters.  What each answers comes
  from the query, decoded as ISO-8859-1 (the tests send %00, %0B, %E9)."
  (:require [clojure.java.io :as io])
  (:import (java.io ByteArrayInputStream)
           (java.net URLDecoder)))

(defn- param [req k]
  (some-> (re-find (re-pattern (str "(?:^|&)" k "=([^&]*)"))
                   (or (:query-string req) ""))
          second
          (URLDecoder/decode "ISO-8859-1")))

(defn file
  "The file ?name= with \".txt\" after it, in the directory ?dir=."
  [req]
  {:status 200
   :headers {"Content-Type" "text/plain"}
   :body (io/file (param req "dir") (str (param req "name") ".txt"))})

(defn no-body
  "Status ?code= (200), Content-Length ?length= (100), no body."
  [req]
  {:status (Long/parseLong (or (param req "code") "200"))
   :headers {"Content-Length" (or (param req "length") "100")}
   :body nil})

(defn status
  "Status ?code=, a body."
  [req]
  {:status (Long/parseLong (param req "code")) :body "not interim"})

(defn header
  "The field X-Test: ?v=."
  [req]
  {:status 200 :headers {"X-Test" (param req "v")} :body "ok"})

(defn stream
  "\"hello\" streamed, with Content-Length ?length=."
  [req]
  {:status 200
   :headers {"Content-Length" (param req "length")}
   :body (ByteArrayInputStream. (.getBytes "hello" "UTF-8"))})

(defn big
  "100000 bytes in a byte array (more than the response buffer holds),
  with Content-Length ?length=."
  [req]
  {:status 200
   :headers {"Content-Length" (param req "length")}
   :body (byte-array 100000 (byte 120))})

(defn filter-headers
  "Header filter: field ?name= (X-Test) set to ?v=, status ?code=,
  Content-Length ?length=, each when given."
  [req response]
  (let [v (param req "v") code (param req "code") length (param req "length")]
    (cond-> response
      v (assoc-in [:headers (or (param req "name") "X-Test")] v)
      code (assoc :status (Long/parseLong code))
      length (assoc-in [:headers "content-length"] length))))
