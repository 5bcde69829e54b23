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

(defn wrong
  "Answers something that is not a body."
  [_ _ _]
  {:not "bytes"})
