(ns testapp.upload
  "Ring handlers that read :body as it arrives (test_upload_stream.py,
  jvm_request_buffering off); testapp.Upload hashes and records under ?tag=."
  (:import [testapp Upload]))

(defn- param [req name]
  (some->> (:query-string req)
           (re-find (re-pattern (str "(?:^|&)" name "=([^&]*)")))
           second))

(defn hash-body
  "Answers \"LENGTH HEX\", the SHA-256 of :body; ?early=1 answers after the
  first read instead."
  [req]
  (let [tag (param req "tag")
        ^java.io.InputStream body (:body req)]
    (Upload/record tag "started")
    (if (param req "early")
      (let [n (.read body (byte-array 65536))]
        (Upload/record tag (str "first " n))
        {:status 200 :headers {"Content-Type" "text/plain"} :body (str "early " n)})
      {:status 200
       :headers {"Content-Type" "text/plain"}
       :body (Upload/hash body tag 0)})))
