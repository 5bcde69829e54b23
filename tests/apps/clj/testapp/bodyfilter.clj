(ns testapp.bodyfilter
  "Ring body filters of tests/test_body_filter.py: (f request chunk last?).")

(defn upper
  "Each chunk upper-cased, answered as a String."
  [_ chunk _]
  (.toUpperCase (String. ^bytes chunk "ISO-8859-1")))

(defn tail
  "The chunks as they are (nil), then the request's URI after the last."
  [req ^bytes chunk last?]
  (when last?
    (str (String. chunk "ISO-8859-1") "[clj " (:uri req) "]")))

(defn- counter
  "A filter of its own for one response: its chunks as they are, then
  their count and size after the last."
  []
  (let [n (atom 0) size (atom 0)]
    (reify nginx.jvm.BodyFilter
      (filter [_ _ chunk last?]
        (swap! n inc)
        (swap! size + (.remaining ^java.nio.ByteBuffer chunk))
        (when last?
          (let [b (byte-array (.remaining ^java.nio.ByteBuffer chunk))]
            (.get ^java.nio.ByteBuffer chunk b)
            (.getBytes (str (String. b "ISO-8859-1") "[clj " @n " " @size "]")
                       "ISO-8859-1")))))))

(def counted
  "jvm_body_filter testapp.bodyfilter/counted: a BodyFilter whose start
  answers a counter per response."
  (reify nginx.jvm.BodyFilter
    (start [_ _] (counter))
    (filter [_ _ _ _] (throw (IllegalStateException. "not started")))))

(defn wrong
  "Answers something that is not a body."
  [_ _ _]
  {:not "bytes"})
