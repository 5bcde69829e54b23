(ns nginx.jvm.ring-response-test
  "A Ring response map turned into a nginx.jvm.Response by RingHandler."
  (:require [clojure.test :refer [deftest is testing]]
            [ring.core.protocols :as protocols])
  (:import (java.io ByteArrayInputStream ByteArrayOutputStream File OutputStream)
           (java.lang.reflect InvocationTargetException Method)
           (nginx.jvm BodyWriter Response)))

;; A body type of the application's own, made streamable the usual way,
;; before RingHandler is first used (the def below loads it): see
;; streamable-response-body-extended-after-the-adapter-loaded for the other order.
(deftype Chunks [parts])

(extend-protocol protocols/StreamableResponseBody
  Chunks
  (write-body-to-stream [body response ^OutputStream out]
    (with-open [out out]
      (doseq [p (.-parts ^Chunks body)]
        (.write out (.getBytes (str p) "UTF-8")))
      ;; Shows the response map is the one the handler returned.
      (.write out (.getBytes (str " status=" (:status response)) "UTF-8")))))

;; RingHandler/response is package-private: the runtime calls it, handlers
;; only return maps.
(def ^:private response-method
  (doto (.getDeclaredMethod (Class/forName "nginx.jvm.RingHandler") "response" (into-array Class [Object]))
    (.setAccessible true)))

(defn ->response
  "The Response the runtime makes of a handler's return value; what it
  throws is thrown as is."
  ^Response [ring-response]
  (try
    (.invoke ^Method response-method nil (object-array [ring-response]))
    (catch InvocationTargetException e
      (throw (.getCause e)))))

(defn header-fields
  "A Response's header fields as [name value] pairs, in order."
  [^Response r]
  (mapv (fn [i] [(.headerName r i) (.headerValue r i)]) (range (.headerCount r))))

(defn- thrown-message [f]
  (try (f) nil (catch nginx.jvm.BadResponseException e (.getMessage e))))

(deftest status
  (is (= 200 (.status (->response {:status nil}))) "nil status: 200")
  (is (= 200 (.status (->response {}))))
  (is (= 404 (.status (->response {:status 404}))))
  (is (= 201 (.status (->response {:status (int 201)}))))
  (is (= 302 (.status (->response {:status 302N})))))

(deftest status-that-is-no-integer
  ;; rounded or wrapped, these would read as 200
  (doseq [s [200.0 200.7 (+ 4294967296 200) 4294967496N (biginteger 4294967496)]]
    (is (re-find #"not an integer status" (str (thrown-message #(->response {:status s})))) (pr-str s))))

(deftest nil-in-a-seq-of-header-values-leaves-a-field-out
  (is (= [["X-A" "1"] ["X-A" "2"]]
         (header-fields (->response {:status 200 :headers {"X-A" ["1" nil "2"]}})))))

(deftest status-that-is-not-a-number
  (let [msg (thrown-message #(->response {:status "200"}))]
    (is (some? msg))
    (is (re-find #":status \"200\", not a number" (str msg))))
  (is (thrown? nginx.jvm.BadResponseException (->response {:status :ok}))))

(deftest header-fields-of-all-shapes
  (let [r (->response {:status 200
                       :headers {"Content-Type" "text/plain"
                                 "Set-Cookie" ["a=1" "b=2; Path=/"]
                                 :x-keyword "k"
                                 "X-Seq" (list "s1" "s2")
                                 "X-Number" 5
                                 "X-Nil" nil}})
        fields (header-fields r)]
    (is (= [["Content-Type" "text/plain"]
            ["Set-Cookie" "a=1"]
            ["Set-Cookie" "b=2; Path=/"]
            ["x-keyword" "k"]
            ["X-Seq" "s1"]
            ["X-Seq" "s2"]
            ["X-Number" "5"]]
           fields)
        "a vector or seq value repeats the field; a keyword name is its name; nil is left out"))
  (is (= [] (header-fields (->response {:status 204}))))
  (is (= [] (header-fields (->response {:status 200 :headers {}}))))
  (is (= [] (header-fields (->response {:status 200 :headers {"Set-Cookie" []}})))))

(deftest headers-that-are-not-a-map
  (is (re-find #":headers of type .*, not a map"
               (str (thrown-message #(->response {:status 200 :headers "Content-Type: text/plain"}))))))

(deftest bodies-kept-as-they-are
  (let [bytes (.getBytes "bytes")
        file (File. "/tmp/some-file")
        stream (ByteArrayInputStream. (byte-array 3))
        a-list (list "a" "b")
        a-lazy-seq (map str [1 2 3])]
    (doseq [body ["text" bytes file stream a-list a-lazy-seq]]
      (is (identical? body (.body (->response {:status 200 :body body})))
          (str (class body))))
    (is (nil? (.body (->response {:status 204 :body nil}))))
    (testing "an Iterable that is not a seq (a vector) is sent element by element too"
      (let [v ["x" "y"]]
        (is (identical? v (.body (->response {:body v}))))))))

(deftest body-of-an-unknown-type
  (is (re-find #":body of type java.lang.Long, which Ring does not define"
               (str (thrown-message #(->response {:status 200 :body 42}))))))

(defn- written [^BodyWriter w]
  (let [out (ByteArrayOutputStream.)]
    (.writeTo w out)
    (.toString out "UTF-8")))

(deftest streamable-response-body
  (let [body (->> {:status 203 :body (Chunks. ["a" "b" "\u00e9"])}
                  ->response
                  .body)]
    (is (instance? BodyWriter body))
    (when (instance? BodyWriter body)
      (is (= "ab\u00e9 status=203" (written body))))))

(deftest streamable-response-body-implemented-inline
  (let [t (eval '(deftype InlineBody []
                   ring.core.protocols/StreamableResponseBody
                   (write-body-to-stream [_ _ out]
                     (.write ^java.io.OutputStream out (.getBytes "inline")))))
        body (.body (->response {:body (.newInstance ^Class t)}))]
    (is (instance? BodyWriter body))
    (when (instance? BodyWriter body)
      (is (= "inline" (written body))))))

(deftest streamable-response-body-extended-after-the-adapter-loaded
  ;; In nginx the adapter class loads first (Worker.register, jvm_init), and
  ;; only then the handler's namespace, whose extend-protocol therefore runs
  ;; after RingHandler has looked up the protocol.
  (->response {})
  (let [t (eval '(do (deftype LateBody [])
                     (extend-protocol ring.core.protocols/StreamableResponseBody
                       LateBody
                       (write-body-to-stream [_ _ out]
                         (.write ^java.io.OutputStream out (.getBytes "late"))))
                     LateBody))
        body (try (.body (->response {:body (.newInstance ^Class t)}))
                  (catch nginx.jvm.BadResponseException e e))]
    (is (instance? BodyWriter body)
        (str "a type extended after the adapter loaded is refused: " body))
    (when (instance? BodyWriter body)
      (is (= "late" (written body))))))

(defrecord RecordResponse [status headers body])

(deftest record-response
  (let [r (->response (->RecordResponse 201 {"X-A" "1"} "made by a record"))]
    (is (= 201 (.status r)))
    (is (= [["X-A" "1"]] (header-fields r)))
    (is (= "made by a record" (.body r)))))

(deftest not-a-response-map
  (is (= "the handler returned a java.lang.String, not a Ring response map"
         (thrown-message #(->response "hello"))))
  (is (= "the handler returned nil, not a Ring response map"
         (thrown-message #(->response nil))))
  (is (re-find #"PersistentVector, not a Ring response map"
               (str (thrown-message #(->response [200 {} "body"])))))
  (is (re-find #"java.util.HashMap, not a Ring response map"
               (str (thrown-message #(->response (java.util.HashMap. {:status 200})))))))
