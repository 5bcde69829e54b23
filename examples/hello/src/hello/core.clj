(ns hello.core
  "The example Ring app: Compojure routes and Ring middleware, served from
  inside nginx by nginx-jvm.  `make run` serves it on 127.0.0.1:8080."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [compojure.core :refer [GET POST defroutes]]
            [compojure.route :as route]
            [ring.middleware.cookies :refer [wrap-cookies]]
            [ring.middleware.keyword-params :refer [wrap-keyword-params]]
            [ring.middleware.params :refer [wrap-params]]))

(def root
  "The example's directory (examples/hello): the system property hello.root
  when set (-Dhello.root=...), else the directory this file was loaded from
  when that is a directory, else examples/hello under the current directory
  (where the launcher was started). With a class cache (jvm_cache, the
  launcher's default) the source comes from the cache's copy in a jar, so
  the last one is the case there."
  (or (System/getProperty "hello.root")
      (let [src (io/resource "hello/core.clj")]
        (when (= "file" (some-> src .getProtocol))
          (-> (io/file src) .getParentFile .getParentFile .getParent)))
      "examples/hello"))

(def index-file
  "A 29,686-byte HTML page, sent by nginx itself (sendfile, Range, ETag)."
  (io/file root "public/index.html"))

(defn- escape-html [s]
  (str/escape (str s) {\< "&lt;" \> "&gt;" \& "&amp;" \" "&quot;" \' "&#39;"}))

(defn- text [body]
  {:status 200
   :headers {"Content-Type" "text/plain; charset=utf-8"}
   :body body})

(defn- home-page []
  {:status 200
   :headers {"Content-Type" "text/html; charset=utf-8"}
   :body (str "<!doctype html>\n<html><head><title>nginx-jvm</title></head><body>\n"
              "<h1>Clojure inside nginx</h1>\n<ul>\n"
              (str/join
               (for [[href what] [["/hello" "plain text"]
                                  ["/hello/nginx" "a path parameter"]
                                  ["/file" "a java.io.File body, sent by nginx"]
                                  ["/stream" "a lazy seq body, streamed"]
                                  ["/cookie/set?value=chocolate" "set a cookie"]
                                  ["/cookie" "read it back"]]]
                 (str "<li><a href=\"" href "\">" (escape-html href) "</a>: "
                      what "</li>\n")))
              "</ul>\n"
              "<form method=\"post\" action=\"/form\">\n"
              "<label>Name <input name=\"name\"></label>\n"
              "<label>Message <input name=\"message\"></label>\n"
              "<button>Send</button>\n</form>\n</body></html>\n")})

(defn- echo-form
  "The posted form fields, one per line; by name, so the answer is stable."
  [request]
  (text (str/join (for [[k v] (sort-by key (:form-params request))]
                    (str k " = " (if (string? v) v (str/join ", " v)) "\n")))))

(defroutes routes
  (GET "/" [] (home-page))
  (GET "/hello" [] (text "Hello, Clojure!"))
  (GET "/hello/:name" [name] (text (str "Hello, " name "!")))
  (GET "/file" []
    {:status 200
     :headers {"Content-Type" "text/html; charset=utf-8"}
     :body index-file})
  (POST "/form" request (echo-form request))
  ;; Each element is sent (and flushed) as nginx asks for it; the seq is
  ;; realized on the worker's event loop, so it must not block.
  (GET "/stream" []
    (text (map #(str "line " % " of 100\n") (range 1 101))))
  (GET "/cookie/set" [value]
    (assoc (text (str "cookie hello = " value "\n"))
           :cookies {"hello" {:value (or value "") :path "/" :http-only true}}))
  (GET "/cookie" request
    (text (if-let [c (get-in request [:cookies "hello" :value])]
            (str "cookie hello = " c "\n")
            "no cookie hello; visit /cookie/set?value=something\n")))
  (route/not-found (text "not found\n")))

(def app
  "The handler nginx.conf names: jvm_content hello.core/app;"
  (-> routes
      wrap-keyword-params
      wrap-params
      wrap-cookies))
