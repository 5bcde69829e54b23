(ns nginx.jvm.dev-test
  "nginx.jvm.dev's reading of ns forms and its reload order, on files of a
  temporary directory (the reload itself is tests/test_dev.py's, through
  real workers)."
  (:require [clojure.java.io :as io]
            [clojure.test :refer [deftest is]]
            [nginx.jvm.dev :as dev]))

(deftest the-namespaces-an-ns-form-requires
  (is (= '#{a.b c.d c.e f.g h}
         (#'dev/deps '(ns x.y
                        "doc"
                        (:require a.b
                                  [c d [e :as e]]
                                  [f.g :as g :refer [z]])
                        (:use h)
                        (:import (java.io File)))))))

(defn- tree [files]
  (let [root (.toFile (java.nio.file.Files/createTempDirectory
                       "nginx-jvm-dev-test" (make-array java.nio.file.attribute.FileAttribute 0)))]
    (doseq [[path text] files]
      (let [f (io/file root path)]
        (io/make-parents f)
        (spit f text)))
    root))

(deftest a-change-reloads-its-dependents-after-it
  ;; devt.a <- devt.b <- devt.c; devt.d apart; only loaded ones reload
  (let [root (tree {"devt/a.clj" "(ns devt.a)\n(def v 1)\n"
                    "devt/b.clj" "(ns devt.b (:require [devt.a :as a]))\n(def v (inc a/v))\n"
                    "devt/c.clj" "(ns devt.c (:require devt.b))\n(def v (inc devt.b/v))\n"
                    "devt/d.clj" "(ns devt.d)\n"
                    "devt/e.clj" "(ns devt.e (:require devt.a))\n"})]
    (try
      (let [loader (clojure.lang.DynamicClassLoader.
                    (java.net.URLClassLoader. (into-array [(.toURL (.toURI root))])
                                              (.getContextClassLoader (Thread/currentThread))))]
        (with-bindings {clojure.lang.Compiler/LOADER loader}
          (require 'devt.c 'devt.d)
          (is (= 3 @(resolve 'devt.c/v)))
          (spit (io/file root "devt/a.clj") "(ns devt.a)\n(def v 10)\n")
          (let [[done failed error] (dev/reload [(str root)] [(str (io/file root "devt/a.clj"))])]
            (is (= '[devt.a devt.b devt.c] done))
            (is (nil? failed))
            (is (nil? error))
            (is (= 12 @(resolve 'devt.c/v))))
          (spit (io/file root "devt/b.clj") "(ns devt.b)\n(def v (inc\n")
          (let [[done failed error] (dev/reload [(str root)] [(str (io/file root "devt/b.clj"))])]
            (is (= [] done))
            (is (= 'devt.b failed))
            (is (instance? Throwable error)))))
      (finally
        (doseq [f (reverse (file-seq root))]
          (.delete ^java.io.File f))))))
