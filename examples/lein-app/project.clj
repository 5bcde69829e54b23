;; A Ring application built with Leiningen and served by nginx-jvm:
;;
;;   lein test                   its tests, against a real nginx-jvm
;;   lein uberjar
;;   nginx-jvm run --jar target/app-standalone.jar --handler app.core/handler \
;;       --shared-dict app:1m --shared-dict sessions:1m
;;
;; docs/projects.md walks through it.
(defproject nginx-jvm-example/lein-app "0.1.0"
  :description "A Ring handler with a shared counter and sessions, for nginx-jvm"
  ;; Ring and friends from Debian's Maven repository (apt-get install
  ;; libring-core-clojure), everything else from Maven Central; Clojars is
  ;; not needed.
  :repositories ^:replace [["debian" {:url "file:///usr/share/maven-repo"
                                      :checksum :ignore :snapshots false}]
                           ["central" {:url "https://repo1.maven.org/maven2/"
                                       :snapshots false}]]
  :dependencies [[org.clojure/clojure "1.12.0"]
                 [ring/ring-core "1.8.2"]]
  :profiles {;; the worker supplies nginx-jvm's API at run time: compiled
             ;; against, never bundled into the uberjar
             :provided {:dependencies [[org.nginx-jvm/nginx-jvm-api "0.1.0"]]}
             ;; nginx.jvm.testing/with-server, for lein test
             :dev {:dependencies [[org.nginx-jvm/nginx-jvm-test "0.1.0"]]}}
  :uberjar-name "app-standalone.jar")
