(ns testapp.mw
  "A Compojure app with the usual Ring middleware."
  (:require [compojure.core :refer [defroutes GET POST]]
            [compojure.route :as route]
            [ring.middleware.cookies :refer [wrap-cookies]]
            [ring.middleware.keyword-params :refer [wrap-keyword-params]]
            [ring.middleware.params :refer [wrap-params]]))

(defroutes routes
  (GET "/mw/hello/:who" [who] (str "hello " who))
  (GET "/mw/params" {params :params} (pr-str params))
  (POST "/mw/form" {params :params form-params :form-params}
    (pr-str {:params params :form-params form-params}))
  (GET "/mw/cookies" {cookies :cookies}
    {:status 200
     :headers {"Content-Type" "application/edn"}
     :cookies {"visited" {:value "yes" :path "/"}
               "count" {:value "2" :max-age 60}}
     :body (pr-str cookies)})
  (route/not-found "no such route"))

(def app
  (-> routes wrap-keyword-params wrap-params wrap-cookies))
