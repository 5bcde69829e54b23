"""Test harness: a throw-away nginx with the jvm module, and HTTP helpers.

Every Nginx instance lives in its own temporary prefix (config, logs, temp
paths, pid file) and listens on free ports of 127.0.0.1.  The master runs in
the foreground (`daemon off`) as our child, so it can always be stopped by its
PID, and its workers are found through /proc.
"""

import atexit
import http.client
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.parse
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
# NGINX_JVM_MODULE: another build of the module (`make asan` points it at
# build/asan/ngx_http_jvm_module.so); NGINX_JVM_PRELOAD: LD_PRELOAD for the
# nginx processes only (the sanitizer runtime Debian's nginx does not link).
MODULE = Path(os.environ.get("NGINX_JVM_MODULE")
              or BUILD / "ngx_http_jvm_module.so")
PRELOAD = os.environ.get("NGINX_JVM_PRELOAD", "")
# Under ASan a worker's RSS holds the allocator's quarantine of freed memory
# and its shadow: tests that measure RSS growth skip themselves.
SANITIZED = bool(PRELOAD)
sanitized_rss = "RSS under ASan counts its quarantine of freed memory"
JAR = BUILD / "nginx-jvm.jar"
APPS = Path(__file__).resolve().parent / "apps"
CLJ_APPS = APPS / "clj"
JAVA_APPS = APPS / "java"
NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")
JAVA_HOME = os.environ.get("JAVA_HOME") or "/usr/lib/jvm/java-17-openjdk-amd64"

# Ring and Compojure from Debian: the one list is scripts/ring-jars.txt.
RING_JARS = ["/usr/share/java/%s.jar" % line.strip()
             for line in (ROOT / "scripts" / "ring-jars.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]

PROBLEM = re.compile(r"\[(alert|crit|error|emerg)\]"
                     # sanitizer reports (make asan): UBSan writes them to
                     # stderr, which is the error log in a worker
                     + (r"|runtime error:|==\d+==ERROR: \w+Sanitizer"
                        if PRELOAD else ""))
KEEP = os.environ.get("NGINX_JVM_KEEP") == "1"   # keep prefixes to debug

# The execution modes the suite runs in (make test: loop,pool,virtual).
MODES = [m for m in os.environ.get("NGINX_JVM_MODES", "loop").split(",") if m]
# The same for a servlet application, which blocks and so never runs in
# loop mode: pool when loop alone is asked.  NGINX_JVM_SERVLET_MODES, when
# set, says them instead (make test: pool in the main run, for its time;
# make test-servlet-virtual runs the servlet suites in virtual mode).
SERVLET_MODES = ([m for m in os.environ.get("NGINX_JVM_SERVLET_MODES", "").split(",") if m]
                 or [m for m in MODES if m != "loop"] or ["pool"])


# --- the execution-mode hook ----------------------------------------------

def jdk_feature(home):
    """The feature version of the JDK at `home` (its release file's
    JAVA_VERSION), or 0."""
    try:
        text = (Path(home) / "release").read_text()
    except OSError:
        return 0
    m = re.search(r'^JAVA_VERSION="(\d+)', text, re.M)
    return int(m.group(1)) if m else 0


def jdk21_libjvm():
    """libjvm.so of an installed JDK 21 or newer (virtual threads), or None."""
    for release in sorted(Path("/usr/lib/jvm").glob("*/release")):
        lib = release.parent / "lib/server/libjvm.so"
        if jdk_feature(release.parent) >= 21 and lib.exists():
            return str(lib)
    return None


def mode_directives(mode, http=""):
    """http-level directives that make `mode` every location's default.

    "loop" (handlers on the event loop) is the module's default and adds
    nothing.  Locations that name their own jvm_mode keep it.
    """
    if mode == "loop":
        return ""
    text = "    jvm_mode %s;\n" % mode
    if mode == "virtual" and "jvm_path" not in http:
        text += "    jvm_path %s;\n" % jdk21_libjvm()
    if mode == "coloop" and "jvm_path" not in http:
        text += "    jvm_path %s;\n" % COLOOP_LIBJVM
    return text


# jvm_mode coloop is tested on this JDK (tests/test_coloop.py; the mode
# fixture's "coloop"); make test-coloop-jdk21 points it at a JDK 21.
COLOOP_LIBJVM = os.environ.get("NGINX_JVM_COLOOP_LIBJVM",
                               "/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so")


# --- Java test handlers, compiled once per session -------------------------

_java_classes = None


def java_classes():
    """The directory of the compiled tests/apps/java classes."""
    global _java_classes
    if _java_classes is None:
        out = tempfile.mkdtemp(prefix="nginx-jvm-classes-")
        os.chmod(out, 0o755)        # for workers that run as nobody
        atexit.register(shutil.rmtree, out, True)
        sources = sorted(str(p) for p in JAVA_APPS.rglob("*.java"))
        # --release 17: the classes also run in a worker on JDK 17
        javac = subprocess.run([JAVA_HOME + "/bin/javac", "--release", "17",
                                "-nowarn", "-cp", str(JAR), "-d", out]
                               + sources, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        if javac.returncode != 0:
            raise RuntimeError("javac failed:\n" + javac.stdout)
        _java_classes = out
    return _java_classes


def ring_classpath():
    """Clojure, Ring, Compojure, the test apps (Clojure and Java)."""
    return [str(JAR), str(BUILD / "lib") + "/*", str(CLJ_APPS),
            java_classes()] + RING_JARS


def java_classpath():
    """No Clojure at all: the runtime jar and the Java test handlers."""
    return [str(JAR), java_classes()]


def nginx_env():
    """The environment of the nginx processes the harness runs."""
    env = dict(os.environ)
    # nginx reads $NGINX as the sockets of a binary upgrade: the harness's
    # NGINX (the binary to test) is not for it
    env.pop("NGINX", None)
    if PRELOAD:
        env["LD_PRELOAD"] = PRELOAD
    return env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_range(n):
    """The first of n consecutive free ports below the kernel's ephemeral
    range, so that no client connection takes one of them meanwhile (for
    servers that listen on PORT+N, such as jvm_repl's)."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
    rng = __import__("random").Random()
    for _ in range(200):
        base = rng.randrange(10000, low - n)
        try:
            socks = []
            for p in range(base, base + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no %d free consecutive ports" % n)


# --- processes ---------------------------------------------------------------

def children(pid):
    """PIDs of the live child processes of pid (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        # fields[0] is the state, fields[1] the parent's pid
        if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
            found.append(int(entry))
    return sorted(found)


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def in_event_loop(pid):
    """True when the process's main thread waits in epoll_wait, i.e. it has
    finished its init_process hooks (JVM start) and serves requests."""
    try:
        with open("/proc/%d/syscall" % pid) as f:
            nr = f.read().split()[0]
    except (OSError, IndexError):
        return None
    return nr in ("232", "281")          # epoll_wait, epoll_pwait (x86_64)


def accepted(pids, port):
    """How many connections to 127.0.0.1:port these processes have accepted
    and hold (ESTABLISHED, /proc/net/tcp): requests that a quit or reload
    now finds in flight."""
    inodes = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1].endswith(":%04X" % port) and fields[3] == "01":
                inodes.add("socket:[%s]" % fields[9])
    count = 0
    for pid in pids:
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)) in inodes:
                    count += 1
            except OSError:
                pass
    return count


# How long the workers' start may take before a test says it failed: two
# JVM starts one after the other took over 60 s on a machine held to a share
# of one busy core.  A wait returns as soon as the workers serve.
START_WAIT = 300


def wait_for(predicate, timeout, interval=0.05):
    """Polls predicate until it returns something true; returns it or None."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            return None
        time.sleep(interval)


# --- HTTP -----------------------------------------------------------------

class Reply:
    def __init__(self, status, headers, body, reason=""):
        self.status = status
        self.headers = headers          # list of (name, value), repeats kept
        self.body = body
        self.reason = reason

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def header_all(self, name):
        return [v for k, v in self.headers if k.lower() == name.lower()]

    @property
    def text(self):
        return self.body.decode("utf-8")

    def __repr__(self):
        return "Reply(%d, %r, %r)" % (self.status, self.headers,
                                      self.body[:200])


def request(port, method, path, headers=None, body=None, timeout=30,
            conn=None):
    """One request with http.client; conn is reused when given."""
    own = conn is None
    if own:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        return Reply(resp.status, resp.getheaders(), data, resp.reason)
    finally:
        if own:
            conn.close()


def raw(port, data, timeout=10, host="127.0.0.1"):
    """Sends bytes, reads until the server closes; returns all bytes read.
    Raises socket.timeout when the server neither answers nor closes."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
    return b"".join(chunks)


TCP_STATES = {1: "ESTABLISHED", 2: "SYN_SENT", 3: "SYN_RECV", 4: "FIN_WAIT1",
              5: "FIN_WAIT2", 6: "TIME_WAIT", 7: "CLOSE", 8: "CLOSE_WAIT",
              9: "LAST_ACK", 10: "LISTEN", 11: "CLOSING"}


def tcp_socket(local_port, remote_port):
    """The kernel's view of the IPv4 TCP socket from local_port to
    remote_port (/proc/net/tcp: this network namespace's, every process's):
    {"state", "tx", "rx"} (bytes in its send queue, not yet acknowledged,
    and in its receive queue, not yet read), or None when there is none.
    From the server's side: local_port is the server's, remote_port the
    client socket's getsockname()[1]."""
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            local, remote = fields[1].split(":")[1], fields[2].split(":")[1]
            if int(local, 16) == local_port and int(remote, 16) == remote_port:
                tx, rx = (int(x, 16) for x in fields[4].split(":"))
                return {"state": TCP_STATES.get(int(fields[3], 16), fields[3]),
                        "tx": tx, "rx": rx}
    return None


def data_segments_in(s):
    """The data segments socket s has received (Linux's
    tcpi_data_segs_in, at offset 152 of struct tcp_info): how many
    deliveries a client's answers took."""
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 192)
    return struct.unpack_from("I", info, 152)[0]


def read_ws_frame(s):
    """The server's next WebSocket frame on socket s: (its first byte, with
    FIN, RSV1-3 and the opcode; its payload). Server frames are not masked."""
    def exactly(n):
        data = b""
        while len(data) < n:
            chunk = s.recv(n - len(data))
            if not chunk:
                raise EOFError("closed after %d of %d bytes" % (len(data), n))
            data += chunk
        return data
    b0, b1 = exactly(2)
    assert not b1 & 0x80, "server frames are not masked"
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", exactly(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", exactly(8))[0]
    return b0, exactly(n)


# A server of the second port with TLS, its certificate and key in the
# prefix (server_cert()), its configuration to follow before a "}".
TLS_SERVER = """
    server {
        listen 127.0.0.1:@PORT2@ ssl;
        server_name localhost;
        ssl_certificate @PREFIX@/server.pem;
        ssl_certificate_key @PREFIX@/server.key;
"""


def server_cert(d):
    """A self-signed certificate (EC P-256) for localhost in directory d:
    server.pem, and its key server.key."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                    "server.key", "-out", "server.pem", "-days", "2", "-subj",
                    "/CN=localhost"], cwd=d, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def open_get(port, path, timeout=10):
    """A GET of path sent on a new socket, its answer left to read (a
    stream, an event stream): the socket."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(("GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n" % path).encode())
    return s


def read_until(s, marker, timeout=10):
    """What socket s gives until marker is in it, or the peer closes."""
    s.settimeout(timeout)
    data = b""
    while marker not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


WS_KEY = b"dGhlIHNhbXBsZSBub25jZQ=="     # RFC 6455's example key


def ws_handshake(port, path, extra=b"", version=b"13", key=WS_KEY):
    """A WebSocket upgrade of path on a new socket, extra header lines
    (each ending in CRLF) added: (the socket, the answer's head).  The head
    is read a byte at a time, so that no frame after it is taken."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: localhost\r\n"
              b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: " + key + b"\r\n"
              b"Sec-WebSocket-Version: " + version + b"\r\n" + extra + b"\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            break
        head += chunk
    return s, head


def ws_frame(opcode, payload=b"", fin=True, mask=True, rsv=0):
    """A client's WebSocket frame; rsv: the RSV1-3 bits as a number (4 is
    RSV1, a compressed message).  Clients mask, unless told not to."""
    b0 = (0x80 if fin else 0) | (rsv << 4) | opcode
    m = 0x80 if mask else 0
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", b0, m | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, m | 126, n)
    else:
        head = struct.pack("!BBQ", b0, m | 127, n)
    if not mask or not n:
        return head + (os.urandom(4) if mask else b"") + payload
    key = os.urandom(4)
    k = int.from_bytes((key * (n // 4 + 1))[:n], "big")
    return head + key + (int.from_bytes(payload, "big") ^ k).to_bytes(n, "big")


def ws_close_code(payload):
    """The code of a close frame's payload, or None."""
    return struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None


def ws_expect_close(s, code):
    """The server sends a close frame with code (frames before it are
    skipped), then closes the connection once the client answers it."""
    while True:
        b0, payload = read_ws_frame(s)
        assert not b0 & 0x30, "RSV2 and RSV3 stay clear"
        if b0 & 0x0F == 8:
            break
    assert ws_close_code(payload) == code, payload
    s.sendall(ws_frame(8, struct.pack("!H", code)))
    s.settimeout(5)
    assert s.recv(10) == b"", "the server closes the connection"


# when this run (this process) began: what maven_package built since is this run's
RUN_STARTED = time.time()


def maven_package(example, dest, artifact, m2=None, edit=None, timeout=900):
    """`mvn package` of a fresh copy of `example` (a Maven project, built as
    its users build it) in `dest`, after `edit(dest)` if given; its
    target/`artifact`.  `m2`: a local repository of its own (the Spring
    examples share build/projects/m2), else the user's.  Built once per
    run: an artifact made since this run began is taken as it is (another
    module built it, each `dest` having one recipe)."""
    path = Path(dest) / "target" / artifact
    if path.is_file() and path.stat().st_mtime >= RUN_STARTED:
        return path
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(example, dest, ignore=shutil.ignore_patterns("target"))
    if edit:
        edit(dest)
    r = subprocess.run(["mvn", "-B", "-q"]
                       + (["-Dmaven.repo.local=%s" % m2] if m2 else [])
                       + ["package"], cwd=dest, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout
    assert path.is_file(), "mvn package made no " + str(path)
    return path


def config_test(*args, **kwargs):
    """`nginx -t` of a configuration (Nginx's arguments), its prefix removed
    after: the CompletedProcess."""
    n = Nginx(*args, **kwargs)
    try:
        return n.test_config()
    finally:
        n.cleanup()


def dict_config(small):
    """(locations, http) of a configuration for testapp.Shared: its location
    in the first server and in a second one (reuseport: new connections
    spread over the workers), the dictionaries d (1m) and small (its size
    given)."""
    location = "        location /dict { jvm_content testapp.Shared; }\n"
    return location, """
    jvm_shared_dict d 1m;
    jvm_shared_dict small %s;
    server {
        listen 127.0.0.1:@PORT2@ reuseport;
%s    }
""" % (small, location)


def dict_op(ng_, port=None, timeout=120, **params):
    """One operation of the test app's /dict location (testapp.Shared) on
    a new connection, on the second server's port unless told: the Reply."""
    return request(port or ng_.port2, "GET",
                   "/dict?" + urllib.parse.urlencode(params), timeout=timeout)


def dict_ok(ng_, **params):
    """dict_op that must answer 200: the answer's text."""
    r = dict_op(ng_, **params)
    assert r.status == 200, r.text
    return r.text


def clear_dicts(request):
    """For an autouse fixture: a test that uses the module's nginx (ng)
    starts with the test app's dictionaries empty."""
    if "ng" in request.fixturenames:
        n = request.getfixturevalue("ng")
        dict_ok(n, op="clear")
        dict_ok(n, op="clear", dict="small")


def walk_notes(n, name, text, style=None):
    """The notes example (examples/notes) served by `n`: its page, its
    stylesheet (the bytes `style`, when given), a sign-in as `name`, a note
    `text` posted through the API and found in the API's list and on the
    signed-in page."""
    assert 'action="/login"' in n.get("/").text
    css = n.get("/static/style.css")
    assert css.status == 200 and css.header("Content-Type") == "text/css"
    if style is not None:
        assert css.body == style
    r = n.request("POST", "/login", body="name=" + name, headers={
        "Content-Type": "application/x-www-form-urlencoded"})
    assert r.status == 303, r
    cookie = r.header("Set-Cookie").split(";")[0]
    r = n.request("POST", "/api/notes", body='{"text": "%s"}' % text,
                  headers={"Content-Type": "application/json",
                           "Cookie": cookie})
    assert r.status == 201, r
    assert '"text":"%s"' % text in n.get("/api/notes").text
    assert text in n.get("/", headers={"Cookie": cookie}).text


def fake_clojure_jar(path, version):
    """A jar holding what marks a Clojure (clojure/main.class,
    core__init.class, version.properties): what the launcher looks for."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("clojure/main.class", b"\xca\xfe\xba\xbe")
        z.writestr("clojure/core__init.class", b"\xca\xfe\xba\xbe")
        z.writestr("clojure/version.properties", "version=%s\n" % version)
        z.writestr("app/core.clj", "(ns app.core)\n")
    return path


def parse_raw(data):
    """Raw response bytes as a Reply (status, [(name, value)], body bytes)."""
    head, sep, body = data.partition(b"\r\n\r\n")
    assert sep, "no end of header in %r" % data[:300]
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append((name.strip(), value.strip()))
    return Reply(status, headers, body)


def dechunk(body):
    """Decodes a chunked body; returns (data, complete) where complete says
    whether the terminating zero-length chunk was there."""
    out = []
    pos = 0
    while True:
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            return b"".join(out), False
        size = int(body[pos:eol].split(b";")[0], 16)
        if size == 0:
            return b"".join(out), True
        start = eol + 2
        if len(body) < start + size + 2:
            out.append(body[start:start + size])
            return b"".join(out), False
        out.append(body[start:start + size])
        pos = start + size + 2


# --- nginx ----------------------------------------------------------------

CONF = """\
load_module @MODULE@;
user root;
worker_processes @WORKERS@;
error_log @PREFIX@/logs/error.log info;
pid @PREFIX@/logs/nginx.pid;
@MAIN@
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path @PREFIX@/client_body_temp;
    proxy_temp_path @PREFIX@/proxy_temp;
    fastcgi_temp_path @PREFIX@/fastcgi_temp;
    uwsgi_temp_path @PREFIX@/uwsgi_temp;
    scgi_temp_path @PREFIX@/scgi_temp;
@MODE@@CLASSPATH@
@HTTP@
    server {
        listen 127.0.0.1:@PORT@;
        server_name localhost;
@LOCATIONS@
    }
}
"""


class Nginx:
    """One nginx under test.

    locations: config text inside the main server block.
    http: extra text in the http block (more servers, jvm_options, ...).
    main: extra text in the main context (e.g. "master_process off;").
    classpath: list of jvm_classpath entries, or None for no directive.
    startup_allow: regexes of [error]-or-worse lines expected while workers
    start (checked by start()); tests allow theirs with the log_allows marker.

    In config text, @PREFIX@, @PORT@ and @PORT2@ are replaced.
    """

    instances = []          # every live instance, for the error log check

    def __init__(self, locations="", http="", main="", classpath="ring",
                 workers=1, mode="loop", startup_allow=()):
        self.own(tempfile.mkdtemp(prefix="nginx-jvm-test-"), workers, mode,
                 startup_allow, single="master_process off" in main)
        for d in ("logs", "html", "client_body_temp"):
            os.mkdir(os.path.join(self.prefix, d))
        if classpath == "ring":
            classpath = ring_classpath()
        elif classpath == "java":
            classpath = java_classpath()
        cp = ""
        if classpath:
            cp = "    jvm_classpath %s;" % " ".join(classpath)
        if PRELOAD:
            # workers keep only the environment `env` names: UBSan reads
            # its options there when it first reports
            main = "env ASAN_OPTIONS;\nenv UBSAN_OPTIONS;\n" + main
        text = CONF
        for key, value in (("@MAIN@", main),
                           ("@MODE@", mode_directives(mode, http)),
                           ("@CLASSPATH@", cp),
                           ("@HTTP@", http), ("@LOCATIONS@", locations),
                           ("@MODULE@", str(MODULE)),
                           ("@WORKERS@", str(workers)),
                           ("@PREFIX@", self.prefix),
                           ("@PORT2@", str(self.port2)),
                           ("@PORT@", str(self.port))):
            text = text.replace(key, value)
        with open(self.conf, "w") as f:
            f.write(text)
        Nginx.instances.append(self)

    def own(self, prefix, workers=1, mode="loop", startup_allow=(),
            single=False):
        """An nginx of nginx.conf and logs/error.log in `prefix`, on free
        ports, not started: for a class that writes its own nginx.conf."""
        self.prefix = prefix
        self.port = free_port()
        self.port2 = free_port()
        self.workers = workers
        self.mode = mode
        self.startup_allow = list(startup_allow)
        self.single = single
        self.proc = None
        self.stderr = None
        self.conf = os.path.join(prefix, "nginx.conf")
        self.log = os.path.join(prefix, "logs", "error.log")

    # -- control --

    def path(self, *parts):
        return os.path.join(self.prefix, *parts)

    def command(self):
        """nginx and the options that name this instance's files."""
        return [NGINX, "-p", self.prefix, "-e", self.log, "-c", self.conf]

    def test_config(self):
        """Runs `nginx -t`; returns the CompletedProcess (text output)."""
        return subprocess.run(self.command() + ["-t"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=60,
                              env=nginx_env())

    def start(self, timeout=START_WAIT, wait=True):
        """Starts nginx and, unless wait is false, waits until its workers
        serve and checks the error log of their start."""
        self.stderr = open(self.path("logs", "stderr.log"), "ab")
        self.proc = subprocess.Popen(
            self.command() + ["-g", "daemon off;"],
            stdout=self.stderr, stderr=self.stderr, env=nginx_env())
        if not wait:
            return self
        if not self.wait_ready(timeout=timeout):
            self.stop()
            raise RuntimeError("nginx did not get ready:\n" + self.log_text()
                               + self.stderr_text())
        problems = self.log_problems(0, self.startup_allow)
        if problems:
            self.stop()             # not left running by a failed fixture
            raise AssertionError("errors while starting:\n"
                                 + "\n".join(problems))
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        self.cleanup()

    @property
    def master_pid(self):
        return self.proc.pid

    def worker_pids(self):
        if self.single:
            return [self.proc.pid] if alive(self.proc.pid) else []
        pids = []
        master = self.master_pid
        for pid in children(master) if master else []:
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if cmd.startswith(b"nginx: worker process") \
                    and b"shutting down" not in cmd:
                pids.append(pid)
        return pids

    def wait_ready(self, timeout=START_WAIT, exclude=()):
        """Waits until `workers` workers (none in exclude) serve requests."""
        def ready():
            if self.proc.poll() is not None:
                raise RuntimeError("nginx exited with %s:\n%s%s" % (
                    self.proc.returncode, self.log_text(),
                    self.stderr_text()))
            pids = [p for p in self.worker_pids() if p not in exclude]
            if len(pids) != self.workers:
                return None
            states = [in_event_loop(p) for p in pids]
            if None in states:              # /proc/PID/syscall unreadable
                return self._probe()
            return all(states) and self._probe()
        return wait_for(ready, timeout)

    def _probe(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port),
                                          timeout=1):
                return True
        except OSError:
            return False

    def control(self, args):
        """`nginx -s ARG`"""
        return subprocess.run(self.command() + ["-s", args],
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              timeout=30, env=nginx_env())

    def stop(self, sig=signal.SIGTERM, timeout=10):
        """Stops nginx; returns True if it exited by itself in time."""
        if self.proc is None or self.proc.poll() is not None:
            self._close_stderr()
            return True
        workers = self.worker_pids()
        try:
            self.proc.send_signal(sig)
            self.proc.wait(timeout)
            clean = True
        except subprocess.TimeoutExpired:
            clean = False
            self.proc.kill()
            self.proc.wait()
        for pid in workers:             # never leave a worker behind
            if alive(pid):
                clean = False
                os.kill(pid, signal.SIGKILL)
        self._close_stderr()
        return clean

    def _close_stderr(self):
        if self.stderr:
            self.stderr.close()
            self.stderr = None

    def cleanup(self):
        if self in Nginx.instances:
            Nginx.instances.remove(self)
        if not KEEP:
            shutil.rmtree(self.prefix, ignore_errors=True)

    # -- HTTP --

    def request(self, method, path, headers=None, body=None, timeout=30,
                conn=None):
        return request(self.port, method, path, headers, body, timeout, conn)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def raw(self, data, timeout=10, port=None):
        return raw(port or self.port, data, timeout)

    # -- the error log --

    def log_size(self):
        try:
            return os.path.getsize(self.log)
        except OSError:
            return 0

    def log_text(self, since=0):
        try:
            with open(self.log, "rb") as f:
                f.seek(since)
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stderr_text(self):
        try:
            with open(self.path("logs", "stderr.log"), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_lines(self, pattern, since=0):
        return [l for l in self.log_text(since).splitlines()
                if re.search(pattern, l)]

    def log_problems(self, since=0, allowed=()):
        """[alert]/[crit]/[error]/[emerg] lines after offset `since` that
        match none of the `allowed` regexes."""
        return [l for l in self.log_text(since).splitlines()
                if PROBLEM.search(l)
                and not any(re.search(a, l) for a in allowed)]

    def wait_log(self, pattern, since=0, timeout=60):
        """The lines after offset `since` that match pattern, once there
        are any (None after `timeout`: generous, as a line a handler's
        failure writes comes late on a loaded machine)."""
        return wait_for(lambda: self.log_lines(pattern, since), timeout)


LAUNCHER = str(ROOT / "bin" / "nginx-jvm")


class Launcher(Nginx):
    """`nginx-jvm run ARGS` as a user runs it, on a free port of 127.0.0.1,
    started in its own session and stopped with SIGTERM (what Ctrl-C does).
    Its nginx writes the error log to stderr, kept in a temporary file, so
    that the error log check of every test covers it as any Nginx's.

    mode: --mode, with the JDK of jvm_mode virtual (coloop) as $JAVA_HOME
    for "virtual" ("coloop"). env: variables added to the launcher's
    environment. cwd: where it starts (the checkout's top, as the examples'
    READMEs say).
    """

    def __init__(self, args, mode="loop", workers=1, env=None,
                 command=LAUNCHER, cwd=ROOT, startup_allow=()):
        self.own(tempfile.mkdtemp(prefix="nginx-jvm-launcher-"), workers,
                 mode, startup_allow)
        # its nginx's error log goes to the launcher's stderr, kept here
        self.log = os.path.join(self.prefix, "stderr.log")
        self.args = [command, "run", "--port", str(self.port),
                     "--workers", str(workers)] + list(args)
        if mode != "loop":
            self.args += ["--mode", mode]
        self.env = dict(os.environ, **(env or {}))
        self.cwd = cwd
        if mode == "virtual":
            self.env["JAVA_HOME"] = str(Path(jdk21_libjvm()).parents[2])
        if mode == "coloop":
            self.env["JAVA_HOME"] = str(Path(COLOOP_LIBJVM).parents[2])
        Nginx.instances.append(self)

    def start(self, timeout=START_WAIT, wait=True):
        """Starts the launcher and waits until its workers serve (a first
        start builds the class cache: compiling Compojure takes a while on
        a busy machine)."""
        self.stderr = open(self.log, "ab")
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL,
                                     stderr=self.stderr, env=self.env,
                                     cwd=self.cwd, start_new_session=True)
        if wait and not self.wait_ready(timeout=timeout):
            self.stop()
            raise RuntimeError("the launcher did not get ready:\n"
                               + self.log_text())
        return self

    @property
    def master_pid(self):
        """nginx's master: the launcher's child."""
        masters = children(self.proc.pid)
        return masters[0] if masters else None

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Stops the launcher (which stops nginx and removes its prefix);
        returns True if everything exited by itself in time."""
        if self.proc is None or self.proc.poll() is not None:
            self._close_stderr()
            return True
        pids = [p for p in (self.master_pid,) if p] + self.worker_pids()
        try:
            self.proc.send_signal(sig)
            self.proc.wait(timeout)
            clean = self.proc.returncode == 0
        except subprocess.TimeoutExpired:
            clean = False
            self.proc.kill()
            self.proc.wait()
        for pid in pids:                # never leave nginx behind
            if alive(pid):
                clean = False
                os.kill(pid, signal.SIGKILL)
        self._close_stderr()
        return clean

    def stderr_text(self):
        return ""                       # it is the log


# --- EDN, as printed by pr-str ---------------------------------------------

class Keyword(str):
    """A Clojure keyword, kept with its colon: Keyword(":get")."""


_EDN_TOKEN = re.compile(r"""
    [\s,]*(?:
      (?P<open>\#\{|[\[{(])
    | (?P<close>[\]})])
    | "(?P<string>(?:[^"\\]|\\.)*)"
    | (?P<atom>[^\s,\[\]{}()"]+)
    )""", re.X | re.S)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\",
            "b": "\b", "f": "\f"}


def _unescape(s):
    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)",
                  lambda m: chr(int(m.group(1)[1:], 16))
                  if m.group(1).startswith("u") and len(m.group(1)) == 5
                  else _ESCAPES.get(m.group(1), m.group(1)), s)


def _atom(a):
    if a == "nil":
        return None
    if a in ("true", "false"):
        return a == "true"
    if a.startswith(":"):
        return Keyword(a)
    if re.fullmatch(r"[-+]?\d+N?", a):
        return int(a.rstrip("N"))
    if re.fullmatch(r"[-+]?\d+(\.\d*)?([eE][-+]?\d+)?M?", a):
        return float(a.rstrip("M"))
    return a                        # a symbol: keep its name


def read_edn(text):
    """Reads one EDN value: maps become dicts, vectors and lists lists,
    sets frozensets, keywords Keyword, nil None."""
    tokens = [(m.lastgroup, m.group(m.lastgroup))
              for m in _EDN_TOKEN.finditer(text.strip())]
    pos = 0

    def value():
        nonlocal pos
        kind, tok = tokens[pos]
        pos += 1
        if kind == "string":
            return _unescape(tok)
        if kind == "atom":
            return _atom(tok)
        if kind == "close":
            raise ValueError("unexpected " + tok)
        items = []
        while tokens[pos][0] != "close":
            items.append(value())
        pos += 1
        if tok == "{":
            return dict(zip(items[::2], items[1::2]))
        if tok == "#{":
            return frozenset(items)
        return items

    result = value()
    if pos != len(tokens):
        raise ValueError("trailing text after EDN value")
    return result
