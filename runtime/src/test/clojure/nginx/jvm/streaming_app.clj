(ns nginx.jvm.streaming-app
  "Test support, not tests: a handler namespace as an application writes it,
  with a body type of its own made streamable by extend-protocol. Loaded only
  by Worker/register (see ring-worker-test), as nginx loads a handler."
  (:require [ring.core.protocols :as protocols]))

(deftype Lines [lines])

(extend-protocol protocols/StreamableResponseBody
  Lines
  (write-body-to-stream [body _ ^java.io.OutputStream out]
    (with-open [out out]
      (doseq [line (.-lines ^Lines body)]
        (.write out (.getBytes (str line "\n") "UTF-8"))
        (.flush out)))))

(defn handler [_]
  {:status 200
   :headers {"Content-Type" "text/plain"}
   :body (Lines. ["one" "two" "three"])})
