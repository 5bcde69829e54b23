"""The servers under test and the routes they all serve.

Every server listens on a free port of 127.0.0.1 and serves the same routes
at the same paths.  nginx masters run in the foreground (`daemon off`) as
our children, and Jetty and http-kit are children too, so each is stopped
by its own PID; workers are found through /proc.  The peers (nginx-clojure,
http-kit) run from bench/peers/build.sh's builds in build/peers.
"""

import http.client
import os
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
MODULE = BUILD / "ngx_http_jvm_module.so"
JAR = BUILD / "nginx-jvm.jar"
RING_APP = ROOT / "bench" / "ring"
JAVA_APP = ROOT / "bench" / "java"
NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")
JDK17 = os.environ.get("BENCH_JDK17", "/usr/lib/jvm/java-17-openjdk-amd64")
JDK25 = os.environ.get("BENCH_JDK25", "/usr/lib/jvm/temurin-25-jdk-amd64")
HOST = "127.0.0.1"
PEERS_DIR = Path(os.environ.get("PEERS_OUT", BUILD / "peers"))

# --- the routes -------------------------------------------------------------

ROUTES = ("hello", "json", "file", "echo", "headers")
HELLO = b"Hello, Clojure!"
FILE_SIZE = 29686
ECHO_BODY = b"0123456789abcdef" * 256            # 4 KB, POSTed to /echo
# The 10 headers sent to /headers; the handlers answer their values' length.
HEADERS = [("X-Bench-%d" % i, "value-%d-%s" % (i, "x" * (3 * i)))
           for i in range(10)]


def json_body():
    """The /json answer: the bytes bench.routes and bench.JavaRoutes build."""
    items = ",".join(
        '{"id":%d,"name":"item-%d","price":%d,"in_stock":%s,'
        '"tags":["bench","json"]}' % (i, i, i * 25, "true" if i % 2 == 0
                                        else "false")
        for i in range(13))
    return ('{"items":[%s],"count":13}' % items).encode()


def file_body():
    """A 29,686-byte HTML file, as in BASELINES.md."""
    line = "<p>nginx-jvm benchmark file: the same bytes from every server.</p>\n"
    body = "<!doctype html>\n<html><body>\n"
    while len(body) + len(line) + 15 <= FILE_SIZE:
        body += line
    body += "</body></html>\n"
    return (body + " " * (FILE_SIZE - len(body))).encode()


def expected_body(route):
    return {"hello": HELLO, "json": json_body(), "file": file_body(),
            "echo": ECHO_BODY,
            "headers": str(sum(len(v) for _, v in HEADERS)).encode()}[route]


def request_of(route):
    """(method, headers, body) of the request each route is measured with."""
    if route == "echo":
        return "POST", [("Content-Type", "application/octet-stream")], ECHO_BODY
    if route == "headers":
        return "GET", HEADERS, None
    return "GET", [], None


# --- the servers ------------------------------------------------------------

# name -> what it is, in the report's words
SERVERS = {
    "nginx": "plain nginx: `return 200`, static file (sendfile)",
    "jvm-loop": "nginx-jvm, Ring handler on the event loop",
    "jvm-pool": "nginx-jvm, Ring handler, `jvm_mode pool` (16 threads)",
    "jvm-virtual": "nginx-jvm, Ring handler, `jvm_mode virtual` (JDK 25)",
    "jvm-coloop": "nginx-jvm, Ring handler, `jvm_mode coloop` (virtual "
                  "threads the event loop carries, JDK 25)",
    "jvm-async": "nginx-jvm, Ring 3-arity handler, `jvm_async on` (loop)",
    "jvm-java": "nginx-jvm, Java handler (nginx.jvm.Handler) on the loop",
    "jetty": "Ring's current ring-jetty-adapter on Jetty 12, the same Ring "
             "handler, JDK 17, default flags",
    "nginx-jetty": "nginx `proxy_pass` to that Jetty (upstream keepalive 64)",
    "nginx-clojure": "nginx-clojure (JVM in nginx), the same Ring handler "
                     "on the event loop (`jvm_workers` unset), JDK 17",
    "nginx-clojure-pool": "nginx-clojure, the same Ring handler on its "
                          "thread pool (`jvm_workers 16`), JDK 17",
    "http-kit": "http-kit's `run-server`, the same Ring handler, "
                "`:thread 2`, JDK 17",
    "enso": "enso's `run-server` (a virtual thread per connection), the "
            "same Ring handler, JDK 25, default options",
}

# The peers: built by bench/peers/build.sh, skipped when they were not.
PEERS = ("nginx-clojure", "nginx-clojure-pool", "http-kit", "enso",
         "jetty", "nginx-jetty")
# nginx-clojure's thread pool is the same build, configured otherwise
NGINX_CLOJURE_POOL = 16
# The servers Fleet(tls=True) can start on HTTPS with HTTP/2.
TLS_SERVERS = ("nginx", "jvm-loop", "jvm-coloop", "jvm-pool", "jvm-virtual",
               "jvm-java", "enso")
# Servers that are one JVM process, no nginx workers.
JVM_PROCESSES = ("jetty", "http-kit", "enso")


# Every JVM: jcmd reads its threads' allocated bytes (load.jvm_allocated)
# through the attach listener, started at once rather than on SIGQUIT,
# which would make an nginx worker quit; nginx-jvm's workers turn the
# attach mechanism off unless their options turn it on.
ATTACH = ["-XX:+StartAttachListener", "-XX:-DisableAttachMechanism"]
# jcmd: the newest JDK's attaches to the older JVMs too
JCMD = (JDK25 if os.path.exists(JDK25 + "/bin/jcmd") else JDK17) + "/bin/jcmd"


def peer_build(name):
    """The build directory's name of peer `name`."""
    if name.startswith("nginx-clojure"):
        return "nginx-clojure"
    return "ring-jetty" if name in ("jetty", "nginx-jetty") else name


def peer_files(name, peers_dir=None):
    """What a peer's run needs from its build directory."""
    d = Path(peers_dir or PEERS_DIR) / peer_build(name)
    build = peer_build(name)
    if build == "nginx-clojure":
        return [d / "ngx_http_clojure_module.so", d / "nginx-clojure.jar"]
    if build == "ring-jetty":
        return [d / "lib", d / "source-path"]
    if build == "enso":
        return [d / "classes", d / "src" / "src" / "clj" / "s_exp" /
                "enso.clj"]
    return [d / "classes", d / "src" / "src" / "org" / "httpkit" /
            "server.clj"]


def peer_status(name, peers_dir=None):
    """(what was built, None) for a built peer, else (None, why not): one
    line each, from bench/peers/build.sh's `built` or `failed` file."""
    d = Path(peers_dir or PEERS_DIR) / peer_build(name)

    def first_line(f):
        try:
            return f.read_text().strip().splitlines()[0]
        except (OSError, IndexError):
            return None

    missing = [f for f in peer_files(name, peers_dir) if not f.exists()]
    built = first_line(d / "built")
    if built and not missing:
        return built, None
    failed = first_line(d / "failed")
    if failed:
        return None, "not built: %s" % failed
    if missing and built:
        return None, "%s is missing: run `make bench-peers`" % missing[0]
    return None, ("not built: `make bench-peers` builds it from its source "
                  "(PEERS_SRC, bench/README.md)")

# nginx-jvm servers: name -> (handler, the writer's options for it, JDK,
# Java handler?)
NGINX_JVM = {
    "jvm-loop": ("bench.routes/handler", [], JDK17, False),
    "jvm-pool": ("bench.routes/handler", ["--mode", "pool"], JDK17, False),
    "jvm-virtual": ("bench.routes/handler", ["--mode", "virtual"], JDK25,
                    False),
    "jvm-coloop": ("bench.routes/handler", ["--mode", "coloop"], JDK25,
                   False),
    "jvm-async": ("bench.routes/handler", ["--async"], JDK17, False),
    "jvm-java": ("bench.JavaRoutes", [], JDK17, True),
}
LAUNCHER = ROOT / "bin" / "nginx-jvm"


def writer_conf(prefix, port, handler, classpath, options, workers=2):
    """The nginx.conf of an nginx-jvm server whose prefix is `prefix`, from
    the one writer of it, `bin/nginx-jvm config` (the launcher's and
    run-server's): as root, no class cache, the error log in
    prefix/logs/error.log. bench/websocket.py, phases.py and shared.py
    take theirs from here too."""
    return subprocess.run(
        [str(LAUNCHER), "config", "--prefix", str(prefix), "--port",
         str(port), "--handler", handler, "--classpath",
         ":".join(map(str, classpath)), "--workers", str(workers),
         "--user", "root",
         "--cache", "off", "--error-log", str(Path(prefix) / "logs" /
                                               "error.log"),
         "--error-level", "warn"] + NGINX_ARG + list(options),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        check=True).stdout


# NGINX=build/nginx-VERSION/sbin/nginx (scripts/nginx-version.sh's): the
# launcher's --nginx, which also takes the module built for it beside it
NGINX_ARG = [] if NGINX == "/usr/sbin/nginx" else ["--nginx", NGINX]


def jetty_classpath(peers_dir=None):
    """Ring's current Jetty adapter as bench/peers/build.sh built it: Ring's
    source directories (not Debian's Ring 1.8 jars) and Jetty 12's jars,
    with Clojure 1.12 from build/lib."""
    d = Path(peers_dir or PEERS_DIR) / "ring-jetty"
    sources = [l for l in (d / "source-path").read_text().splitlines() if l]
    return sources + [str(d / "lib" / "*"), str(BUILD / "lib" / "*")]


# 10,000 idle connections may all land on one worker; they stay open
# during the measurement
IDLE = ["--connections", "16384", "--main", "worker_rlimit_nofile 20000;",
        "--http", "keepalive_timeout 300s;"]

# The other nginx servers (plain, nginx-jetty, nginx-clojure): the
# settings of the writer's config (bin/nginx-jvm config: sendfile,
# tcp_nopush, keepalive_requests, the listen backlog, worker_connections)
# written out, so that a ratio to them measures the JVM, not the settings;
# bench/tests/test_bench_servers.py checks they keep matching.
MAIN_CONF = """user root;
worker_processes 2;
worker_rlimit_nofile 20000;
error_log logs/error.log warn;
pid logs/nginx.pid;
events {
    worker_connections 16384;
}
"""

HTTP_CONF = """    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    keepalive_timeout 300s;
    client_body_temp_path tmp/body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
"""


# nginx-clojure on JDK 17: its runtime reaches into java.lang and sun.nio.*
# by reflection (its own jdk17 test profile opens the same packages).
NGINX_CLOJURE_OPENS = ("java.base/java.lang", "java.base/sun.nio.cs",
                       "java.base/sun.nio.ch")


def nginx_clojure_http(work, peers_dir=None):
    """nginx-clojure's http-level directives: the JVM, one option per
    directive as its own configurations write them."""
    d = Path(peers_dir or PEERS_DIR) / "nginx-clojure"
    classpath = [d / "nginx-clojure.jar", BUILD / "lib" / "*", RING_APP]
    options = ["-Dbench.file=%s" % (work / "index.html")] + ATTACH + [
        "--add-opens=%s=ALL-UNNAMED" % p for p in NGINX_CLOJURE_OPENS]
    return ("    jvm_path %s/lib/server/libjvm.so;\n"
            "    jvm_classpath \"%s\";\n"
            % (JDK17, ":".join(map(str, classpath)))
            + "".join("    jvm_options \"%s\";\n" % o for o in options))


# A plain nginx's TLS: what `bin/nginx-jvm config --tls` writes for the
# nginx-jvm servers (test_bench_servers.py checks they keep matching)
TLS_CONF = """        ssl_certificate "%s";
        ssl_certificate_key "%s";
        ssl_session_cache shared:nginx_jvm_tls:1m;
        ssl_protocols TLSv1.2 TLSv1.3;
"""
TLS_PASSWORD = "bench"      # of the PKCS12 keystore enso's SSLContext reads


def make_cert(work):
    """A self-signed certificate for localhost and 127.0.0.1 in `work`:
    (cert.pem, key.pem, keystore.p12) -- the PKCS12 copy for the JVM
    peers, which load an SSLContext rather than PEM files."""
    work = Path(work)
    cert, key, p12 = work / "cert.pem", work / "key.pem", work / "keystore.p12"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
         "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    subprocess.run(
        ["openssl", "pkcs12", "-export", "-in", str(cert), "-inkey", str(key),
         "-name", "bench", "-out", str(p12), "-passout",
         "pass:" + TLS_PASSWORD], check=True, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)
    return cert, key, p12


def nginx_conf(name, port, work, jetty_port=None, jvm_options="",
               peers_dir=None, tls=None):
    """The nginx.conf of server `name` (nginx, nginx-jetty, jvm-* or
    nginx-clojure); `jvm_options` are added to nginx-jvm's (none by
    default: the JVM's defaults are part of what is measured).  With
    `tls` (make_cert's files), plain nginx and nginx-jvm listen with TLS
    and HTTP/2 (ALPN) instead of HTTP/1.1 in the clear."""
    head, http, locations = MAIN_CONF, HTTP_CONF, ""
    listen = ""
    if name == "nginx":
        total = expected_body("headers").decode()
        locations = (
            "        location = /hello { default_type text/plain;"
            " return 200 '%s'; }\n"
            "        location = /json { default_type application/json;"
            " return 200 '%s'; }\n"
            "        location = /file { default_type text/html; alias %s; }\n"
            # nginx cannot add up header lengths: a fixed answer
            "        location = /headers { default_type text/plain;"
            " return 200 '%s'; }\n"
            % (HELLO.decode(), json_body().decode(), work / "index.html",
               total))
        if tls:
            listen = " ssl http2"
            locations = TLS_CONF % tuple(tls[:2]) + locations
    elif name == "nginx-jetty":
        http += ("    upstream jetty { server %s:%d; keepalive 64; }\n"
                 % (HOST, jetty_port))
        locations = ("        location / { proxy_pass http://jetty;"
                     " proxy_http_version 1.1;"
                     " proxy_set_header Connection \"\"; }\n")
    elif name in ("nginx-clojure", "nginx-clojure-pool"):
        d = Path(peers_dir or PEERS_DIR) / "nginx-clojure"
        head = "load_module %s;\n%s" % (d / "ngx_http_clojure_module.so",
                                        head)
        http += nginx_clojure_http(work, peers_dir)
        if name == "nginx-clojure-pool":
            http += "    jvm_workers %d;\n" % NGINX_CLOJURE_POOL
        locations = ("        location / { content_handler_type clojure;"
                     " content_handler_code \"(do (require 'bench.routes)"
                     " bench.routes/handler)\"; }\n")
    else:
        handler, options, jdk, java = NGINX_JVM[name]
        # the launcher adds nginx-jvm.jar, and Clojure for a Ring handler
        classpath = [work / "classes"] if java else [RING_APP]
        options = options + IDLE + [
            "--jvm-path", "%s/lib/server/libjvm.so" % jdk,
            "--jvm-option", "-Dbench.file=%s" % (work / "index.html")]
        for o in ATTACH + jvm_options.split():
            options += ["--jvm-option", o]
        if tls:
            options += ["--tls", "%s:%s" % tuple(tls[:2])]
        return writer_conf(Path(work) / name, port, handler, classpath,
                           options)
    return ("%shttp {\n%s    server {\n        listen %s:%d%s backlog=4096;"
            "\n%s    }\n}\n" % (head, http, HOST, port, listen, locations))


def parse_stat_ppid(text):
    """The parent PID from the text of /proc/PID/stat."""
    # the command name may hold spaces and parentheses: skip past the last ')'
    return int(text[text.rindex(")") + 2:].split()[1])


def children(pid):
    """PIDs of the processes whose parent is `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    if parse_stat_ppid(f.read()) == pid:
                        found.append(int(entry))
            except (OSError, ValueError):
                pass          # gone meanwhile
    return sorted(found)


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Server:
    """One running server: its child process and the port it listens on."""

    def __init__(self, name, port, proc, log, routes, behind=None,
                 scheme="http"):
        self.name, self.port, self.proc, self.log = name, port, proc, log
        self.scheme = scheme          # https: TLS with HTTP/2 (Fleet's tls)
        self.routes = routes          # the routes it can serve
        self.behind = behind          # nginx-jetty: the Jetty Server

    def pids(self, own=False):
        """Every process of the server: master and workers, or the JVM; with
        nginx-jetty, the Jetty behind it too unless `own`."""
        pids = [self.proc.pid] + children(self.proc.pid)
        return pids + (self.behind.pids() if self.behind and not own else [])

    def workers(self):
        return (children(self.proc.pid) if self.name not in JVM_PROCESSES
                else [])

    def jvms(self):
        """The server's JVM processes: itself, its workers (nginx-jvm,
        nginx-clojure), the Jetty behind it (nginx-jetty); none for plain
        nginx."""
        if self.name in JVM_PROCESSES:
            return [self.proc.pid]
        if self.behind is not None:
            return self.behind.jvms()
        return [] if self.name == "nginx" else self.workers()

    def url(self, route):
        return "%s://%s:%d/%s" % (self.scheme, HOST, self.port, route)


class Fleet:
    """The servers of one run, in a work directory; a context manager that
    stops them all on the way out, exceptions and Ctrl-C included."""

    def __init__(self, names, work, jvm_options="", tls=False):
        self.names, self.work = list(names), Path(work)
        self.jvm_options = jvm_options
        # tls: every server on HTTPS with HTTP/2 (nginx, jvm-*, enso only)
        self.tls = None
        if tls:
            unsupported = [n for n in self.names if n not in TLS_SERVERS]
            if unsupported:
                raise ValueError("no TLS set-up for %s" % unsupported)
            self.tls = True
        self.servers = {}             # name -> Server, in start order
        self.jetty = None

    def __enter__(self):
        try:
            self._prepare()
            for name in self.names:
                self.servers[name] = self._start(name)
            for server in self.servers.values():
                wait_ready(server)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def _prepare(self):
        (self.work / "index.html").write_bytes(file_body())
        if self.tls:
            self.tls = make_cert(self.work)
        if any(NGINX_JVM.get(n, ("", [], "", False))[3] for n in self.names):
            # its handler only: bench/java's others need Jedis (shared.py's)
            classes = self.work / "classes"
            subprocess.run([JDK17 + "/bin/javac", "-nowarn", "--release", "17",
                            "-cp", str(JAR), "-d", str(classes),
                            str(JAVA_APP / "bench" / "JavaRoutes.java")],
                           check=True)

    def _start(self, name):
        if name == "http-kit":
            return self._start_http_kit()
        if name == "enso":
            return self._start_enso()
        if name == "jetty" or name == "nginx-jetty":
            if self.jetty is None:
                self.jetty = self._start_jetty()
            if name == "jetty":
                return self.jetty
        port, prefix = free_port(), self.work / name
        for d in ("logs", "tmp"):
            (prefix / d).mkdir(parents=True, exist_ok=True)
        conf = prefix / "nginx.conf"
        conf.write_text(nginx_conf(name, port, self.work,
                                   self.jetty and self.jetty.port,
                                   self.jvm_options, tls=self.tls))
        log = prefix / "logs" / "error.log"
        with open(prefix / "logs" / "stderr.log", "w") as out:
            proc = subprocess.Popen(
                [NGINX, "-p", "%s/" % prefix, "-c", str(conf),
                 "-g", "daemon off;"], stdout=out, stderr=out,
                start_new_session=True)   # Ctrl-C reaches us, not them
        routes = [r for r in ROUTES if not (name == "nginx" and r == "echo")]
        return Server(name, port, proc, log, routes,
                      self.jetty if name == "nginx-jetty" else None,
                      "https" if self.tls else "http")

    def _start_jetty(self):
        port = free_port()
        classpath = jetty_classpath() + [str(RING_APP)]
        expr = ("(require 'ring.adapter.jetty 'bench.routes)"
                "(ring.adapter.jetty/run-jetty bench.routes/handler"
                " {:host \"%s\" :port %d})" % (HOST, port))
        return self._clojure_main("jetty", port, classpath, expr)

    def _start_enso(self):
        port, d = free_port(), PEERS_DIR / "enso"
        classpath = [d / "classes", d / "src" / "src" / "clj",
                     BUILD / "lib" / "*", RING_APP]
        tls = ""
        if self.tls:
            # enso serves TLS from an SSLContext and HTTP/2 on `:http2`
            # (ALPN h2 then http/1.1): the context from the PKCS12 copy
            tls = (" :http2 true :ssl-context"
                   " (let [pw (.toCharArray \"%s\")"
                   " ks (doto (java.security.KeyStore/getInstance \"PKCS12\")"
                   " (.load (java.io.FileInputStream. \"%s\") pw))"
                   " kmf (doto (javax.net.ssl.KeyManagerFactory/getInstance"
                   " (javax.net.ssl.KeyManagerFactory/getDefaultAlgorithm))"
                   " (.init ks pw))]"
                   " (doto (javax.net.ssl.SSLContext/getInstance \"TLS\")"
                   " (.init (.getKeyManagers kmf) nil nil)))"
                   % (TLS_PASSWORD, self.tls[2]))
        expr = ("(require 's-exp.enso 'bench.routes)"
                "(s-exp.enso/run-server bench.routes/handler"
                # as the nginx servers' keepalive_requests: wrk's
                # connections are not recycled (enso's default: 1,000)
                " {:host \"%s\" :port %d :max-keep-alive-requests 0%s})"
                "@(promise)" % (HOST, port, tls))
        server = self._clojure_main("enso", port, classpath, expr, JDK25)
        server.scheme = "https" if self.tls else "http"
        return server

    def _start_http_kit(self):
        port, d = free_port(), PEERS_DIR / "http-kit"
        classpath = [d / "classes", d / "src" / "src", BUILD / "lib" / "*",
                     RING_APP]
        expr = ("(require 'org.httpkit.server 'bench.routes)"
                "(org.httpkit.server/run-server bench.routes/handler"
                " {:ip \"%s\" :port %d :thread 2})"
                "@(promise)" % (HOST, port))
        return self._clojure_main("http-kit", port, classpath, expr)

    def _clojure_main(self, name, port, classpath, expr, jdk=JDK17):
        """A JVM server on `jdk`: `clojure.main -e expr`, its output in
        name.log."""
        log = self.work / ("%s.log" % name)
        with open(log, "w") as out:
            proc = subprocess.Popen(
                [jdk + "/bin/java"] + ATTACH + ["-Dbench.file=%s" % (self.work /
                                                           "index.html"),
                 "-cp", ":".join(map(str, classpath)), "clojure.main", "-e",
                 expr], stdout=out, stderr=out, start_new_session=True)
        return Server(name, port, proc, log, list(ROUTES))

    def stop(self):
        """Stops every server by its PID: nginx's fast shutdown (SIGTERM),
        then SIGKILL to what is left after 20 s."""
        procs = [s.proc for s in self.servers.values()]
        if self.jetty is not None and self.jetty.proc not in procs:
            procs.append(self.jetty.proc)
        workers = {p.pid: children(p.pid) for p in procs}
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 20
        for p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print("bench: %d did not stop in 20 s; killing it" % p.pid)
                for pid in [p.pid] + workers[p.pid]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                p.wait()


def connection(server, timeout=30):
    """An http.client connection to the server, HTTPS (HTTP/1.1, the
    self-signed certificate unchecked) when it serves TLS."""
    if server.scheme == "https":
        return http.client.HTTPSConnection(
            HOST, server.port, timeout=timeout,
            context=ssl._create_unverified_context())
    return http.client.HTTPConnection(HOST, server.port, timeout=timeout)


def wait_ready(server, timeout=180):
    """Waits until the server answers /hello with 200 (a JVM on a busy
    2-core machine may take a while to start)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError("%s exited (status %s): see %s"
                               % (server.name, server.proc.returncode,
                                  server.log))
        try:
            conn = connection(server, timeout=5)
            conn.request("GET", "/hello")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        finally:
            conn.close()
        time.sleep(0.3)
    raise RuntimeError("%s did not answer /hello within %d s"
                       % (server.name, timeout))
