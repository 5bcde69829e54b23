(ns nginx.jvm.wire
  "Test support, not tests: requests encoded in the layout
  ngx_http_jvm_request.c writes, and responses decoded from the layout
  ResponseEncoder writes, so the runtime can be driven without nginx."
  (:import (java.io ByteArrayOutputStream)
           (java.lang.reflect Method)
           (java.nio ByteBuffer ByteOrder)
           (java.nio.charset StandardCharsets)
           (nginx.jvm Request)))

(def cert-pem
  "A self-signed certificate (openssl req -x509, CN=nginx-jvm test client)."
  (str "-----BEGIN CERTIFICATE-----\n"
       "MIIBmDCCAT2gAwIBAgIUE+t+ZEwIMHaXBJsdf0IqseoMM00wCgYIKoZIzj0EAwIw\n"
       "IDEeMBwGA1UEAwwVbmdpbngtanZtIHRlc3QgY2xpZW50MCAXDTI2MTEyMTE2NTI1\n"
       "MVoYDzIxMjYxMDI4MTY1MjUxWjAgMR4wHAYDVQQDDBVuZ2lueC1qdm0gdGVzdCBj\n"
       "bGllbnQwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAS4zd6UY343KrJ8jdWXM3n1\n"
       "d6ODizUNSNJvjBRl0vlBLKLxkGLb5pNmOk/U5j9KxM27LuMw+nE9c9Np6qyQ3ffc\n"
       "o1MwUTAdBgNVHQ4EFgQUAhRVrRgDaAcYu9KuRFfuMpgTJ+QwHwYDVR0jBBgwFoAU\n"
       "AhRVrRgDaAcYu9KuRFfuMpgTJ+QwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQD\n"
       "AgNJADBGAiEAkVYZvjwgDMmOKgbgIHrMP/f693NmfeihD0+dUUUDoLMCIQCG6kq1\n"
       "0TRd8MS6MPwBOqbM6e0JnMxuY5lNOSm17tLbdw==\n"
       "-----END CERTIFICATE-----\n"))

(defn- native ^ByteBuffer [n]
  (.order (ByteBuffer/allocate n) (ByteOrder/nativeOrder)))

(defn- latin1 ^bytes [x]
  (if (string? x) (.getBytes ^String x StandardCharsets/ISO_8859_1) x))

(defn request-bytes
  "The bytes the C module would write for a request described by a map, all
  keys optional: :method :path :query (nil: no '?' in the target) :protocol
  :https? :port :server-name :remote-addr :cert (PEM string)
  :headers [[name value] ...] and :body [segment ...], a segment being a
  String or byte[] held in memory, or {:file path :offset n :length n}."
  ^bytes
  [{:keys [method path query protocol https? port server-name remote-addr cert headers body]
    :or {method "GET" path "/" protocol "HTTP/1.1" port 80
         server-name "localhost" remote-addr "127.0.0.1" cert ""}}]
  (let [out (ByteArrayOutputStream.)
        put-int (fn [n] (.writeBytes out (.array (.putInt (native 4) (int n)))))
        put-long (fn [n] (.writeBytes out (.array (.putLong (native 8) (long n)))))
        put-str (fn [s] (let [b (latin1 s)] (put-int (alength b)) (.writeBytes out b)))]
    ;; 8: a body segment is in a file, which the runtime opens as it reads this
    (put-int (bit-or (if https? 1 0) (if query 2 0) (if (some map? body) 8 0)))
    (put-int port)
    (put-int 0)                             ; status so far (log handlers)
    (put-long 0)                            ; bytes sent so far
    (run! put-str [method path (or query "") protocol server-name remote-addr cert])
    (put-int (count headers))
    (doseq [[n v] headers]
      (put-str n)
      (put-str v))
    (put-int (count body))
    (doseq [segment body]
      (if (map? segment)
        (let [{:keys [file offset length]} segment]
          (put-int 1)
          (put-str (.getBytes ^String file StandardCharsets/UTF_8))
          (put-long offset)
          (put-long length))
        (do (put-int 0)
            (put-str segment))))
    (.toByteArray out)))

(defn request
  "A nginx.jvm.Request for a map as request-bytes takes (its constructor is
  the runtime's own, reached here as the C module reaches it)."
  ^Request [m]
  (let [c (.getDeclaredConstructor Request (into-array Class [(Class/forName "[B")]))]
    (.setAccessible c true)
    (.newInstance c (object-array [(request-bytes m)]))))

(defn worker
  "Calls the static method named method of nginx.jvm.Worker, the runtime's
  package-private entry points, as the C module does."
  [method & args]
  (let [^Method m (->> (.getDeclaredMethods (Class/forName "nginx.jvm.Worker"))
                       (filter (fn [^Method m] (and (= (name method) (.getName m))
                                                    (= (count args) (.getParameterCount m)))))
                       first)]
    (.setAccessible m true)
    (.invoke m nil (object-array (map (fn [a t] (cond (= t Integer/TYPE) (int a)
                                                      (= t Long/TYPE) (long a)
                                                      :else a))
                                      args (.getParameterTypes m))))))

(def ^:private kinds [:none :inline :file :stream :error :moved])

(defn decode-response
  "The response of n bytes at the start of buf, as a map: :status :kind
  (:none :inline :file :stream :error) :content-length :headers [[name value] ...]
  and :body (bytes of :inline) or :text (path of :file, message of :error)."
  [^ByteBuffer buf n]
  (let [b (doto (.order (.duplicate buf) (ByteOrder/nativeOrder))
            (.position 0)
            (.limit (int n)))
        get-bytes (fn [] (let [a (byte-array (.getInt b))] (.get b a) a))
        get-str (fn [] (String. ^bytes (get-bytes) StandardCharsets/ISO_8859_1))
        status (.getInt b)
        kind (kinds (.getInt b))
        content-length (.getLong b)
        headers (vec (repeatedly (.getInt b) (fn [] [(get-str) (get-str)])))
        rest (case kind
               :inline {:body (get-bytes)}
               (:file :error) {:text (String. ^bytes (get-bytes) StandardCharsets/UTF_8)}
               :stream {:stream (.getInt b)}
               {})]
    (when (not= n (.position b))
      (throw (IllegalStateException. (str "decoded " (.position b) " of " n " bytes"))))
    (merge {:status status :kind kind :content-length content-length :headers headers} rest)))
