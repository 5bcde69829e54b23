(ns build
  "target/app-standalone.jar: the sources and every dependency of the
  default basis (not :provided: the worker supplies nginx-jvm's API), no
  AOT (the handler's namespace compiles as it loads).
  clojure -T:build uber, or bin/uberjar."
  (:require [clojure.tools.build.api :as b]))

(def class-dir "target/classes")
(def uber-file "target/app-standalone.jar")

(defn- basis []
  ;; M2_REPO: the Maven repository bin/* were told to use
  (b/create-basis {:project "deps.edn"
                   :extra (when-let [r (System/getenv "M2_REPO")]
                            {:mvn/local-repo r})}))

(defn clean [_]
  (b/delete {:path "target"}))

(defn uber [_]
  (clean nil)
  (b/copy-dir {:src-dirs ["src"] :target-dir class-dir})
  (b/uber {:class-dir class-dir :uber-file uber-file :basis (basis)})
  (println "Created" uber-file))
