(ns nginx.jvm.test-runner
  "Runs every nginx.jvm.*-test namespace found in the class path's
  directories; exits 0 when all pass, 1 otherwise."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :as test])
  (:import (java.io File)))

(defn- test-namespaces
  "Namespaces whose files end in _test.clj under nginx/jvm/ in a class path
  directory (jars are skipped: tests live in source directories)."
  []
  (->> (str/split (System/getProperty "java.class.path") (re-pattern File/pathSeparator))
       (map #(io/file % "nginx" "jvm"))
       (filter #(.isDirectory ^File %))
       (mapcat (fn [^File root]
                 (for [^File f (file-seq root)
                       :when (str/ends-with? (.getName f) "_test.clj")]
                   (-> (.relativize (.toPath (.getParentFile root)) (.toPath f))
                       str
                       (str/replace #"\.clj$" "")
                       (str/replace File/separator ".")
                       (str/replace "_" "-")
                       (->> (str "nginx."))
                       symbol))))
       distinct
       sort))

(defn -main [& _]
  (let [namespaces (test-namespaces)]
    (when (empty? namespaces)
      (println "no nginx.jvm.*-test namespaces on the class path")
      (System/exit 1))
    (apply require namespaces)
    (let [summary (apply test/run-tests namespaces)]
      (println (str (:pass summary) " passed, " (+ (:fail summary) (:error summary)) " failed"))
      (shutdown-agents)
      (System/exit (if (test/successful? summary) 0 1)))))
