(ns testapp.repl
  "A handler to redefine from a worker's socket REPL (tests/test_repl.py).")

(defn handler [_req]
  {:status 200 :headers {"Content-Type" "text/plain"} :body "v1"})
