"""The servers bench/realapp measures, each running the one Ring handler
realapp.core/handler, started one at a time on a free port of 127.0.0.1
and stopped by PID.  Same JDK (17; 25 for virtual threads), the same heap
and the same database pool in total, whatever the number of JVMs.  The
peers (http-kit, jetty, enso, nginx-clojure) as bench/peers/build.sh built
them (`make bench-peers`), started as bench.py starts them
(benchsuite.servers); one not built is skipped, and the report says why:


  jvm-loop      nginx-jvm, the handler on the event loop (json, plaintext:
                a query there would hold up the worker's other requests)
  jvm-pool      nginx-jvm, jvm_mode pool (its default pool of threads)
  jvm-virtual   nginx-jvm, jvm_mode virtual, JDK 25
  jvm-coloop    nginx-jvm, jvm_mode coloop (virtual threads the event loop
                carries), JDK 25
  http-kit      http-kit's run-server, a worker pool of THREADS threads
  jetty         Ring's current Jetty adapter on Jetty 12 (bench/peers),
                THREADS threads
  enso          enso's run-server (a virtual thread per connection), JDK 25
  nginx-clojure nginx-clojure, its thread pool (jvm_workers THREADS/WORKERS
                per worker)
  nginx-http-kit  nginx proxy_pass to that http-kit (upstream keepalive)

The nginx ones run WORKERS workers, each a JVM with HEAP/WORKERS of heap and
a pool of POOL/WORKERS database connections; the JVM servers one JVM with
HEAP and POOL.  The launcher's config (bin/nginx-jvm config) for nginx-jvm;
the others' written to match it (benchsuite.servers).
"""

import http.client
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from benchsuite import servers as suite  # noqa: E402

ROOT = suite.ROOT
BUILD = suite.BUILD
HOST = suite.HOST
NGINX = suite.NGINX
JDK17, JDK25 = suite.JDK17, suite.JDK25
HICCUP = "/usr/share/java/hiccup.jar"
DATA_JSON = "/usr/share/java/data.json.jar"      # libdata-json-clojure
LIBS = BUILD / "realapp-lib"
SRC = HERE / "src"

WORKERS = 2
HEAP_MB = 1024            # in total, over a server's JVMs
POOL = 16                 # database connections in total
THREADS = 32              # request threads of the thread-pool servers

SERVERS = {
    "jvm-loop": "nginx-jvm, the handler on the event loop (json, plaintext)",
    "jvm-pool": "nginx-jvm, `jvm_mode pool` (default pool size)",
    "jvm-virtual": "nginx-jvm, `jvm_mode virtual` (JDK 25)",
    "jvm-coloop": "nginx-jvm, `jvm_mode coloop` (JDK 25)",
    "http-kit": "http-kit `run-server`, `:thread %d`" % THREADS,
    "jetty": "Ring's current ring-jetty-adapter on Jetty 12 (`make "
             "bench-peers`), `:max-threads %d`, JDK 17" % THREADS,
    "enso": "enso's `run-server` (a virtual thread per connection), JDK 25, "
            "`:max-keep-alive-requests 0` (as bench.py); the handler "
            "wrapped to add the Server header enso does not send",
    "nginx-clojure": "nginx-clojure, thread pool (`jvm_workers %d` per "
                     "worker)" % (THREADS // WORKERS),
    "nginx-http-kit": "nginx `proxy_pass` to http-kit (upstream keepalive "
                      "64)",
}
NO_DB = {"jvm-loop"}


def types_of(name, types):
    """The test types server `name` is measured on, of `types`."""
    if name in NO_DB:
        return [t for t in types if t in ("json", "plaintext")]
    return list(types)


def classpath():
    """The handler's own: its source, hiccup and clojure.data.json (Debian's),
    HikariCP and the JDBC driver.  No Ring jar: the handler needs none, and
    the Jetty peer brings Ring's current sources."""
    return [str(SRC), HICCUP, DATA_JSON, str(LIBS / "*")]


# The collector every JVM of a run uses (driver.py --gc): the JDK's default
# (G1) unless asked; the headline compares the three.
GCS = {"default": [], "parallel": ["-XX:+UseParallelGC"],
       "g1": ["-XX:+UseG1GC"], "zgc": ["-XX:+UseZGC"]}
gc = "default"


def jvm_options(jdbc_url, jvms):
    return ["-Xms%dm" % (HEAP_MB // jvms), "-Xmx%dm" % (HEAP_MB // jvms),
            "-Drealapp.db=%s" % jdbc_url,
            "-Drealapp.pool=%d" % (POOL // jvms)] + GCS[gc]


def unavailable(name):
    """Why server `name` cannot run here, or None."""
    missing = [p for p in (HICCUP, DATA_JSON, LIBS / "HikariCP-5.1.0.jar")
               if not Path(p).exists()]
    if missing:
        return "missing %s: make all" % missing[0]
    for peer in ("http-kit", "nginx-clojure", "jetty", "enso"):
        if peer in name:
            built, why = suite.peer_status(peer)
            if not built:
                return why
    if (name in ("jvm-virtual", "jvm-coloop", "enso")
            and not Path(JDK25).exists()):
        return "no JDK 25 at %s (BENCH_JDK25)" % JDK25
    return None


class Running:
    """A started server: its processes (the last one started first)."""

    def __init__(self, name, port, procs, log, conf=None):
        self.name, self.port, self.procs, self.log = name, port, procs, log
        self.conf = conf

    def pids(self):
        out = []
        for p in self.procs:
            out += [p.pid] + suite.children(p.pid)
        return out

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                for pid in [p.pid] + suite.children(p.pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                p.wait()


def _nginx(work, name, conf):
    prefix = work / name
    for d in ("logs", "tmp"):
        (prefix / d).mkdir(parents=True, exist_ok=True)
    (prefix / "nginx.conf").write_text(conf)
    out = open(prefix / "logs" / "stderr.log", "w")
    proc = subprocess.Popen([NGINX, "-p", "%s/" % prefix, "-c",
                             str(prefix / "nginx.conf"), "-g", "daemon off;"],
                            stdout=out, stderr=out, start_new_session=True)
    return proc, prefix / "logs" / "error.log"


def _java(work, name, port, cp, expr, options, jdk=JDK17):
    log = work / ("%s.log" % name)
    out = open(log, "w")
    proc = subprocess.Popen([jdk + "/bin/java"] + options +
                            ["-cp", ":".join(map(str, cp)), "clojure.main",
                             "-e", expr], stdout=out, stderr=out,
                            start_new_session=True)
    return proc, log


def _http_kit(work, jdbc_url, name="http-kit"):
    port, d = suite.free_port(), suite.PEERS_DIR / "http-kit"
    cp = [d / "classes", d / "src" / "src", BUILD / "lib" / "*"] + classpath()
    expr = ("(require 'org.httpkit.server 'realapp.core)"
            "(org.httpkit.server/run-server realapp.core/handler"
            " {:ip \"%s\" :port %d :thread %d :max-body 1048576})"
            "@(promise)" % (HOST, port, THREADS))
    proc, log = _java(work, name, port, cp, expr, jvm_options(jdbc_url, 1))
    return Running(name, port, [proc], log)


def start(name, work, jdbc_url):
    """Starts server `name` in directory `work`; returns it once it answers
    /plaintext (or raises, having stopped what it started)."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    port = suite.free_port()
    if name.startswith("jvm-"):
        mode = name[4:]
        jdk = JDK25 if mode in ("virtual", "coloop") else JDK17
        options = ["--jvm-path", "%s/lib/server/libjvm.so" % jdk]
        if mode != "loop":
            options += ["--mode", mode]
        for o in jvm_options(jdbc_url, WORKERS):
            options += ["--jvm-option", o]
        conf = suite.writer_conf(work / name, port, "realapp.core/handler",
                                 classpath(), options, workers=WORKERS)
        proc, log = _nginx(work, name, conf)
        server = Running(name, port, [proc], log, conf)
    elif name == "http-kit":
        server = _http_kit(work, jdbc_url)
    elif name == "jetty":
        # Ring's sources and Jetty 12's jars first, as bench.py's Jetty
        cp = suite.jetty_classpath() + classpath()
        expr = ("(require 'ring.adapter.jetty 'realapp.core)"
                "(ring.adapter.jetty/run-jetty realapp.core/handler"
                " {:host \"%s\" :port %d :max-threads %d})"
                % (HOST, port, THREADS))
        proc, log = _java(work, name, port, cp, expr,
                          jvm_options(jdbc_url, 1))
        server = Running(name, port, [proc], log)
    elif name == "enso":
        d = suite.PEERS_DIR / "enso"
        cp = [d / "classes", d / "src" / "src" / "clj",
              BUILD / "lib" / "*"] + classpath()
        # enso runs each connection on a virtual thread, so the handler's
        # blocking JDBC calls need no pool of its own; keep-alive requests
        # unbounded as bench.py's (oha's connections are not recycled).
        # enso sends no Server header, which TechEmpower's rules (and
        # verify.py) require: the handler is wrapped to add one, as a
        # TechEmpower entry does for a server that does not.
        expr = ("(require 's-exp.enso 'realapp.core)"
                "(s-exp.enso/run-server"
                " (fn [req] (assoc-in (realapp.core/handler req)"
                " [:headers \"Server\"] \"enso\"))"
                " {:host \"%s\" :port %d :max-keep-alive-requests 0})"
                "@(promise)" % (HOST, port))
        proc, log = _java(work, name, port, cp, expr,
                          jvm_options(jdbc_url, 1), JDK25)
        server = Running(name, port, [proc], log)
    elif name == "nginx-clojure":
        d = suite.PEERS_DIR / "nginx-clojure"
        cp = [d / "nginx-clojure.jar", BUILD / "lib" / "*"] + classpath()
        opts = jvm_options(jdbc_url, WORKERS) + [
            "--add-opens=%s=ALL-UNNAMED" % p for p in suite.NGINX_CLOJURE_OPENS]
        http = suite.HTTP_CONF + (
            "    jvm_path %s/lib/server/libjvm.so;\n"
            "    jvm_classpath \"%s\";\n    jvm_workers %d;\n"
            % (JDK17, ":".join(map(str, cp)), THREADS // WORKERS)
            + "".join("    jvm_options \"%s\";\n" % o for o in opts))
        conf = ("load_module %s;\n%shttp {\n%s    server {\n        listen "
                "%s:%d backlog=4096;\n        location / {"
                " content_handler_type clojure; content_handler_code "
                "\"(do (require 'realapp.core) realapp.core/handler)\"; }\n"
                "    }\n}\n" % (d / "ngx_http_clojure_module.so",
                               suite.MAIN_CONF, http, HOST, port))
        proc, log = _nginx(work, name, conf)
        server = Running(name, port, [proc], log, conf)
    elif name == "nginx-http-kit":
        behind = _http_kit(work, jdbc_url, "http-kit-behind-nginx")
        try:
            wait_ready(behind)
        except BaseException:
            behind.stop()
            raise
        http = suite.HTTP_CONF + ("    upstream httpkit { server %s:%d; "
                                  "keepalive 64; }\n" % (HOST, behind.port))
        conf = ("%shttp {\n%s    server {\n        listen %s:%d backlog=4096;"
                "\n        location / { proxy_pass http://httpkit;"
                " proxy_http_version 1.1; proxy_set_header Connection \"\"; }"
                "\n    }\n}\n" % (suite.MAIN_CONF, http, HOST, port))
        proc, log = _nginx(work, name, conf)
        server = Running(name, port, [proc] + behind.procs, log, conf)
    else:
        raise ValueError("unknown server %r" % name)
    try:
        wait_ready(server)
    except BaseException:
        server.stop()
        raise
    return server


def wait_ready(server, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in server.procs:
            if p.poll() is not None:
                raise RuntimeError("%s exited (status %s): see %s"
                                   % (server.name, p.returncode, server.log))
        conn = http.client.HTTPConnection(HOST, server.port, timeout=5)
        try:
            conn.request("GET", "/plaintext")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        finally:
            conn.close()
        time.sleep(0.3)
    raise RuntimeError("%s did not answer /plaintext within %d s"
                       % (server.name, timeout))
