(ns testapp.init
  "jvm_init functions and a handler that shows what they did.")

(defonce state (atom {:initialized false :runs 0}))

(defn init
  "Marks the state initialized; writes the file named by the system
  property testapp.marker, when set, to show that it ran."
  []
  (swap! state #(-> % (assoc :initialized true) (update :runs inc)))
  (when-let [marker (System/getProperty "testapp.marker")]
    (spit marker (str "init ran in " (.pid (java.lang.ProcessHandle/current)) "\n")
          :append true)))

(defn throwing-init []
  (throw (IllegalStateException. "init-boom-marker")))

(defn handler [_]
  {:status 200 :headers {"Content-Type" "application/edn"} :body (pr-str @state)})

(defn slow-start
  "A jvm_init that takes as long as an application's start: the number of
  milliseconds in the file named by the system property testapp.start-ms,
  when it exists; \"hold\" there holds it until the file says otherwise
  (a test that waits for a state of the start, not a time)."
  []
  (when-let [f (System/getProperty "testapp.start-ms")]
    (let [file (java.io.File. ^String f)
          said #(.trim ^String (slurp file))]
      (when (.exists file)
        (loop [s (said)]
          (if (= s "hold")
            (do (Thread/sleep 20) (recur (said)))
            (Thread/sleep (Long/parseLong s))))))))
