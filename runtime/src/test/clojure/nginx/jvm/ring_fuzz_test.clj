(ns nginx.jvm.ring-fuzz-test
  "Generated Ring responses, every type in every slot, served through
  nginx.jvm.Worker as the C module calls it. A small model of Ring's
  contract says what each must become; the runtime must agree: a bad
  response is an error response (a 500 with a reason), a good one is
  encoded intact, and nothing throws out of the runtime or hangs."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is use-fixtures]]
            [nginx.jvm.wire :as wire])
  (:import (java.io ByteArrayInputStream File InputStream IOException)
           (java.nio ByteBuffer)
           (java.nio.charset Charset StandardCharsets)
           (java.util Random)))

(def ^:private current (atom nil))

(defn handler
  "Answers whatever response the test put in `current`."
  [_]
  @current)

(use-fixtures :each (fn [t] (wire/worker :clear) (t)))

;; --- generation -------------------------------------------------------

(def ^:private seed (Long/getLong "nginx.jvm.fuzz.seed" 20261123))
(def ^:private cases (Long/getLong "nginx.jvm.fuzz.count" 3000))

(defn- pick [^Random rnd xs] (nth xs (.nextInt rnd (count xs))))

(defn- text [^Random rnd]
  (pick rnd ["" "ok" "héllo" "snow ☃" "a\r\nX-Injected: 1" "nul\u0000" "tab\tin"
             (apply str (repeat (.nextInt rnd 3000) "x"))
             (String. (byte-array (repeatedly (.nextInt rnd 20) #(unchecked-byte (.nextInt rnd 256))))
                      StandardCharsets/ISO_8859_1)]))

(defn- throwing-stream [^Random rnd]
  (let [left (atom (.nextInt rnd 5000))]
    (proxy [InputStream] []
      (read
        ([] (if (pos? @left) (do (swap! left dec) 65) (throw (IOException. "stream-fuzz-failure"))))
        ([^bytes b off len]
         (if (pos? @left)
           (let [n (min len @left)]
             (java.util.Arrays/fill b (int off) (int (+ off n)) (byte 65))
             (swap! left - n)
             n)
           (throw (IOException. "stream-fuzz-failure"))))))))

(defn- status [^Random rnd]
  (pick rnd [nil 200 201 204 304 404 100 599 99 600 0 -200 (int 302) 200N
             (+ 4294967296 200) Long/MAX_VALUE 2.5 200.0 "200" :ok true]))

(defn- header-name [^Random rnd]
  (pick rnd ["Content-Type" "content-type" :content-type "X-Ok" "X-Ok!#$%&'*+-.^_`|~09"
             "Bad Name" "X:Y" "" "X-Naïve" 'x-symbol 42 "a\nb"]))

(defn- header-value [^Random rnd]
  (pick rnd [(text rnd) nil 7 :kw ["a" "b"] (list "c" nil "d") [] #{"s"}
             {"k" "v"} "text/plain; charset=ISO-8859-1" "text/plain; charset=UTF-16"
             "text/plain; charset=no-such-charset"]))

(defn- element [^Random rnd]
  (pick rnd [(text rnd) nil 1 :k (.getBytes "bytes" StandardCharsets/UTF_8) 2.5 \c]))

(defn- body [^Random rnd]
  (pick rnd [nil (text rnd) (.getBytes ^String (text rnd) StandardCharsets/UTF_8)
             (seq (repeatedly (.nextInt rnd 6) #(element rnd)))
             (vec (repeatedly (.nextInt rnd 6) #(element rnd)))
             (list) (lazy-seq (map str (range (.nextInt rnd 100))))
             (ByteArrayInputStream. (.getBytes ^String (text rnd) StandardCharsets/UTF_8))
             (throwing-stream rnd) (File. "/no/such/file") {:a 1} #{"x"} 42 :kw true]))

(defn- response [^Random rnd]
  (let [headers (into {} (repeatedly (.nextInt rnd 5) (fn [] [(header-name rnd) (header-value rnd)])))]
    (pick rnd [{:status (status rnd) :headers headers :body (body rnd)}
               {:status (status rnd) :headers headers :body (body rnd)}
               {:status (status rnd) :headers headers :body (body rnd)}
               {:status 200 :headers (pick rnd [[] "x" 5]) :body "b"}
               {:status 200 :body (body rnd)}
               nil "not a map" 42])))

;; --- the model --------------------------------------------------------

(defn- token? [^String s]
  (and (seq s) (every? #(or (Character/isLetterOrDigit ^char %) (str/index-of "!#$%&'*+-.^_`|~" %)) s)
       (every? #(< (int %) 128) s)))

(defn- bad! [why] (throw (ex-info "bad" {:bad why})))

(defn- model-status [s]
  (let [n (cond (nil? s) 200
                (and (integer? s) (<= Integer/MIN_VALUE s Integer/MAX_VALUE)) (long s)
                :else (bad! :status))]
    ;; an interim (1xx) status is no final answer: refused as out of range
    (if (<= 200 n 599) n (bad! :status))))

(defn- model-fields [name value]
  (let [n (if (instance? clojure.lang.Named name) (clojure.core/name name) (str name))
        vs (cond (nil? value) []
                 (string? value) [value]
                 (instance? Iterable value) (map str (remove nil? value))
                 :else [(str value)])]
    (when (and (seq vs) (not (token? n))) (bad! :name))
    (when (and (empty? n) (seq vs)) (bad! :name))
    (for [v vs]
      (if (some #{\return \newline \u0000} v)
        (bad! :value)
        [n (apply str (map #(if (> (int %) 0xff) \? %) v))]))))

(defn- charset ^Charset [headers]
  (let [ct (some (fn [[n v]] (when (.equalsIgnoreCase "Content-Type" ^String n) v)) headers)
        cs (second (re-find #"(?i)charset=\"?([^;\s\"]+)" (str ct)))]
    (try (if cs (Charset/forName cs) StandardCharsets/UTF_8)
         (catch Exception _ StandardCharsets/UTF_8))))

(defn- model
  "What the response must become: {:bad why} or {:status :headers :body},
  :body being bytes, {:file path}, {:fails prefix-length} or nil."
  [r]
  (try
    (when-not (map? r) (bad! :not-a-map))
    (let [status (model-status (:status r))
          hs (:headers r)
          _ (when-not (or (nil? hs) (map? hs)) (bad! :headers))
          fields (vec (mapcat (fn [[k v]] (model-fields k v)) hs))
          cs (charset fields)
          b (:body r)]
      {:status status
       :headers fields
       :body (cond (nil? b) nil
                   (string? b) (.getBytes ^String b cs)
                   (bytes? b) b
                   (instance? File b) {:file (.getPath ^File b)}
                   (instance? ByteArrayInputStream b)
                   (let [^ByteArrayInputStream in b]
                     ;; read, then back to the start for the runtime
                     (.mark in 0)
                     (let [all (.readAllBytes in)] (.reset in) all))
                   (instance? InputStream b) {:fails true}
                   (or (map? b) (set? b)) (bad! :body)
                   (or (seq? b) (sequential? b))
                   (let [out (java.io.ByteArrayOutputStream.)]
                     (doseq [e b]
                       (.writeBytes out (cond (nil? e) (byte-array 0)
                                              (bytes? e) e
                                              :else (.getBytes (str e) cs))))
                     (.toByteArray out))
                   :else (bad! :body))})
    (catch clojure.lang.ExceptionInfo e
      (ex-data e))))

;; --- running ----------------------------------------------------------

(defn- serve []
  (let [bytes (wire/request-bytes {})
        ^ByteBuffer in (wire/worker :requestBuffer (alength bytes))]
    (.put in 0 bytes)
    ;; no request handle (0), the content phase (0)
    (wire/decode-response (wire/worker :responseBuffer) (wire/worker :handle 0 (alength bytes) 0 0))))

(defn- drain
  "A :stream body pulled as the C module does: [bytes how-it-ended]."
  [id]
  (let [out (java.io.ByteArrayOutputStream.)]
    (loop [pieces 0]
      (let [n (wire/worker :next id)]
        (cond
          (pos? n) (let [piece (byte-array n)]
                     (.get ^ByteBuffer (wire/worker :responseBuffer) 0 piece)
                     (.writeBytes out piece)
                     (if (< pieces 100000) (recur (inc pieces)) (throw (IllegalStateException. "endless body"))))
          :else (do (wire/worker :close id)
                    [(.toByteArray out) (case (int n) -1 :end -3 :failed n)]))))))

(defn- body-of
  "The bytes a decoded response carries, however it carries them."
  [d]
  (case (:kind d)
    :none nil
    :inline (:body d)
    :file {:file (:text d)}
    :stream (drain (:stream d))))

(deftest generated-ring-responses
  (is (nil? (wire/worker :register "nginx.jvm.ring-fuzz-test/handler")))
  (let [rnd (Random. seed)
        tally (atom {})]
    (dotimes [i cases]
      (let [r (response rnd)
            expected (model r)
            _ (reset! current r)
            d (serve)
            what (str "case " i " (seed " seed "): "
                      (pr-str (if (map? r)
                                (update r :body #(if (string? %) (subs % 0 (min 40 (count %))) %))
                                r)))]
        (swap! tally update (if (:bad expected) :bad :good) (fnil inc 0))
        (if (:bad expected)
          (do (is (= :error (:kind d)) what)
              (is (= 500 (:status d)) what))
          (let [body (body-of d)]
            (is (= (:status expected) (:status d)) what)
            (is (= (:headers expected) (:headers d)) what)
            (cond
              (:fails (:body expected))
              (is (= :failed (second body)) what)

              (map? (:body expected))
              (is (= (:body expected) body) what)

              :else
              (let [bytes (if (vector? body) (do (is (= :end (second body)) what) (first body)) body)]
                (is (= (seq (:body expected)) (seq bytes)) what)))))))
    ;; the generator reached both sides
    (is (< 100 (:bad @tally 0)) @tally)
    (is (< 100 (:good @tally 0)) @tally)))
