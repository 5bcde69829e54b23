(ns nginx.jvm.testing
  "A clojure.test fixture that serves the handler under test from a real
  nginx-jvm: the launcher (nginx-jvm run) on a free loopback port, with the
  test's class path, stopped after the tests.

      (use-fixtures :once (testing/with-server {:handler 'app.core/handler
                                                :args [\"--shared-dict\" \"hits:1m\"]}))

      (deftest home
        (is (= 200 (:status (testing/GET \"/\")))))

  The launcher and the class path are found as nginx.jvm.testing.NginxJvm
  says: the nginx.jvm.launcher property, NGINX_JVM_LAUNCHER, nginx-jvm on
  the PATH, /usr/bin/nginx-jvm; the test JVM's class path without the
  nginx-jvm-api and nginx-jvm-test jars."
  (:require [clojure.string :as str])
  (:import [java.net URI]
           [java.net.http HttpClient HttpClient$Redirect HttpRequest
            HttpRequest$BodyPublishers HttpResponse HttpResponse$BodyHandlers]
           [java.time Duration]
           [nginx.jvm.testing NginxJvm]))

(def ^:dynamic *server*
  "The nginx.jvm.testing.NginxJvm with-server started, within its tests."
  nil)

(defn start
  "Starts a server and returns it (an NginxJvm: .port, .uri, .log, .close).
  opts: :handler (a symbol or string: app.core/handler, or a Java class),
  :args (more options of nginx-jvm run), :workers (default 1),
  :classpath (default the test JVM's), :launcher."
  ^NginxJvm [{:keys [handler args workers classpath launcher]}]
  (let [b (NginxJvm/builder (str handler))]
    (when (seq args) (.args b (into-array String (map str args))))
    (when workers (.workers b (int workers)))
    (when classpath (.classpath b (str classpath)))
    (when launcher (.launcher b (str launcher)))
    (.start b)))

(defn with-server
  "A fixture (use-fixtures :once or :each) serving opts' handler (see start)
  while the tests run, bound to *server*; stopped after them."
  [opts]
  (fn [f]
    (let [server (start opts)]
      (try
        (binding [*server* server]
          (f))
        (finally
          (.close server))))))

(defn url
  "http://127.0.0.1:PORT/path of *server* (or of the server given)."
  ([path] (url *server* path))
  ([^NginxJvm server path] (str (.uri server (str path)))))

(def ^:private client
  (delay (-> (HttpClient/newBuilder)
             (.followRedirects HttpClient$Redirect/NEVER)
             (.connectTimeout (Duration/ofSeconds 10))
             (.build))))

(defn request
  "Sends a request to *server* with java.net.http and returns
  {:status :headers :body}: :headers lower-case names to a string (values
  joined with \",\"; all of them under :header-lists), :body a string.
  opts: :method (default :get), :headers (a map), :body (a string)."
  [path & {:keys [method headers body] :or {method :get}}]
  (let [b (-> (HttpRequest/newBuilder (URI. (url path)))
              (.timeout (Duration/ofSeconds 60))
              (.method (str/upper-case (name method))
                       (if body
                         (HttpRequest$BodyPublishers/ofString (str body))
                         (HttpRequest$BodyPublishers/noBody))))]
    (doseq [[k v] headers]
      (.header b (name k) (str v)))
    (let [^HttpResponse r (.send ^HttpClient @client (.build b)
                                 (HttpResponse$BodyHandlers/ofString))
          lists (into {} (map (fn [[k v]] [(str/lower-case k) (vec v)]))
                      (.map (.headers r)))]
      {:status (.statusCode r)
       :headers (into {} (map (fn [[k v]] [k (str/join "," v)])) lists)
       :header-lists lists
       :body (.body r)})))

(defn GET
  "request with :method :get."
  [path & opts]
  (apply request path opts))
