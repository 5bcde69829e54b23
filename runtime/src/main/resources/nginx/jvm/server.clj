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
  code evaluated only in this REPL is not there (see docs/operations.md)."
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

(defn- find-module
  "ngx_http_jvm_module.so: the :module option, $NGINX_JVM_MODULE, next to
  nginx-jvm.jar on the class path (a build tree), or Debian's modules
  directory."
  [opts cp]
  (let [candidates (concat [(:module opts) (System/getenv "NGINX_JVM_MODULE")]
                           (for [e cp :when (.endsWith ^String e "nginx-jvm.jar")]
                             (str (.getParent (io/file e)) "/ngx_http_jvm_module.so"))
                           ["/usr/lib/nginx/modules/ngx_http_jvm_module.so"])]
    (or (first (filter #(and % (.isFile (io/file %))) candidates))
        (throw (ex-info (str "ngx_http_jvm_module.so not found: give :module "
                             "or set NGINX_JVM_MODULE")
                        {:tried (remove nil? candidates)})))))

(defn- q
  "An nginx.conf string, double-quoted."
  [s]
  (str "\"" (-> (str s) (str/replace "\\" "\\\\") (str/replace "\"" "\\\"")) "\""))

(defn- root? []
  (= "root" (System/getProperty "user.name")))

(defn config
  "The nginx.conf run-server writes (a string), for a prefix directory."
  [handler opts prefix]
  (let [cp (or (:classpath opts) (class-path))
        {:keys [port ip workers mode pool-size queue max-body repl jvm-options
                jvm-path error-log error-level]
         :or {port 8080 ip "127.0.0.1" workers 1 error-level "notice"}} opts]
    (str "load_module " (q (find-module opts cp)) ";\n"
         (when (root?) "user root;\n")
         "worker_processes " workers ";\n"
         "error_log " (if error-log (q error-log) "stderr") " " error-level ";\n"
         "pid " (q (str prefix "/nginx.pid")) ";\n"
         "events { worker_connections 1024; }\n"
         "http {\n"
         "    access_log off;\n"
         "    client_max_body_size " (or max-body (* 8 1024 1024)) ";\n"
         (apply str (for [t ["client_body" "proxy" "fastcgi" "uwsgi" "scgi"]]
                      (str "    " t "_temp_path " (q (str prefix "/tmp/" t)) ";\n")))
         "    jvm_classpath " (str/join " " (map q cp)) ";\n"
         (when jvm-path (str "    jvm_path " (q jvm-path) ";\n"))
         (when (seq jvm-options)
           (str "    jvm_options " (str/join " " (map q jvm-options)) ";\n"))
         (when mode (str "    jvm_mode " (name mode) ";\n"))
         (when pool-size (str "    jvm_pool_size " pool-size ";\n"))
         (when queue (str "    jvm_queue " queue ";\n"))
         (when repl (str "    jvm_repl " repl ";\n"))
         "    server {\n"
         "        listen " (if (str/includes? ip ":") (str "[" ip "]") ip) ":" port ";\n"
         "        location / { jvm_content " (q (var-name handler)) "; }\n"
         "    }\n"
         "}\n")))

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
  writes an nginx.conf into a temporary prefix and starts nginx (in the
  foreground, as a child of this JVM) with this JVM's class path as
  jvm_classpath. Returns when nginx accepts on the port; throws ex-info
  (with the error log's end) if it does not within :start-timeout.

  Returns a function that stops nginx and removes the prefix: (stop) at
  once, (stop :timeout ms) gracefully (nginx -s quit), as http-kit's does.
  Its metadata holds :port, :repl-ports, :prefix, :config and :process.

  opts (http-kit's names where they mean the same):
    :port         8080
    :ip           \"127.0.0.1\"
    :workers      1 (worker_processes; each has its own JVM)
    :mode         :loop, :pool or :virtual (jvm_mode; default loop)
    :pool-size    jvm_pool_size     :queue  jvm_queue
    :max-body     client_max_body_size in bytes (8 MB)
    :repl         PORT: jvm_repl, a socket REPL in worker N on PORT+N, for
                  reload and eval-in-workers (default none)
    :jvm-options  a seq of JVM options for the workers
    :jvm-path     the workers' libjvm.so (jvm_path; default auto, which
                  finds the JDK of $JAVA_HOME or the java on $PATH; :mode
                  :virtual needs a JDK 21 or newer)
    :classpath    a seq of entries (default this JVM's java.class.path)
    :error-log    a file (default nginx's stderr, which is this JVM's)
    :error-level  \"notice\"
    :nginx        the nginx binary (\"/usr/sbin/nginx\")
    :module       ngx_http_jvm_module.so (found next to nginx-jvm.jar on the
                  class path, or in /usr/lib/nginx/modules)
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
