(ns app.core
  "A Ring handler: a greeting, a counter every nginx worker shares
  (jvm_shared_dict app), and a visit count kept in a session
  (jvm_shared_dict sessions)."
  (:require [nginx.jvm.session :as session]
            [nginx.jvm.shared :as shared]
            [ring.middleware.session :refer [wrap-session]]))

(defn- text [status body]
  {:status status
   :headers {"Content-Type" "text/plain; charset=utf-8"}
   :body body})

(defn- routes [req]
  (case (:uri req)
    "/" (text 200 (str "Hello from a deps.edn project, on Clojure "
                       (clojure-version) "\n"))
    "/hits" (text 200 (str (shared/incr! (shared/dict "app") "hits") "\n"))
    "/visits" (let [n (inc (get-in req [:session :visits] 0))]
                (assoc (text 200 (str n "\n")) :session {:visits n}))
    (text 404 "not found\n")))

(def handler
  (wrap-session routes {:store (session/shared-store "sessions")}))
