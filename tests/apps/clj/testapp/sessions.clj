(ns testapp.sessions
  "A Ring app with wrap-session over nginx.jvm.session's two stores: the
  shared dictionary \"sessions\" and the Redis named by the environment
  variable NGINX_JVM_TEST_REDIS (nginx.conf's `env`). Query ?op=get|set|
  incr|big|object|deep|delete; answers the session as EDN, with the worker's pid."
  (:require [clojure.string :as str]
            [nginx.jvm.session :as session]
            [ring.middleware.session :refer [wrap-session]]))

(def ^:private pid (str (.pid (java.lang.ProcessHandle/current))))

(defn- params [req]
  (into {} (for [kv (str/split (or (:query-string req) "") #"&")
                 :let [[k v] (str/split kv #"=" 2)]
                 :when (seq k)]
             [k (java.net.URLDecoder/decode (or v "") "UTF-8")])))

(defn- counter [req]
  (let [p (params req)
        s (:session req)
        answer (fn [body] {:status 200
                           :headers {"Content-Type" "application/edn" "X-Pid" pid}
                           :body (pr-str body)})]
    (case (get p "op" "get")
      "get" (answer s)
      "set" (assoc (answer :ok) :session (assoc s :v (get p "v")))
      "incr" (let [s2 (update s :n (fnil inc 0))] (assoc (answer s2) :session s2))
      "big" (assoc (answer :ok) :session
                   (assoc s :big (apply str (repeat (Long/parseLong (get p "n")) "x"))))
      "object" (assoc (answer :ok) :session (assoc s :o (Object.)))
      "deep" (assoc (answer :ok) :session
                    (assoc s :deep (nth (iterate vector "x") (Long/parseLong (get p "n")))))
      "delete" (assoc (answer :deleted) :session nil)
      {:status 400 :body "op?"})))

(def ^:private redis-uri (System/getenv "NGINX_JVM_TEST_REDIS"))

(def dict-app
  (wrap-session counter {:store (session/shared-store "sessions" {:max-bytes 8192})
                         :cookie-name "dsid"}))

(def dict-short-app
  (wrap-session counter {:store (session/shared-store "sessions" {:ttl-ms 1500
                                                                  :prefix "short:"})
                         :cookie-name "dsid"}))

(defn- redis-app* [opts]
  (delay (-> counter
             (wrap-session {:store (session/redis-store redis-uri opts)
                            :cookie-name "rsid"})
             session/wrap-unavailable)))

(def ^:private redis-main (redis-app* {:prefix "test:session:"}))
(def ^:private redis-short (redis-app* {:prefix "test:short:" :ttl-ms 1500}))

(defn redis-app [req] (@redis-main req))
(defn redis-short-app [req] (@redis-short req))

(defn forge-deep
  "Writes, as another program could, a value nested ?n deep (vectors)
  under the dictionary store's key of ?key, past the store's checks."
  [req]
  (let [p (params req)
        n (Long/parseLong (get p "n"))]
    (.put (nginx.jvm.SharedDict/named "sessions") (str "session:" (get p "key"))
          (str "{:a " (apply str (repeat n "[")) (apply str (repeat n "]")) "}"))
    {:status 200 :headers {"Content-Type" "text/plain"} :body "forged\n"}))
