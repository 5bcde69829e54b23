(ns nginx.jvm.timers
  "Timers in the worker, over nginx.jvm.Timers:

      (require '[nginx.jvm.timers :as timers])
      (def t (timers/every 1000 #(refresh!)))            ; on the event loop
      (timers/after 5000 #(cleanup!) {:on :thread})      ; on a timer thread
      (timers/every 60000 #(reload-from-db!) {:on :coloop}) ; may block, parking
      (timers/cancel! t)

  A function on the event loop (the default, :on :loop) must not block; one
  that may block runs on a timer thread (:on :thread), or, in a worker with
  a jvm_mode coloop location, on a virtual thread the loop carries
  (:on :coloop: it parks where it blocks, the loop serves others). An exception is
  logged; an interval timer goes on, a one-shot timer is over. Each worker
  runs its own timers, and they stop when the worker exits, so a graceful
  quit or a reload never waits for them."
  (:import [nginx.jvm Timers Timers$Timer Timers$Where]))

(defn- where ^Timers$Where [opts]
  (case (:on opts :loop)
    :loop Timers$Where/LOOP
    :thread Timers$Where/THREAD
    :coloop Timers$Where/COLOOP
    (throw (IllegalArgumentException.
            (str "a timer runs :on :loop, :thread or :coloop, not " (pr-str (:on opts)))))))

(defn after
  "Calls (f) once after ms milliseconds; opts {:on :loop|:thread|:coloop}. Returns
  the timer, for cancel!."
  (^Timers$Timer [ms f] (after ms f nil))
  (^Timers$Timer [ms f opts] (Timers/after (long ms) (where opts) ^Runnable f)))

(defn every
  "Calls (f) every ms milliseconds, the first time after ms; opts
  {:on :loop|:thread|:coloop}. Returns the timer, for cancel!."
  (^Timers$Timer [ms f] (every ms f nil))
  (^Timers$Timer [ms f opts] (Timers/every (long ms) (where opts) ^Runnable f)))

(defn cancel!
  "Stops a timer; false when it was over already."
  [^Timers$Timer t]
  (.cancel t))

(defn done?
  "Cancelled, or a one-shot timer that has run."
  [^Timers$Timer t]
  (.isDone t))
