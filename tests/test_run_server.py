"""nginx.jvm.server/run-server from a clojure.main process: it serves a
handler var through nginx on the REPL's class path, with the nginx.conf the
launcher writes (bin/nginx-jvm config, the one writer), reload picks up an
edited namespace in the worker through jvm_repl, and the function it
returns stops nginx and removes its prefix."""

import os
import re
import shutil
import subprocess
import tempfile

from harness import (BUILD, JAVA_HOME, LAUNCHER, free_port, free_port_range,
                     nginx_env, read_edn)

APP_V1 = """(ns runsrv.app)
(defn handler [req]
  {:status 200 :headers {"Content-Type" "text/plain"}
   :body (str "v1 " (:uri req))})
"""

SCRIPT = """
(require '[nginx.jvm.server :as server] 'runsrv.app)
(defn get-text [port path]
  (slurp (str "http://127.0.0.1:" port path)))
(defn alive? [pid] (.isPresent (java.lang.ProcessHandle/of pid)))
(def port %(port)d)
(def stop (server/run-server #'runsrv.app/handler
                             {:port port :repl %(repl)d :workers 1
                              :error-log "%(log)s"}))
(def m (meta stop))
(def served-config (:config m))
(def pid (.pid ^Process (:process m)))
(def first-answer (get-text port "/a"))
;; the file changes on disk; the worker reloads it through its REPL
(spit "%(src)s/runsrv/app.clj"
      (.replace (slurp "%(src)s/runsrv/app.clj") "v1 " "v2 "))
(def reloaded (server/reload stop 'runsrv.app))
(def second-answer (get-text port "/b"))
(def worker-pid (read-string (first (vals (server/eval-in-workers
                  stop '(.pid (java.lang.ProcessHandle/current)))))))
(def prefix (:prefix m))
(def prefix-existed (.isDirectory (java.io.File. ^String prefix)))
(stop)
(Thread/sleep 200)
(prn {:first first-answer :second second-answer :reloaded (vals reloaded)
      :repl-ports (:repl-ports m) :config-has-cp
      (.contains ^String (:config m) "nginx-jvm.jar")
      :prefix-existed prefix-existed
      :prefix-gone (not (.exists (java.io.File. ^String prefix)))
      :master-gone (not (alive? pid)) :worker-gone (not (alive? worker-pid))
      :refused (try (get-text port "/c") false
                    (catch java.io.IOException _ true))
      :options (server/config #'runsrv.app/handler
                              {:port 9999 :workers 3 :mode :pool :queue 7
                               :jvm-path "/x/libjvm.so" :jvm-options ["-Xmx64m"]}
                              "/p")
      :served-config served-config
      :no-launcher (try (server/config #'runsrv.app/handler
                                       {:launcher "/nonexistent/nginx-jvm"} "/p")
                        nil
                        (catch clojure.lang.ExceptionInfo e (.getMessage e)))
      :not-a-var (try (server/run-server runsrv.app/handler {:port port}) nil
                      (catch IllegalArgumentException e (.getMessage e)))})
(shutdown-agents)
"""


def without_classpath(conf):
    return re.sub(r"jvm_classpath[^;]*;", "jvm_classpath ...;", conf)


def test_run_server_reload_and_stop():
    src = tempfile.mkdtemp(prefix="nginx-jvm-runsrv-")
    try:
        os.mkdir(os.path.join(src, "runsrv"))
        with open(os.path.join(src, "runsrv", "app.clj"), "w") as f:
            f.write(APP_V1)
        log = os.path.join(src, "error.log")
        port, repl = free_port(), free_port_range(1)
        script = os.path.join(src, "script.clj")
        with open(script, "w") as f:
            f.write(SCRIPT % {"port": port, "repl": repl, "log": log,
                              "src": src})
        cp = ":".join([str(BUILD / "nginx-jvm.jar"), str(BUILD / "lib") + "/*",
                       src])
        p = subprocess.run([JAVA_HOME + "/bin/java", "-cp", cp,
                            "clojure.main", script],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=180,
                           # under make asan, the nginx run-server starts
                           # needs the sanitizer runtime preloaded too
                           env=nginx_env())
        assert p.returncode == 0, p.stderr + open(log).read()
        r = read_edn(p.stdout.strip().splitlines()[-1])
        assert r[":first"] == "v1 /a"
        assert r[":second"] == "v2 /b", open(log).read()
        assert r[":reloaded"] == [":reloaded"]
        assert r[":repl-ports"] == [repl]
        assert r[":config-has-cp"] and r[":prefix-existed"]
        assert r[":prefix-gone"] and r[":master-gone"] and r[":worker-gone"]
        assert r[":refused"]
        assert "handler var" in r[":not-a-var"]
        conf = r[":options"]
        for line in ('worker_processes 3;', 'jvm_mode pool;', 'jvm_queue 7;',
                     'jvm_path "/x/libjvm.so";', 'jvm_options "-Xmx64m";',
                     'listen 127.0.0.1:9999 backlog=4096;',
                     'jvm_content "runsrv.app/handler";'):
            assert line in conf, conf
        assert "jvm_repl" not in conf
        # the launcher's config for the same options, but for the class
        # path (the REPL's, its wildcards expanded, against the launcher's)
        launcher = subprocess.run(
            [LAUNCHER, "config", "--prefix", "/p", "--handler",
             "runsrv.app/handler", "--classpath", src, "--port", "9999",
             "--workers", "3", "--mode", "pool", "--queue", "7",
             "--jvm-path", "/x/libjvm.so", "--jvm-option", "-Xmx64m",
             "--cache", "off"] + (["--user", "root"] if os.geteuid() == 0
                                  else [])
            # run-server passes on $NGINX_JVM_MODULE (make asan's build)
            + (["--module", os.environ["NGINX_JVM_MODULE"]]
               if os.environ.get("NGINX_JVM_MODULE") else []),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            check=True).stdout
        assert without_classpath(conf) == without_classpath(launcher)
        # it served through the launcher's config, the tuned settings too
        served = r[":served-config"]
        for line in ("sendfile on;", "tcp_nopush on;",
                     "keepalive_requests 100000;",
                     "listen 127.0.0.1:%d backlog=4096;" % port,
                     "jvm_repl %d;" % repl,
                     'error_log "%s" notice;' % log):
            assert line in served, served
        # connections sized from the descriptor limit (test_launcher.py)
        assert re.search(r"worker_connections \d+;", served), served
        assert re.search(r"\nworker_rlimit_nofile \d+;", served), served
        assert "not found: give :launcher" in r[":no-launcher"]
        text = open(log).read()
        assert "Clojure socket REPL listening on 127.0.0.1:%d" % repl in text
        for level in ("[alert]", "[crit]", "[error]", "[emerg]"):
            assert level not in text, text
    finally:
        shutil.rmtree(src, ignore_errors=True)
