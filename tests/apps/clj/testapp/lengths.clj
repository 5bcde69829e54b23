(ns testapp.lengths
  "Handlers that state a Content-Length of their own, right or wrong."
  (:import [java.io ByteArrayInputStream]))

(defn- stream [s] (ByteArrayInputStream. (.getBytes ^String s "UTF-8")))

(defn string-too-short [_]
  {:status 200 :headers {"Content-Length" "3"} :body "hello"})

(defn stream-too-short [_]
  {:status 200 :headers {"Content-Length" "3"} :body (stream "hello")})

(defn stream-too-long [_]
  {:status 200 :headers {"Content-Length" "10"} :body (stream "hello")})

(defn stream-exact [_]
  {:status 200 :headers {"Content-Length" "5"} :body (stream "hello")})

(defn head-length
  "What Ring's wrap-head leaves for a HEAD: the GET's length, no body."
  [req]
  {:status 200 :headers {"Content-Length" "1234"}
   :body (when-not (= :head (:request-method req)) (apply str (repeat 1234 "x")))})

(defn no-body [_] {:status 200 :headers {}})
