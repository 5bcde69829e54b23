(ns nginx.jvm.ring-test
  "The lazy Ring request map (nginx.jvm.RingRequest) must behave as an
  ordinary Clojure map for every use middleware makes of it."
  (:require [clojure.test :refer [deftest is]]
            [nginx.jvm.wire :as wire])
  (:import (java.io InputStream)
           (java.security.cert X509Certificate)
           (nginx.jvm Request)))

;; RingRequest and its constructor are package-private: the runtime makes
;; them, handlers only see a map.
(def ^:private ring-request-constructor
  (doto (.getDeclaredConstructor (Class/forName "nginx.jvm.RingRequest")
                                 (into-array Class [Request]))
    (.setAccessible true)))

(defn ring-request
  "The Ring request map the runtime would give a handler for a request
  described as wire/request-bytes takes it."
  [m]
  (.newInstance ^java.lang.reflect.Constructor ring-request-constructor
                (object-array [(wire/request m)])))

(def all-keys
  #{:server-port :server-name :remote-addr :uri :query-string :scheme
    :request-method :protocol :headers :content-type :content-length
    :character-encoding :ssl-client-cert :body :nginx.jvm/request})

(def sample
  {:method "POST" :path "/a%20b/c" :query "x=1&y=2" :protocol "HTTP/1.1"
   :port 8080 :server-name "example.test" :remote-addr "10.1.2.3"
   :headers [["Host" "example.test:8080"]
             ["Content-Type" "text/plain; charset=ISO-8859-1"]
             ["Content-Length" "5"]
             ["X-Multi" "1"]
             ["x-MULTI" "2"]
             ["Cookie" "a=1"]
             ["COOKIE" "b=2"]]
   :body ["hel" "lo"]})

(defn- req [] (ring-request sample))

(deftest values-of-every-key
  (let [r (req)]
    (is (= 8080 (get r :server-port)))
    (is (= "example.test" (get r :server-name)))
    (is (= "10.1.2.3" (get r :remote-addr)))
    (is (= "/a%20b/c" (get r :uri)) "the raw path, not decoded")
    (is (= "x=1&y=2" (get r :query-string)))
    (is (= :http (get r :scheme)))
    (is (= :post (get r :request-method)))
    (is (= "HTTP/1.1" (get r :protocol)))
    (is (= "text/plain; charset=ISO-8859-1" (get r :content-type)))
    (is (= 5 (get r :content-length)))
    (is (= "ISO-8859-1" (get r :character-encoding)))
    (is (nil? (get r :ssl-client-cert)))
    (is (instance? InputStream (get r :body)))))

(deftest lookup-forms
  (let [r (req)]
    (is (= "/a%20b/c" (:uri r)))
    (is (= "/a%20b/c" (r :uri)) "a map is a function of its keys")
    (is (= :dflt (get r :nope :dflt)))
    (is (= :dflt (:nope r :dflt)))
    (is (nil? (get r :nope)))
    (is (nil? (get r "uri")) "keys are keywords")
    (is (= [:uri "/a%20b/c"] (find r :uri)))
    (is (nil? (find r :nope)))
    (is (map? r))))

(deftest contains-and-count
  (let [r (ring-request {:path "/" :query nil})]
    (is (= 15 (count r)))
    (doseq [k all-keys]
      (is (contains? r k) (str k " is present, even with a nil value")))
    (is (nil? (:query-string r)))
    (is (not (contains? r :nope)))
    (is (nil? (get r :ssl-client-cert :missing)) "present with a nil value: not the not-found value")))

(deftest seq-and-keys
  (let [r (req)]
    (is (= all-keys (set (keys r))))
    (is (= 15 (count (seq r))))
    (is (every? map-entry? (seq r)))
    (doseq [[k v] r]
      (is (= v (get r k)) (str k)))
    (is (= (set (keys r)) (set (map key (into [] r)))) "iteration and seq agree")))

(deftest assoc-dissoc-update
  (let [r (req)
        added (assoc r :x 1)]
    (is (= 16 (count added)))
    (is (= (conj all-keys :x) (set (keys added))))
    (doseq [k all-keys]
      (is (= (get r k) (get added k)) (str k " kept by assoc")))
    (is (= 1 (:x added)))
    (let [replaced (assoc r :uri "/other")]
      (is (= 15 (count replaced)))
      (is (= "/other" (:uri replaced))))
    (is (= "/a%20b/c" (:uri r)) "the request itself is unchanged")
    (let [without (dissoc r :body)]
      (is (= 14 (count without)))
      (is (not (contains? without :body)))
      (is (contains? r :body)))
    (is (= "/a%20b/c/x" (:uri (update r :uri str "/x"))))
    (is (= 16 (count (conj r [:x 1]))))
    (is (= 15 (count r)))))

(deftest equality-with-ordinary-maps
  (let [r (req)
        m (into {} r)]
    (is (= 15 (count m)))
    (is (= r m))
    (is (= m r))
    (is (.equals ^Object r m))
    (is (= (hash m) (hash r)))
    (is (contains? #{m} r) "usable as a key where the copy is")
    (is (not= r (assoc m :uri "/other")))))

(deftest select-keys-merge-destructuring
  (let [r (req)]
    (is (= {:uri "/a%20b/c" :scheme :http :query-string "x=1&y=2"}
           (select-keys r [:uri :scheme :query-string])))
    (is (= {:ssl-client-cert nil} (select-keys r [:ssl-client-cert])))
    (let [merged (merge r {:params {"x" "1"}})]
      (is (= 16 (count merged)))
      (is (= {"x" "1"} (:params merged)))
      (is (= :post (:request-method merged))))
    (let [merged (merge {:params {}} r)]
      (is (= 16 (count merged)))
      (is (= "/a%20b/c" (:uri merged))))
    (let [{:keys [uri request-method server-port nope] :or {nope :default}} r]
      (is (= "/a%20b/c" uri))
      (is (= :post request-method))
      (is (= 8080 server-port))
      (is (= :default nope)))
    (let [{{host "host"} :headers} r]
      (is (= "example.test:8080" host)))))

(deftest headers-map
  (let [r (req)
        h (:headers r)]
    (is (map? h))
    (is (= {"host" "example.test:8080"
            "content-type" "text/plain; charset=ISO-8859-1"
            "content-length" "5"
            "x-multi" "1,2"
            "cookie" "a=1; b=2"}
           h)
        "lower-case names; repeats joined with \",\", cookies with \"; \"")
    (is (identical? h (:headers r)) "made once per request")
    (is (= "1,2" (get-in r [:headers "x-multi"])))
    (is (= {} (:headers (ring-request {}))))))

(deftest many-headers
  ;; More fields than a small array map holds.
  (let [fields (for [i (range 20)] [(str "X-Field-" i) (str "v" i)])
        h (:headers (ring-request {:headers fields}))]
    (is (= 20 (count h)))
    (is (= (into {} (for [i (range 20)] [(str "x-field-" i) (str "v" i)])) h))
    (is (= "v13" (h "x-field-13")))))

(deftest request-method-keyword
  (doseq [[method kw] [["GET" :get] ["POST" :post] ["HEAD" :head] ["PUT" :put]
                       ["DELETE" :delete] ["OPTIONS" :options] ["PATCH" :patch]
                       ["PROPFIND" :propfind]]]
    (is (identical? kw (:request-method (ring-request {:method method}))) method)))

(deftest scheme-port-protocol
  (let [r (ring-request {:https? true :port 443 :protocol "HTTP/2.0"})]
    (is (= :https (:scheme r)))
    (is (= 443 (:server-port r)))
    (is (integer? (:server-port r)))
    (is (= "HTTP/2.0" (:protocol r))))
  (is (= :http (:scheme (ring-request {:port 80})))))

(deftest query-string
  (is (nil? (:query-string (ring-request {:path "/p"}))) "no '?' in the target")
  (is (= "" (:query-string (ring-request {:path "/p" :query ""}))) "a bare '?'")
  (is (= "a=%20" (:query-string (ring-request {:path "/p" :query "a=%20"})))))

(deftest body-stream
  (let [r (req)
        body (:body r)]
    (is (identical? body (:body r)) "the same stream each time it is read")
    (is (identical? body (get (into {} r) :body)))
    (is (= "hello" (slurp body))))
  (let [r (ring-request {})]
    (is (= "" (slurp (:body r))) "no body: an empty stream, never nil"))
  (let [f (java.io.File/createTempFile "nginx-jvm-body" ".tmp")]
    (try
      (spit f "xxfile bodyxx")
      (is (= "<file body>"
             (slurp (:body (ring-request {:body ["<" {:file (str f) :offset 2 :length 9} ">"]})))))
      (finally (.delete f)))))

(deftest content-length-and-character-encoding
  (let [lookup (fn [& headers] (ring-request {:headers (vec headers)}))]
    (is (= 5 (:content-length (req))))
    (is (instance? Long (:content-length (req))))
    (is (= 12 (:content-length (lookup ["Content-Length" " 12 "]))))
    (is (nil? (:content-length (lookup ["Content-Length" "twelve"]))))
    (is (nil? (:content-length (lookup))))
    (is (nil? (:content-type (lookup))))
    (is (nil? (:character-encoding (lookup))))
    (is (nil? (:character-encoding (lookup ["Content-Type" "text/plain"]))))
    (is (= "utf-8" (:character-encoding (lookup ["content-type" "text/html;charset=utf-8"]))))
    (is (= "UTF-8" (:character-encoding (lookup ["Content-Type" "text/html; CharSet=\"UTF-8\"; q=1"]))))
    (is (= "text/html;charset=utf-8" (:content-type (lookup ["CONTENT-TYPE" "text/html;charset=utf-8"]))))))

(deftest client-certificate
  (let [cert (:ssl-client-cert (ring-request {:https? true :cert wire/cert-pem}))]
    (is (instance? X509Certificate cert))
    (is (= "CN=nginx-jvm test client" (.getName (.getSubjectX500Principal ^X509Certificate cert))))))

(deftest metadata
  (let [r (req)
        with (with-meta r {:tag 1})]
    (is (nil? (meta r)))
    (is (= {:tag 1} (meta with)))
    (is (= r with) "metadata does not change equality")
    (is (= 15 (count with)))
    (is (= {:a 2} (meta (vary-meta r assoc :a 2))))))

(deftest reduce-kv-and-friends
  (let [r (req)]
    (is (= all-keys (reduce-kv (fn [acc k _] (conj acc k)) #{} r)))
    (is (= (into {} r) (reduce-kv assoc {} r)))
    (is (= (into {} r) (into {} (map identity) r)))
    (is (= {} (empty r)))
    (is (= (set (vals r)) (set (map #(get r %) all-keys))))
    (is (re-find #":uri \"/a%20b/c\"" (pr-str r)))))
