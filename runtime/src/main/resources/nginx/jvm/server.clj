(ns nginx.jvm.server
  "Serving a Ring handler through nginx from a REPL, as http-kit's
  run-server or ring.adapter.jetty's run-jetty would, but the handler runs
  in the nginx workers' own JVMs, started on this JVM's class path:

    (require '[nginx.jvm.server :as server])
    (def stop (server/run-server #'my.app/handler {:port 8080 :repl 7000}))
    ;; edit src/my/app.clj, then:
    (server/reload stop 'my.app)
    (stop)

  The workers load the handler by its var's name from the class path:
  code evaluated only in this REPL is not there (see docs/operations.md).
  The nginx.conf is the launcher's (bin/nginx-jvm config), found beside
  nginx-jvm.jar or on the PATH."
  (:require [clojure.java.io :as io]
            [clojure.string :as str])
  (:import (java.io File)
           (java.net InetSocketAddress Socket)
           (java.nio.charset StandardCharsets)
           (java.nio.file Files LinkOption)
           (java.nio.file.attribute FileAttribute)
           (java.util.concurrent TimeUnit)))

(defn- var-name
  "\"my.app/handler\" for #'my.app/handler; a fn has no name the workers
  could load."
  [handler]
  (when-not (var? handler)
    (throw (IllegalArgumentException.
            (str "run-server takes a handler var, such as #'my.app/handler: "
                 "the nginx workers load it by name in their own JVMs"))))
  (str (ns-name (.ns ^clojure.lang.Var handler)) "/" (.sym ^clojure.lang.Var handler)))

(defn- class-path
  "This JVM's class path, each entry absolute (nginx runs in its own prefix)."
  []
  (->> (str/split (System/getProperty "java.class.path") (re-pattern File/pathSeparator))
       (remove str/blank?)
       (map #(.getAbsolutePath (io/file %)))
       distinct))

(defn- runtime-jar
  "The nginx-jvm.jar this namespace was loaded from, or nil."
  ^File []
  (let [u (str (io/resource "nginx/jvm/server.clj"))]
    (when (and (str/starts-with? u "jar:file:") (str/includes? u "!/"))
      (io/file (java.net.URI. (subs u 4 (str/index-of u "!/")))))))

(defn- launchers
  "Where the launcher may be, in order: the :launcher option alone if given;
  else beside the nginx-jvm.jar this namespace comes from (a checkout's
  build/nginx-jvm.jar: bin/nginx-jvm; the Debian package's
  /usr/share/nginx-jvm/nginx-jvm.jar: /usr/bin/nginx-jvm), then nginx-jvm
  on the PATH."
  [opts]
  (if-let [l (:launcher opts)]
    [(io/file l)]
    (let [dir (some-> (runtime-jar) .getAbsoluteFile .getParentFile)
          parent (some-> dir .getParentFile)]
      (concat (cond
                (nil? parent) nil
                (= "build" (.getName dir)) [(io/file parent "bin/nginx-jvm")]
                (and (= "nginx-jvm" (.getName dir)) (= "share" (.getName parent))
                     (.getParentFile parent))
                [(io/file (.getParentFile parent) "bin/nginx-jvm")])
              (for [d (str/split (or (System/getenv "PATH") "") #":")
                    :when (seq d)]
                (io/file d "nginx-jvm"))))))

(defn- find-launcher
  "The path of bin/nginx-jvm, whose `config` command writes the nginx.conf
  (the launcher's own, so that run-server serves as fast as it does)."
  [opts]
  (let [candidates (launchers opts)]
    (or (some #(when (and (.isFile ^File %) (.canExecute ^File %)) (.getPath ^File %))
              candidates)
        (throw (ex-info (str "nginx-jvm (the launcher, which writes run-server's "
                             "nginx.conf) not found: give :launcher, or put "
                             "nginx-jvm on the PATH; tried "
                             (str/join ", " candidates))
                        {:tried (mapv str candidates)})))))

(defn- root? []
  (= "root" (System/getProperty "user.name")))

(defn- config-command
  "`nginx-jvm config ...` for handler and opts: run-server's options in the
  launcher's words."
  [handler opts prefix]
  (let [{:keys [port ip workers mode pool-size queue max-body repl jvm-options
                jvm-path error-log error-level module]
         :or {port 8080 ip "127.0.0.1" workers 1}} opts
        cp (or (:classpath opts) (class-path))
        ;; the launcher refuses an entry that does not exist; a JVM skips it
        exists? #(.exists (io/file (str/replace % #"/\*$" "")))
        module (or module (System/getenv "NGINX_JVM_MODULE"))]
    (concat [(find-launcher opts) "config" "--prefix" (str prefix)
             "--handler" (var-name handler)
             "--classpath" (str/join File/pathSeparator (filter exists? cp))
             "--port" (str port) "--listen" (str ip) "--workers" (str workers)
             ;; no class cache: the workers read the very sources reload
             ;; reloads, not a cache's copies of them
             "--cache" "off"]
            ;; as the REPL's user (the launcher's default for root is nobody)
            (when (root?) ["--user" "root"])
            (when mode ["--mode" (name mode)])
            (when pool-size ["--pool-size" (str pool-size)])
            (when queue ["--queue" (str queue)])
            (when max-body ["--max-body-size" (str max-body)])
            (mapcat #(vector "--jvm-option" (str %)) jvm-options)
            (when jvm-path ["--jvm-path" (str jvm-path)])
            (when error-log ["--error-log" (str error-log)])
            (when error-level ["--error-level" (str error-level)])
            (when module ["--module" (str module)])
            (when repl ["--http" (str "jvm_repl " repl ";")]))))

(defn config
  "The nginx.conf run-server writes (a string), for a prefix directory:
  what `nginx-jvm config` prints for these options (see run-server)."
  [handler opts prefix]
  (let [command (vec (config-command handler opts prefix))
        p (.start (ProcessBuilder. ^java.util.List command))
        err (future (slurp (.getErrorStream p)))
        out (slurp (.getInputStream p))
        status (.waitFor p)]
    (when-not (zero? status)
      (throw (ex-info (str "nginx-jvm config failed (status " status "): "
                           (str/trim @err))
                      {:command command})))
    out))

(defn- listening? [ip port]
  (try (with-open [s (Socket.)]
         (.connect s (InetSocketAddress. ^String ip (int port)) 200)
         true)
       (catch java.io.IOException _ false)))

(defn- delete-tree [^File f]
  (when (.isDirectory f)
    (run! delete-tree (.listFiles f)))
  (.delete f))

(defn- tail [file]
  (let [f (io/file file)]
    (when (.isFile f)
      (let [text (slurp f)]
        (subs text (max 0 (- (count text) 4000)))))))

(defn run-server
  "Serves handler, a Ring handler var (#'my.app/handler), through nginx:
  has the launcher write the nginx.conf (`nginx-jvm config`, the same
  config `nginx-jvm run` serves with) into a temporary prefix and starts
  nginx (in the foreground, as a child of this JVM) with this JVM's class
  path as jvm_classpath. Returns when nginx accepts on the port; throws
  ex-info (with the error log's end) if it does not within :start-timeout.

  The launcher is :launcher, else the one beside the nginx-jvm.jar this
  namespace was loaded from (build/nginx-jvm.jar: bin/nginx-jvm of the
  checkout; /usr/share/nginx-jvm/nginx-jvm.jar: /usr/bin/nginx-jvm), else
  nginx-jvm on the PATH; without one run-server throws, saying so. The
  config is the launcher's with --cache off (the workers read the sources
  reload reloads) and, for root, --user root (the workers run as this
  JVM's user).

  Returns a function that stops nginx and removes the prefix: (stop) at
  once, (stop :timeout ms) gracefully (nginx -s quit), as http-kit's does.
  Its metadata holds :port, :repl-ports, :prefix, :config and :process.

  opts (http-kit's names where they mean the same):
    :port         8080
    :ip           \"127.0.0.1\"
    :workers      1 (worker_processes; each has its own JVM)
    :mode         :loop, :pool or :virtual (jvm_mode; default loop)
    :pool-size    jvm_pool_size     :queue  jvm_queue
    :max-body     client_max_body_size, bytes or nginx's 512k, 10m (10m)
    :repl         PORT: jvm_repl, a socket REPL in worker N on PORT+N, for
                  reload and eval-in-workers (default none)
    :jvm-options  a seq of JVM options for the workers
    :jvm-path     the workers' libjvm.so (jvm_path; default the
                  launcher's choice: the JDK of $JAVA_HOME, else the newest
                  JDK 17 or newer installed; :mode :virtual needs a JDK 21
                  or newer)
    :classpath    a seq of entries (default this JVM's java.class.path)
    :error-log    a file (default nginx's stderr, which is this JVM's)
    :error-level  \"notice\"
    :nginx        the nginx binary (\"/usr/sbin/nginx\")
    :module       another ngx_http_jvm_module.so (default $NGINX_JVM_MODULE,
                  else the launcher's own)
    :launcher     the launcher, bin/nginx-jvm (found as said above)
    :start-timeout  ms (60000)"
  ([handler] (run-server handler {}))
  ([handler opts]
   (let [prefix (str (Files/createTempDirectory "nginx-jvm-repl" (make-array FileAttribute 0)))
         _ (doseq [d ["logs" "tmp"]] (.mkdirs (io/file prefix d)))
         conf (str prefix "/nginx.conf")
         text (config handler opts prefix)
         _ (spit conf text)
         {:keys [ip port workers repl nginx start-timeout]
          :or {ip "127.0.0.1" port 8080 workers 1 nginx "/usr/sbin/nginx"
               start-timeout 60000}} opts
         error-log (or (:error-log opts) (str prefix "/logs/error.log"))
         pb (doto (ProcessBuilder. ^java.util.List
                                   [nginx "-p" prefix "-c" conf "-e" error-log
                                    "-g" "daemon off;"])
              (.redirectOutput java.lang.ProcessBuilder$Redirect/INHERIT)
              (.redirectError java.lang.ProcessBuilder$Redirect/INHERIT))
         proc (.start pb)
         stopped (atom false)
         stop (fn stop [& {:keys [timeout]}]
                (when (compare-and-set! stopped false true)
                  (if timeout
                    (do (.waitFor (.start (ProcessBuilder.
                                           ^java.util.List
                                           [nginx "-p" prefix "-c" conf "-e" error-log
                                            "-s" "quit"])))
                        (when-not (.waitFor proc timeout TimeUnit/MILLISECONDS)
                          (.destroy proc)))
                    (.destroy proc))
                  (when-not (.waitFor proc 10 TimeUnit/SECONDS)
                    (.destroyForcibly proc)
                    (.waitFor proc))
                  (delete-tree (io/file prefix))
                  nil))
         hook (Thread. ^Runnable (fn [] (stop)))]
     (.addShutdownHook (Runtime/getRuntime) hook)
     (let [deadline (+ (System/currentTimeMillis) start-timeout)]
       (loop []
         (cond
           (not (.isAlive proc))
           (let [log (tail error-log)]
             (stop)
             (throw (ex-info (str "nginx exited with status " (.exitValue proc)
                                  (when log (str ":\n" log)))
                             {:config text})))

           (listening? ip port) nil

           (> (System/currentTimeMillis) deadline)
           (let [log (tail error-log)]
             (stop)
             (throw (ex-info (str "nginx did not accept on " ip ":" port " within "
                                  start-timeout " ms" (when log (str ":\n" log)))
                             {:config text})))

           :else (do (Thread/sleep 50) (recur)))))
     (with-meta stop {:port port :prefix prefix :config text :process proc
                      :repl-ports (when repl (vec (range repl (+ repl workers))))}))))

(defn- repl-eval
  "Sends form (a string) to the socket REPL on port; returns what it printed
  up to its next prompt."
  [port form]
  (with-open [s (doto (Socket. "127.0.0.1" (int port)) (.setSoTimeout 60000))]
    (let [in (.getInputStream s)
          out (.getOutputStream s)
          buf (java.io.ByteArrayOutputStream.)
          prompt #"(?s)(.*?)\S+=> $"
          read-prompt (fn []
                        (loop []
                          (let [text (String. (.toByteArray buf) StandardCharsets/UTF_8)]
                            (if-let [[_ before] (re-matches prompt text)]
                              (do (.reset buf) (str/trim before))
                              (let [b (.read in)]
                                (when (neg? b)
                                  (throw (ex-info "the worker's REPL closed" {:port port})))
                                (.write buf b)
                                (recur))))))]
      (read-prompt)
      (.write out (.getBytes (str form "\n") StandardCharsets/UTF_8))
      (.flush out)
      (read-prompt))))

(defn eval-in-workers
  "Evaluates form (data or a string) in every worker of a server started
  with :repl, through its socket REPL; answers what each printed, by port."
  [server form]
  (let [ports (:repl-ports (meta server))]
    (when-not (seq ports)
      (throw (ex-info "the server was started without :repl" {})))
    (into (sorted-map)
          (for [p ports] [p (repl-eval p (if (string? form) form (pr-str form)))]))))

(defn reload
  "Reloads namespaces (symbols) from the class path in every worker of a
  server started with :repl: edits saved to their files serve the next
  request, without a restart."
  [server & namespaces]
  (eval-in-workers server
                   (pr-str `(do (require ~@(map #(list 'quote %) namespaces) :reload) :reloaded))))
