(ns testapp.tracing
  "The Ring handler of tests/test_tracing.py: a span made through the
  OpenTelemetry API joins the request's trace; the ids it saw are answered."
  (:import (io.opentelemetry.api GlobalOpenTelemetry)
           (io.opentelemetry.api.trace Span)))

(defn handler [req]
  (let [current (.getSpanId (.getSpanContext (Span/current)))
        child (-> (GlobalOpenTelemetry/getTracer "testapp-clj")
                  (.spanBuilder "clj-child")
                  (.startSpan))]
    (.end child)
    {:status 200
     :headers {"content-type" "text/plain"}
     :body (str "trace=" (:nginx.jvm/trace-id req) " span=" (:nginx.jvm/span-id req)
                " current=" current " child=" (.getSpanId (.getSpanContext child)))}))
