(ns nginx.jvm.ring-worker-test
  "Ring handlers named as in nginx.conf (my.ns/handler) and served through
  nginx.jvm.Worker, the way the C module calls it: the request bytes in the
  request buffer, the response read from the response buffer."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is use-fixtures]]
            [nginx.jvm.wire :as wire])
  (:import (java.nio ByteBuffer)
           (java.nio.charset StandardCharsets)
           (nginx.jvm Worker)))

(defn app [req]
  {:status 200
   :headers {"Content-Type" "text/plain; charset=UTF-8"
             "Set-Cookie" ["a=1" "b=2"]}
   :body (str (name (:request-method req)) " " (:uri req) "?" (:query-string req)
              " host=" (get-in req [:headers "host"])
              " body=" (slurp (:body req)))})

(defn thrower [_]
  (throw (ex-info "kaput" {:why "testing"})))

(defn not-a-map [_]
  "just a string")

(defn seq-body [_]
  {:status 200 :body (list "a" nil "b" 1 :k)})

(def init-runs (atom 0))

(defn init []
  (swap! init-runs inc))

(use-fixtures :each (fn [t] (Worker/stop) (t)))

(defn- handle
  "Serves a request with the handler registered at index i; returns the decoded response."
  [i request]
  (let [bytes (wire/request-bytes request)
        ^ByteBuffer in (Worker/requestBuffer (alength bytes))]
    (.put in 0 bytes)
    (wire/decode-response (Worker/responseBuffer) (Math/abs (Worker/handle i (alength bytes))))))

(defn- drain
  "The streamed body pending after handle, pulled as the C module does."
  []
  (let [body Worker/pending
        out (java.io.ByteArrayOutputStream.)]
    (loop [pieces 0]
      (let [n (Worker/next body)]
        (when (and (pos? n) (< pieces 10000))
          (let [piece (byte-array n)]
            (.get (Worker/responseBuffer) 0 piece)
            (.write out piece)
            (recur (inc pieces))))))
    (Worker/close body)
    (.toString out "UTF-8")))

(deftest ring-handler-end-to-end
  (is (nil? (Worker/register "nginx.jvm.ring-worker-test/app")))
  (let [r (handle 0 {:method "PUT" :path "/things/1" :query "v=2"
                     :headers [["Host" "example.test"]] :body ["pay" "load"]})]
    (is (= 200 (:status r)))
    (is (= :inline (:kind r)))
    (is (= "put /things/1?v=2 host=example.test body=payload"
           (String. ^bytes (:body r) StandardCharsets/UTF_8)))
    (is (= [["Content-Type" "text/plain; charset=UTF-8"] ["Set-Cookie" "a=1"] ["Set-Cookie" "b=2"]]
           (:headers r)))))

(deftest handler-that-throws
  (is (nil? (Worker/register "nginx.jvm.ring-worker-test/thrower")))
  (let [r (handle 0 {})]
    (is (= 500 (:status r)))
    (is (= :error (:kind r)))
    (is (re-find #"^the handler threw: clojure.lang.ExceptionInfo: kaput" (:text r)))
    (is (re-find #"ring_worker_test" (:text r)) "with the stack trace")))

(deftest handler-that-returns-no-map
  (is (nil? (Worker/register "nginx.jvm.ring-worker-test/not-a-map")))
  (let [r (handle 0 {})]
    (is (= :error (:kind r)))
    (is (re-find #"the handler returned a java.lang.String, not a Ring response map" (:text r)))))

(deftest seq-body-elements-as-ring-writes-them
  ;; Ring sends each element of a seq body as (str element): nil is "".
  (is (nil? (Worker/register "nginx.jvm.ring-worker-test/seq-body")))
  (let [r (handle 0 {})]
    (is (= :stream (:kind r)))
    (is (= "ab1:k" (drain)))))

(deftest streamable-body-of-a-handler-namespace
  ;; nginx.jvm.streaming-app extends StreamableResponseBody when it loads,
  ;; which register does after the Ring adapter itself has loaded.
  (is (nil? (Worker/register "nginx.jvm.streaming-app/handler")))
  (let [r (handle 0 {})]
    (is (= :stream (:kind r))
        (str "answered " (:status r) " " (:kind r) ": " (first (str/split-lines (str (:text r))))))
    (when (= :stream (:kind r))
      (is (= "one\ntwo\nthree\n" (drain))))))

(deftest undefined-var-or-namespace
  (let [msg (Worker/register "nginx.jvm.ring-worker-test/no-such-handler")]
    (is (string? msg))
    (is (re-find #"cannot load handler \"nginx.jvm.ring-worker-test/no-such-handler\"" msg))
    (is (re-find #"is not defined" msg)))
  (let [msg (Worker/register "nginx.jvm.no-such-namespace/handler")]
    (is (string? msg))
    (is (re-find #"nginx/jvm/no_such_namespace" msg)))
  (let [r (handle 0 {})]
    (is (= :error (:kind r)) "the location answers 500")))

(deftest init-var
  (let [before @init-runs]
    (is (nil? (Worker/init "nginx.jvm.ring-worker-test/init")))
    (is (= (inc before) @init-runs)))
  (is (re-find #"jvm_init \"nginx.jvm.ring-worker-test/nope\" failed"
               (str (Worker/init "nginx.jvm.ring-worker-test/nope")))))
