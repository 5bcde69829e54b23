(ns testapp.life
  "The handler of the request's-life tests (tests/test_life.py): it reads
  its body (after ?sleep= ms), and answers the request's own token with a
  digest of the body it read, then ?lines= lines that each carry the token
  again, streamed as a lazy seq. A response holding anything but its own
  token and body digest is another request's data."
  (:import [java.security MessageDigest]))

(defn- param [req name]
  (some->> (:query-string req)
           (re-find (re-pattern (str "(?:^|&)" name "=(\\d+)")))
           second Long/parseLong))

(defn- hex [^bytes b]
  (apply str (map #(format "%02x" (bit-and % 0xff)) b)))

(defn- digest
  "The SHA-256 and the length of everything the stream gives."
  [in]
  (if (nil? in)
    [(hex (.digest (MessageDigest/getInstance "SHA-256"))) 0]
    (with-open [^java.io.InputStream in in]
      (let [md (MessageDigest/getInstance "SHA-256")
            buf (byte-array 8192)]
        (loop [n 0]
          (let [k (.read in buf)]
            (if (neg? k)
              [(hex (.digest md)) n]
              (do (.update md buf 0 k) (recur (+ n k))))))))))

(def foreign
  "Bodies read whole that were not the ones their clients sent (the client
  sends the digest in X-Sha256): another request's data."
  (atom 0))

(def ended
  "Body reads that failed because the request had ended."
  (atom 0))

(defn handler [req]
  (when-let [ms (param req "sleep")]
    (Thread/sleep ms))
  (let [token (get-in req [:headers "x-token"] "")
        [sha n] (try (digest (:body req))
                     (catch java.io.IOException _ (swap! ended inc) nil))
        lines (or (param req "lines") 0)
        head (str "token=" token "\nsha=" sha "\nlen=" n "\n")]
    (when (and sha (not= sha (get-in req [:headers "x-sha256"] sha)))
      (swap! foreign inc))
    (if-not sha
      {:status 500 :body "the request ended"}
      {:status 200
       :headers {"Content-Type" "text/plain"}
       :body (if (pos? lines)
               (cons head (map (fn [i] (str token " " i "\n")) (range lines)))
               head)})))

(defn stats
  "foreign and ended, and testapp.Life's, as text."
  [_]
  {:status 200
   :body (str "foreign=" (+ @foreign (testapp.Life/foreign))
              " ended=" (+ @ended (testapp.Life/ended)))})
