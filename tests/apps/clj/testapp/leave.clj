(ns testapp.leave
  "jvm_exit handlers and a shutdown hook, each appending a line to the file
  named by the system property testapp.leave: what ran, in which worker.")

(defn- note [what]
  (spit (System/getProperty "testapp.leave")
        (str what " " (.pid (java.lang.ProcessHandle/current)) "\n")
        :append true))

(defn add-hook
  "jvm_init: a shutdown hook, as applications add them to close pools."
  []
  (.addShutdownHook (Runtime/getRuntime) (Thread. #(note "hook"))))

(defn leave [] (note "exit"))

(defn throwing-leave []
  (note "exit")
  (throw (IllegalStateException. "exit-boom-marker")))

(defn hanging-leave []
  (note "exit")
  (Thread/sleep 600000))

(defn pid [_]
  {:status 200 :body (str (.pid (java.lang.ProcessHandle/current)))})
