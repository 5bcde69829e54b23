(ns nginx.jvm.ring-worker-test
  "Ring handlers named as in nginx.conf (my.ns/handler) and served through
  nginx.jvm.Worker, the way the C module calls it: the request bytes in the
  request buffer, the response read from the response buffer."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is use-fixtures]]
            [nginx.jvm.wire :as wire])
  (:import (java.nio ByteBuffer)
           (java.nio.charset StandardCharsets)
           (nginx.jvm AsyncHandler Responder Response)))

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

(use-fixtures :each (fn [t] (wire/worker :clear) (t)))

(defn- handle
  "Serves a request with the handler registered at index i; returns the decoded response."
  [i request]
  (let [bytes (wire/request-bytes request)
        ^ByteBuffer in (wire/worker :requestBuffer (alength bytes))]
    (.put in 0 bytes)
    (let [n (wire/worker :handle i (alength bytes) 0 0)]
      (wire/decode-response (wire/worker :responseBuffer) n))))

(defn- drain
  "The body of a :stream response, pulled as the C module does."
  [response]
  (let [body (:stream response)
        out (java.io.ByteArrayOutputStream.)]
    (loop [pieces 0]
      (let [n (wire/worker :next body)]
        (when (and (pos? n) (< pieces 10000))
          (let [piece (byte-array n)]
            (.get ^ByteBuffer (wire/worker :responseBuffer) 0 piece)
            (.write out piece)
            (recur (inc pieces))))))
    (wire/worker :close body)
    (.toString out "UTF-8")))

(deftest ring-handler-end-to-end
  (is (nil? (wire/worker :register "nginx.jvm.ring-worker-test/app")))
  (let [r (handle 0 {:method "PUT" :path "/things/1" :query "v=2"
                     :headers [["Host" "example.test"]] :body ["pay" "load"]})]
    (is (= 200 (:status r)))
    (is (= :inline (:kind r)))
    (is (= "put /things/1?v=2 host=example.test body=payload"
           (String. ^bytes (:body r) StandardCharsets/UTF_8)))
    (is (= [["Content-Type" "text/plain; charset=UTF-8"] ["Set-Cookie" "a=1"] ["Set-Cookie" "b=2"]]
           (:headers r)))))

(deftest handler-that-throws
  (is (nil? (wire/worker :register "nginx.jvm.ring-worker-test/thrower")))
  (let [r (handle 0 {})]
    (is (= 500 (:status r)))
    (is (= :error (:kind r)))
    (is (re-find #"^the handler threw: clojure.lang.ExceptionInfo: kaput" (:text r)))
    (is (re-find #"ring_worker_test" (:text r)) "with the stack trace")))

(deftest handler-that-returns-no-map
  (is (nil? (wire/worker :register "nginx.jvm.ring-worker-test/not-a-map")))
  (let [r (handle 0 {})]
    (is (= :error (:kind r)))
    (is (re-find #"the handler returned a java.lang.String, not a Ring response map" (:text r)))))

(deftest seq-body-elements-as-ring-writes-them
  ;; Ring sends each element of a seq body as (str element): nil is "".
  (is (nil? (wire/worker :register "nginx.jvm.ring-worker-test/seq-body")))
  (let [r (handle 0 {})]
    (is (= :stream (:kind r)))
    (is (= "ab1:k" (drain r)))))

(deftest streamable-body-of-a-handler-namespace
  ;; nginx.jvm.streaming-app extends StreamableResponseBody when it loads,
  ;; which register does after the Ring adapter itself has loaded.
  (is (nil? (wire/worker :register "nginx.jvm.streaming-app/handler")))
  (let [r (handle 0 {})]
    (is (= :stream (:kind r))
        (str "answered " (:status r) " " (:kind r) ": " (first (str/split-lines (str (:text r))))))
    (when (= :stream (:kind r))
      (is (= "one\ntwo\nthree\n" (drain r))))))

(deftest undefined-var-or-namespace
  (let [msg (wire/worker :register "nginx.jvm.ring-worker-test/no-such-handler")]
    (is (string? msg))
    (is (re-find #"cannot load handler \"nginx.jvm.ring-worker-test/no-such-handler\"" msg))
    (is (re-find #"is not defined" msg)))
  (let [msg (wire/worker :register "nginx.jvm.no-such-namespace/handler")]
    (is (string? msg))
    (is (re-find #"nginx/jvm/no_such_namespace" msg)))
  (let [r (handle 0 {})]
    (is (= :error (:kind r)) "the location answers 500")))

(deftest init-var
  (let [before @init-runs]
    (is (nil? (wire/worker :init "nginx.jvm.ring-worker-test/init")))
    (is (= (inc before) @init-runs)))
  (is (re-find #"jvm_init \"nginx.jvm.ring-worker-test/nope\" failed"
               (str (wire/worker :init "nginx.jvm.ring-worker-test/nope")))))

;; The 3-arity Ring form, (handler request respond raise), used with jvm_async on.

(defn async-app [req respond _raise]
  (future (respond {:status 200 :body (str "later " (:uri req))})))

(defn async-raiser [_ _respond raise]
  (raise (ex-info "async failure" {})))

(defn async-raises-a-value [_ _respond raise]
  (raise "not a throwable"))

(defn async-bad-response [_ respond _raise]
  (respond "not a map"))

(defn- answer
  "Calls the Ring var by name as an AsyncHandler; returns [:respond Response]
  or [:raise Throwable], whichever the responder got first (bounded wait)."
  [var-name request]
  (let [p (promise)
        responder (reify Responder
                    (respond [_ r] (deliver p [:respond r]))
                    (raise [_ t] (deliver p [:raise t])))]
    (.handle ^AsyncHandler (let [m (.getMethod (Class/forName "nginx.jvm.RingHandler") "handler" (into-array Class [String]))]
                                (.setAccessible m true)
                                (.invoke m nil (object-array [var-name]))) (wire/request request) responder)
    (deref p 5000 [:timeout nil])))

(deftest async-ring-handler-responds-from-another-thread
  (let [[how ^Response r] (answer "nginx.jvm.ring-worker-test/async-app" {:path "/deferred"})]
    (is (= :respond how))
    (is (= 200 (some-> r .status)))
    (is (= "later /deferred" (some-> r .body)))))

(deftest async-ring-handler-raises
  (let [[how t] (answer "nginx.jvm.ring-worker-test/async-raiser" {})]
    (is (= :raise how))
    (is (= "async failure" (ex-message t))))
  (let [[how t] (answer "nginx.jvm.ring-worker-test/async-raises-a-value" {})]
    (is (= :raise how))
    (is (re-find #"raise called with not a throwable" (str (ex-message t))))))

(deftest async-ring-handler-responds-with-no-map
  (let [[how t] (answer "nginx.jvm.ring-worker-test/async-bad-response" {})]
    (is (= :raise how) "the mistake is raised, not sent")
    (is (re-find #"not a Ring response map" (str (ex-message t))))))
