(ns nginx.jvm.dev
  "nginx-jvm dev: reloads the namespaces of changed source files, and the
  loaded namespaces that depend on them, in dependency order. Called by
  nginx.jvm.Dev in each worker, before its next request."
  (:require [clojure.java.io :as io]
            [clojure.set]))

(defn- ns-decl
  "The file's (ns ...) form, when it begins with one; nil otherwise."
  [file]
  (try
    (with-open [r (java.io.PushbackReader. (io/reader file))]
      (binding [*read-eval* false]
        (let [form (read {:eof nil :read-cond :allow} r)]
          (when (and (seq? form) (= 'ns (first form)) (symbol? (second form)))
            form))))
    (catch Exception _ nil)))

(defn- lib-names
  "The namespaces a :require or :use spec names: a symbol, [lib & options],
  or a prefix list (prefix lib [lib :as x] ...)."
  [spec]
  (cond
    (symbol? spec) [spec]
    (and (sequential? spec) (symbol? (first spec)))
    (let [[head & more] spec]
      (if (or (empty? more) (keyword? (first more)))
        [head]
        (for [s more, n (lib-names s)]
          (symbol (str head "." n)))))
    :else []))

(defn- deps
  "The namespaces an ns form requires or uses."
  [decl]
  (set (for [clause (drop 2 decl)
             :when (and (seq? clause) (#{:require :use} (first clause)))
             spec (rest clause)
             n (lib-names spec)]
         n)))

(defn- sources [roots]
  (for [root roots
        ^java.io.File f (file-seq (io/file root))
        :when (and (.isFile f)
                   (let [n (.getName f)]
                     (or (.endsWith n ".clj") (.endsWith n ".cljc"))))]
    f))

(defn- loaded? [n]
  (contains? (loaded-libs) n))

(defn- order
  "The namespaces of todo, each after those of them it depends on."
  [graph todo]
  (loop [done [] left (set todo)]
    (if (empty? left)
      done
      (let [ready (filter #(empty? (clojure.set/intersection
                                    (get graph % #{}) (disj left %)))
                          (sort left))
            ;; a cycle: take them in name order
            ready (if (seq ready) ready [(first (sort left))])]
        (recur (into done ready) (reduce disj left ready))))))

(defn reload
  "Reloads the namespaces of the changed files (paths) under roots that are
  loaded, and the loaded namespaces of roots that depend on them. Answers
  [reloaded failed-namespace throwable]."
  [roots changed]
  (let [decls (keep (fn [f] (when-let [d (ns-decl f)]
                              [(.getCanonicalPath ^java.io.File f) d]))
                    (sources roots))
        by-file (into {} (map (fn [[f d]] [f (second d)]) decls))
        graph (into {} (map (fn [[_ d]] [(second d) (deps d)]) decls))
        changed-ns (set (keep #(by-file (.getCanonicalPath (io/file %))) changed))
        dependents (fn [targets]
                     (set (for [[n ds] graph
                                :when (seq (clojure.set/intersection ds targets))]
                            n)))
        affected (loop [acc changed-ns]
                   (let [more (clojure.set/union acc (dependents acc))]
                     (if (= more acc) acc (recur more))))
        todo (order graph (filter loaded? affected))]
    (loop [[n & more :as left] todo done []]
      (if (empty? left)
        [done nil nil]
        (let [error (try (require n :reload) nil (catch Throwable t t))]
          (if error
            [done n error]
            (recur more (conj done n))))))))
