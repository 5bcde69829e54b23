(ns testapp.fuzz
  "The request as the handler sees it, every byte shown: for the generated
  requests of test_fuzz.py."
  (:import (java.security MessageDigest)))

(defn- hex
  "The ISO-8859-1 bytes of s (one byte a char, as the runtime decodes), in hex."
  [^String s]
  (apply str (map #(format "%02x" (bit-and % 0xff)) (.getBytes s "ISO-8859-1"))))

(defn echo [request]
  (let [body (.readAllBytes ^java.io.InputStream (:body request))
        digest (.digest (MessageDigest/getInstance "SHA-256") body)]
    {:status 200
     :headers {"Content-Type" "text/plain"}
     :body (apply str
                  "method " (hex (name (:request-method request))) "\n"
                  "uri " (hex (:uri request)) "\n"
                  "query " (hex (or (:query-string request) "")) "\n"
                  "body " (alength body) " "
                  (apply str (map #(format "%02x" (bit-and % 0xff)) digest)) "\n"
                  (for [[k v] (sort (:headers request))]
                    (str "header " (hex k) " " (hex v) "\n")))}))
