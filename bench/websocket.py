#!/usr/bin/env python3
"""The WebSocket benchmark: nginx-jvm's echo listeners side by side with
Jetty 12's WebSocket server, alone and behind nginx `proxy_pass`.

    bench/websocket.py [--quick] [--servers jvm-ring,jetty] [--conns 100,1000]
                       [--inflight 1,8]
                       [--duration 5] [--rounds 3] [--idle 10000]
                       [--cycles 10000] [--no-echo] [--no-idle] [--no-cycles]
                       [--out FILE]

What it measures, the servers interleaved (A B C D E, A B C D E, ...):
  - echo: messages per second and latency percentiles, with N
    connections each keeping --inflight 32-byte text messages outstanding
    (1: send one, wait for its echo; 8: send eight, then one more per echo
    received, the echoes checked in order), for --duration seconds after a
    1 s warm-up; the servers' and the client's CPU during the measured
    window;
  - idle: the servers' resident memory (every process of the server) before
    and after opening --idle WebSockets (one echo each, then idle), per
    connection, and the JVMs' live heap (jcmd GC.class_histogram) with the
    sockets open and after they are closed;
  - cycles: --cycles open / echo / close cycles against nginx-jvm, twice:
    worker RSS, open fds and live heap at 0, N and 2N cycles.

The load client is bench/ws/wsload (Go, standard library only: a minimal
RFC 6455 client), built here with `go build`; --client-check also runs a
Python asyncio `websockets` client for comparison.  Every server process is
our child, started in a temporary prefix on a free port of 127.0.0.1 and
stopped by its PID.
"""

import argparse
import asyncio
import datetime
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchsuite.load import rss_kb                            # noqa: E402
from benchsuite import servers                                # noqa: E402
from benchsuite.servers import children, free_port            # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
WS = ROOT / "bench" / "ws"
JAR = BUILD / "nginx-jvm.jar"
NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")
JDK17 = os.environ.get("BENCH_JDK17", "/usr/lib/jvm/java-17-openjdk-amd64")
HOST = "127.0.0.1"
CLK_TCK = os.sysconf("SC_CLK_TCK")

SERVERS = {
    "jvm-ring": "nginx-jvm, Ring echo listener (`ring.websocket`) on the event loop",
    "jvm-java": "nginx-jvm, Java `nginx.jvm.WebSocketListener` echo on the event loop, no Clojure",
    "jvm-pool": "nginx-jvm, the Ring echo, `jvm_mode pool`",
    "jetty": "Jetty 12.0.16 WebSocket server (annotated echo endpoint), JDK 17, default flags",
    "nginx-jetty": "nginx `proxy_pass` (HTTP/1.1, Upgrade/Connection) to a Jetty like the one above",
    "enso": "enso (`make bench-peers`), its listener map and its own socket's send, JDK 25, default options",
    "http-kit": "http-kit (`make bench-peers`), `as-channel` and `send!`, `:thread 2`, JDK 17",
}
# Servers that are one JVM process of their own (no nginx workers)
JVM_PROCESSES = ("jetty", "enso", "http-kit")
# The peers bench/peers/build.sh builds: skipped, with a line, when not built
PEERS = ("enso", "http-kit")
JDK25 = os.environ.get("BENCH_JDK25", "/usr/lib/jvm/temurin-25-jdk-amd64")
# nginx-jvm servers: name -> (handler, the writer's options for it)
NGINX_JVM = {
    "jvm-ring": ("wsbench.echo/handler", []),
    "jvm-java": ("wsbench.JavaEcho", []),
    "jvm-pool": ("wsbench.echo/handler", ["--mode", "pool"]),
}
# every JVM gets these, so that jcmd can read its heap without a signal
# (nginx-jvm's JVMs run with -Xrs, and SIGQUIT would make a worker quit;
# their attach mechanism is off unless the options turn it on),
# and whose full GC (only jcmd's) leaves no dead objects behind as fillers
ATTACH = ["-XX:+StartAttachListener", "-XX:-DisableAttachMechanism",
          "-XX:MarkSweepDeadRatio=0"]

# 10,000 proxied WebSockets are 20,000 descriptors, and one worker may get
# most of them: as many as this sandbox's hard limit allows
CONNECTIONS = 20000
# the nginx-jvm servers' configs come from the one writer (bin/nginx-jvm
# config, through benchsuite.servers.writer_conf) with these options;
# nginx-jetty's nginx has the same settings, written out as the bench
# suite's plain nginx has them (servers.MAIN_CONF, HTTP_CONF), but for
# worker_connections; bench/tests/test_bench_configs.py checks they match
OPTIONS = ["--connections", str(CONNECTIONS),
           "--main", "worker_rlimit_nofile 20000;",
           "--http", "keepalive_timeout 300s;",
           "--jvm-path", "%s/lib/server/libjvm.so" % JDK17] + [
               x for o in ATTACH for x in ("--jvm-option", o)]
MAIN_CONF = servers.MAIN_CONF.replace(
    "worker_connections 16384;", "worker_connections %d;" % CONNECTIONS)
assert "worker_connections %d;" % CONNECTIONS in MAIN_CONF
HTTP_CONF = servers.HTTP_CONF


def log(*a):
    print("ws-bench:", *a, file=sys.stderr, flush=True)


def nginx_conf(name, port, work, jetty_port=None):
    """The nginx.conf of server `name` (jvm-* or nginx-jetty), whose prefix
    is work/name."""
    if name in NGINX_JVM:
        handler, options = NGINX_JVM[name]
        # the writer adds nginx-jvm.jar, and Clojure for a Ring handler
        classpath = ([BUILT / "java-classes"] if name == "jvm-java"
                     else [WS / "ring"])
        return servers.writer_conf(Path(work) / name, port, handler,
                                   classpath, options + OPTIONS)
    locations = (
        "        location / {\n"
        "            proxy_pass http://%s:%d;\n"
        "            proxy_http_version 1.1;\n"
        "            proxy_set_header Upgrade $http_upgrade;\n"
        "            proxy_set_header Connection \"upgrade\";\n"
        "            proxy_read_timeout 600s;\n"
        "            proxy_send_timeout 600s;\n"
        "        }\n" % (HOST, jetty_port))
    return ("%shttp {\n%s    server {\n        listen %s:%d backlog=4096;\n"
            "%s    }\n}\n" % (MAIN_CONF, HTTP_CONF, HOST, port, locations))


# --- building what is measured ---------------------------------------------

BUILT = None       # where prepare() put what it built


def prepare(work):
    """The Go client, Jetty's jars and echo class, the Java echo: in `work`."""
    global BUILT
    BUILT = work
    log("building bench/ws/wsload (go build)")
    subprocess.run(["go", "build", "-o", str(work / "wsload"), "."],
                   cwd=WS / "wsload", check=True)
    log("Jetty 12 jars (mvn dependency:copy-dependencies)")
    subprocess.run(["mvn", "-B", "-q", "-f", str(WS / "jetty" / "pom.xml"),
                    "dependency:copy-dependencies",
                    "-DoutputDirectory=%s" % (work / "jetty-lib")],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([JDK17 + "/bin/javac", "-nowarn", "--release", "17",
                    "-cp", str(work / "jetty-lib") + "/*",
                    "-d", str(work / "jetty-classes"),
                    str(WS / "jetty" / "src" / "wsbench" / "JettyEcho.java")],
                   check=True)
    subprocess.run([JDK17 + "/bin/javac", "-nowarn", "--release", "17",
                    "-cp", str(JAR), "-d", str(work / "java-classes"),
                    str(WS / "java" / "wsbench" / "JavaEcho.java")],
                   check=True)


# --- servers ----------------------------------------------------------------

class Server:
    def __init__(self, name, port, proc, log_path, behind=None):
        self.name, self.port, self.proc, self.log = name, port, proc, log_path
        self.behind = behind

    def pids(self):
        """Every process of the server (nginx-jetty: its Jetty's too)."""
        pids = [self.proc.pid] + children(self.proc.pid)
        return pids + (self.behind.pids() if self.behind else [])

    def jvm_pids(self):
        if self.name in JVM_PROCESSES:
            return [self.proc.pid]
        if self.name == "nginx-jetty":
            return self.behind.jvm_pids()
        return children(self.proc.pid)        # nginx-jvm workers

    def workers(self):
        return children(self.proc.pid) if self.name not in JVM_PROCESSES else []

    def url(self):
        return "ws://%s:%d/ws" % (HOST, self.port)


def start_jetty(work, tag):
    port = free_port()
    log_path = work / ("%s.log" % tag)
    with open(log_path, "w") as out:
        proc = subprocess.Popen(
            [JDK17 + "/bin/java"] + ATTACH + ["-cp",
             "%s/*:%s" % (BUILT / "jetty-lib", BUILT / "jetty-classes"),
             "wsbench.JettyEcho", HOST, str(port)],
            stdout=out, stderr=out, start_new_session=True)
    return Server("jetty", port, proc, log_path)


def start_peer(name, work):
    """enso or http-kit as bench/peers/build.sh built them, with the echo
    handler of bench/ws/ring for each."""
    port, d = free_port(), servers.PEERS_DIR / name
    if name == "enso":
        cp = [d / "classes", d / "src" / "src" / "clj"]
        expr = ("(require 's-exp.enso 'wsbench.enso)"
                "(s-exp.enso/run-server wsbench.enso/handler"
                " {:host \"%s\" :port %d})@(promise)" % (HOST, port))
        jdk = JDK25
    else:
        cp = [d / "classes", d / "src" / "src"]
        expr = ("(require 'org.httpkit.server 'wsbench.httpkit)"
                "(org.httpkit.server/run-server wsbench.httpkit/handler"
                " {:ip \"%s\" :port %d :thread 2})@(promise)" % (HOST, port))
        jdk = JDK17
    cp += [BUILD / "lib" / "*", WS / "ring"]
    log_path = work / ("%s.log" % name)
    with open(log_path, "w") as out:
        proc = subprocess.Popen(
            [jdk + "/bin/java"] + ATTACH + [
                "-cp", ":".join(map(str, cp)), "clojure.main", "-e", expr],
            stdout=out, stderr=out, start_new_session=True)
    return Server(name, port, proc, log_path)


def start_nginx(name, work, jetty_port=None):
    port, prefix = free_port(), work / name
    for d in ("logs", "tmp"):
        (prefix / d).mkdir(parents=True, exist_ok=True)
    conf = prefix / "nginx.conf"
    conf.write_text(nginx_conf(name, port, work, jetty_port))
    with open(prefix / "logs" / "stderr.log", "w") as out:
        proc = subprocess.Popen([NGINX, "-p", "%s/" % prefix, "-c", str(conf),
                                 "-g", "daemon off;"], stdout=out, stderr=out,
                                start_new_session=True)
    return Server(name, port, proc, prefix / "logs" / "error.log")


def handshake_ok(port):
    """True when a WebSocket handshake to the port answers 101."""
    try:
        with socket.create_connection((HOST, port), timeout=5) as s:
            s.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                      b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                      b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
            return s.recv(100).startswith(b"HTTP/1.1 101")
    except OSError:
        return False


def wait_ready(server, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError("%s exited (%s): see %s" % (
                server.name, server.proc.returncode, server.log))
        if handshake_ok(server.port) and (
                server.name in JVM_PROCESSES or len(server.workers()) == 2):
            return
        time.sleep(0.3)
    raise RuntimeError("%s not ready in %d s" % (server.name, timeout))


class Fleet:
    def __init__(self, names, work):
        self.names, self.work = names, work
        work.mkdir(parents=True, exist_ok=True)
        self.servers, self.procs = {}, []

    def __enter__(self):
        try:
            for name in self.names:
                if name == "jetty":
                    s = start_jetty(self.work, "jetty")
                elif name in PEERS:
                    s = start_peer(name, self.work)
                elif name == "nginx-jetty":
                    # a Jetty of its own, so that its memory is its own
                    j = start_jetty(self.work, "jetty-behind-nginx")
                    self.procs.append(j.proc)
                    wait_ready(j)
                    s = start_nginx(name, self.work, j.port)
                    s.behind = j
                else:
                    s = start_nginx(name, self.work)
                self.procs.append(s.proc)
                self.servers[name] = s
            for s in self.servers.values():
                wait_ready(s)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 20
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for pid in [p.pid] + children(p.pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                p.wait()


# --- /proc and jcmd ----------------------------------------------------------

def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])   # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total / CLK_TCK


def fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return 0


def parse_histogram(text):
    """jcmd GC.class_histogram's text -> (total bytes, {class: (count, bytes)})
    of the nginx.jvm, wsbench, clojure.lang.PersistentArrayMap and Jetty
    websocket classes (what a socket is made of)."""
    total, classes = None, {}
    for line in text.splitlines():
        m = re.match(r"\s*\d+:\s+(\d+)\s+(\d+)\s+(\S+)", line)
        if m:
            count, size, cls = int(m.group(1)), int(m.group(2)), m.group(3)
            classes[cls] = (count, size)
        m = re.match(r"Total\s+(\d+)\s+(\d+)", line.strip())
        if m:
            total = int(m.group(2))
    return total, classes


def live_heap(pids):
    """{pid: (live bytes, classes)} through jcmd GC.class_histogram (a full
    GC first), only for JVMs whose attach socket exists already."""
    out = {}
    for pid in pids:
        if not os.path.exists("/tmp/.java_pid%d" % pid):
            continue            # never signal an nginx worker
        r = subprocess.run([JDK17 + "/bin/jcmd", str(pid),
                            "GC.class_histogram"], capture_output=True,
                           text=True, timeout=120)
        total, classes = parse_histogram(r.stdout)
        if total is not None:
            out[pid] = (total, classes)
    return out


def heap_range(pid):
    """The Java heap's reserved address range, from jcmd GC.heap_info (no
    GC), or None."""
    if not os.path.exists("/tmp/.java_pid%d" % pid):
        return None
    r = subprocess.run([JDK17 + "/bin/jcmd", str(pid), "GC.heap_info"],
                       capture_output=True, text=True, timeout=60)
    # G1: "[start, end)"; Serial: each generation's "[start, top, end)"
    text = r.stdout.split("Metaspace")[0]
    addrs = [int(x, 16) for x in re.findall(r"0x([0-9a-f]+)", text)]
    return (min(addrs), max(addrs)) if addrs else None


def heap_rss_kb(pid, rng):
    """Resident kB of the mappings inside the Java heap's range."""
    if rng is None:
        return 0
    total, inside = 0, False
    try:
        with open("/proc/%d/smaps" % pid) as f:
            for line in f:
                m = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
                if m:
                    lo, hi = int(m.group(1), 16), int(m.group(2), 16)
                    inside = lo >= rng[0] and hi <= rng[1]
                elif inside and line.startswith("Rss:"):
                    total += int(line.split()[1])
    except OSError:
        pass
    return total


def per_class_delta(open_h, closed_h, top=8):
    """The classes that grew most between two live_heap() results."""
    grow = {}
    for pid, (_, classes) in open_h.items():
        before = closed_h.get(pid, (0, {}))[1]
        for cls, (n, b) in classes.items():
            n0, b0 = before.get(cls, (0, 0))
            g = grow.setdefault(cls, [0, 0])
            g[0] += n - n0
            g[1] += b - b0
    return sorted(([c, n, b] for c, (n, b) in grow.items()),
                  key=lambda x: -x[2])[:top]


# --- the load client ----------------------------------------------------------

def echo_key(conns, inflight):
    """results["echo"]'s key of a run: the connections, and "xN" for N
    messages in flight (none for 1, as results from before --inflight)."""
    return str(conns) if inflight == 1 else "%dx%d" % (conns, inflight)


def parse_echo_key(key):
    """echo_key's inverse: (connections, messages in flight)."""
    conns, _, inflight = key.partition("x")
    return int(conns), int(inflight or 1)


def run_echo(wsload, server, conns, duration, warmup=1.0, inflight=1):
    """One wsload echo run; the server's CPU over the measured window."""
    proc = subprocess.Popen(
        [str(wsload), "echo", "-url", server.url(), "-conns", str(conns),
         "-duration", str(duration), "-warmup", str(warmup),
         "-inflight", str(inflight)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    marks = {}

    def watch():
        for line in proc.stderr:
            if line.strip() in ("start", "stop"):
                marks[line.strip()] = cpu_seconds(server.pids())
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    out = proc.stdout.read()          # stderr is the watcher's alone
    proc.wait(60)
    t.join(5)
    res = json.loads(out.strip().splitlines()[-1])
    if "start" in marks and "stop" in marks and res["round_trips"]:
        cpu = marks["stop"] - marks["start"]
        res["server_cpu_pct"] = 100 * cpu / res["seconds"]
        res["server_cpu_us_per_rt"] = 1e6 * cpu / res["round_trips"]
    return res


def echo_phase(fleet, wsload, conn_levels, rounds, duration, results,
               inflight_levels=(1,)):
    names = list(fleet.servers)
    log("echo warm-up: 3 s each")
    for name in names:
        run_echo(wsload, fleet.servers[name], 100, 3, 0.5)
    for conns, inflight in [(c, n) for c in conn_levels
                            for n in inflight_levels]:
        for r in range(rounds):
            for name in names:
                res = run_echo(wsload, fleet.servers[name], conns, duration,
                               inflight=inflight)
                log("echo c=%d in flight %d round %d %-12s %8.0f msg/s p50 "
                    "%.2f p99 %.2f ms client %.0f%% server %.0f%% errors "
                    "%d/%d" % (
                        conns, inflight, r + 1, name, res["rps"],
                        res["p50_ms"],
                        res["p99_ms"], res["client_cpu_pct"],
                        res.get("server_cpu_pct", 0), res["connect_errors"],
                        res["errors"]))
                results["echo"].setdefault(
                    echo_key(conns, inflight), {}).setdefault(
                    name, []).append(res)
                save(results)


def idle_round(server, wsload, count, heaps):
    """Opens `count` WebSockets (one echo each), holds them 5 s idle,
    measures, closes them: one round of the idle measurement."""
    time.sleep(2)
    pids = server.pids()
    before = {p: rss_kb(p) for p in pids}
    heap_before = {p: heap_rss_kb(p, heaps.get(p)) for p in heaps}
    proc = subprocess.Popen(
        [str(wsload), "idle", "-url", server.url(), "-conns", str(count)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    opened = json.loads(proc.stdout.readline())
    time.sleep(5)
    after = {p: rss_kb(p) for p in pids}
    heap_after = {p: heap_rss_kb(p, heaps.get(p)) for p in heaps}
    fds = {p: fd_count(p) for p in server.workers() or server.jvm_pids()}
    heap_open = live_heap(server.jvm_pids())
    proc.stdin.close()
    closed = json.loads(proc.stdout.readline())
    proc.wait(120)
    time.sleep(3)
    heap_closed = live_heap(server.jvm_pids())
    n = opened["open"]
    m = {
        "open": n, "connect_errors": opened["connect_errors"],
        "first_error": opened["first_error"],
        "open_seconds": opened["seconds"], "alive_at_end": closed["alive"],
        "rss_before_kb": before, "rss_after_kb": after,
        "rss_before_total_kb": sum(before.values()),
        "rss_after_total_kb": sum(after.values()),
        "heap_rss_before_kb": sum(heap_before.values()),
        "heap_rss_after_kb": sum(heap_after.values()),
        "fds_open": fds,
        "heap_open_bytes": sum(v[0] for v in heap_open.values()),
        "heap_closed_bytes": sum(v[0] for v in heap_closed.values()),
        "heap_growth_classes": per_class_delta(heap_open, heap_closed),
    }
    if n:
        m["kb_per_conn"] = (m["rss_after_total_kb"]
                            - m["rss_before_total_kb"]) / n
        m["heap_rss_kb_per_conn"] = (m["heap_rss_after_kb"]
                                     - m["heap_rss_before_kb"]) / n
        if heap_open and heap_closed:
            m["heap_bytes_per_conn"] = (m["heap_open_bytes"]
                                        - m["heap_closed_bytes"]) / n
    return m


def idle_phase(fleet, wsload, count, results):
    """Two rounds per server: the first on a server that never held that
    many sockets, the second after the first's were closed (steady state)."""
    for name, server in fleet.servers.items():
        heaps = {p: heap_range(p) for p in server.jvm_pids()}
        results["idle"][name] = []
        for rnd in (1, 2):
            log("idle: %s, %d WebSockets, round %d" % (name, count, rnd))
            m = idle_round(server, wsload, count, heaps)
            log("idle %s round %d: %d open, %.2f KB RSS each (Java heap's "
                "RSS %.2f KB), live heap %s B each" % (
                    name, rnd, m["open"], m.get("kb_per_conn", 0),
                    m.get("heap_rss_kb_per_conn", 0),
                    "%.0f" % m["heap_bytes_per_conn"]
                    if "heap_bytes_per_conn" in m else "?"))
            results["idle"][name].append(m)
            save(results)


def cycles_phase(fleet, wsload, count, results):
    for name, server in fleet.servers.items():
        if not name.startswith("jvm-"):
            continue
        points = []

        def point(done):
            workers = server.workers()
            heap = live_heap(workers)
            time.sleep(1)
            points.append({
                "cycles": done,
                "rss_kb": sum(rss_kb(p) for p in workers),
                "fds": sum(fd_count(p) for p in workers),
                "heap_bytes": sum(v[0] for v in heap.values()),
                "sockets": sum(sum(n for c, (n, _) in v[1].items()
                                   if c.startswith("nginx.jvm.") and
                                   c.endswith("$Socket"))
                               for v in heap.values()),
            })
        # one short batch first, so that "0" is after the first sockets
        subprocess.run([str(wsload), "cycles", "-url", server.url(), "-n",
                        "200"], capture_output=True, check=True)
        point(0)
        for i in (1, 2):
            r = subprocess.run([str(wsload), "cycles", "-url", server.url(),
                                "-n", str(count)], capture_output=True,
                               text=True, check=True)
            res = json.loads(r.stdout.strip().splitlines()[-1])
            point(i * count)
            points[-1].update(ok=res["ok"], errors=res["errors"],
                              first_error=res["first_error"],
                              seconds=res["seconds"])
            log("cycles %s %d: %s" % (name, i * count, points[-1]))
        results["cycles"][name] = points
        save(results)


def python_client_check(server, conns, duration):
    """Round trips per second of a Python asyncio `websockets` client doing
    what wsload echo does, and its CPU use: is Python fast enough?"""
    code = r'''
import asyncio, json, resource, sys, time
import websockets
url, conns, duration = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
count = 0
async def one(i, stop):
    global count
    async with websockets.connect(url, compression=None, max_queue=None) as ws:
        msg = ("%08d" % i).ljust(32, "a")
        while time.monotonic() < stop:
            await ws.send(msg)
            await ws.recv()
            count += 1
async def main():
    t0 = time.monotonic()
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    await asyncio.gather(*(one(i, t0 + duration) for i in range(conns)))
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    el = time.monotonic() - t0
    cpu = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
    print(json.dumps({"rps": count / el, "client_cpu_pct": 100 * cpu / el}))
asyncio.run(main())
'''
    r = subprocess.run([sys.executable, "-c", code, server.url(), str(conns),
                        str(duration)], capture_output=True, text=True,
                       timeout=duration + 120)
    if r.returncode != 0:
        return {"error": r.stderr[-300:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


# --- results ----------------------------------------------------------------

RESULTS = None
RESULTS_PATH = None


def save(results):
    if RESULTS_PATH:
        RESULTS_PATH.write_text(json.dumps(results, indent=1))


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def inflight_table(echo):
    """The report's summary of results["echo"]: per connection count and
    server, the median messages/s, server CPU per message and p99 at each
    number of messages in flight, side by side (a pure function; no lines
    when every run had one in flight)."""
    levels = sorted({parse_echo_key(k)[1] for k in echo})
    if levels == [1] or not levels:
        return []
    out = ["## Echo by messages in flight per connection (medians)\n",
           "| connections | server | " + " | ".join(
               "%d in flight: msg/s | server CPU µs/msg | p99 ms" % n
               for n in levels) + " |",
           "|---|---|" + "---|---|---|" * len(levels)]
    for conns in sorted({parse_echo_key(k)[0] for k in echo}):
        names = []
        for n in levels:
            for name in echo.get(echo_key(conns, n), {}):
                if name not in names:
                    names.append(name)
        for name in names:
            cells = []
            for n in levels:
                runs = echo.get(echo_key(conns, n), {}).get(name)
                if not runs:
                    cells += ["-", "-", "-"]
                    continue
                cpu = med([r.get("server_cpu_us_per_rt") for r in runs])
                cells += ["%.0f" % med([r["rps"] for r in runs]),
                          "%.1f" % cpu if cpu is not None else "-",
                          "%.2f" % med([r["p99_ms"] for r in runs])]
            out.append("| %d | %s | %s |" % (conns, name, " | ".join(cells)))
    out.append("")
    return out


def report(results):
    """The Markdown report of a results dict (a pure function)."""
    out = []
    a = results["args"]
    out.append("# WebSocket benchmark, %s\n" % results["date"])
    out.append("Command: `%s`\n" % results["command"])
    out.append("Machine: %s; nginx %s; %s. Servers, each 2 workers (Jetty: "
               "its default thread pool):\n" % (
                   results["machine"], results["nginx"], results["java"]))
    for n in results["servers"]:
        out.append("- `%s`: %s" % (n, SERVERS[n]))
    out.append("")
    echo = results.get("echo") or {}
    out += inflight_table(echo)
    for key, by in echo.items():
        conns, inflight = parse_echo_key(key)
        out.append("## Echo, %s connections, %d message%s in flight each "
                   "(%s rounds of %s s, medians)\n" % (
                       conns, inflight, "" if inflight == 1 else "s",
                       a["rounds"], a["duration"]))
        out.append("| server | messages/s | vs jetty | vs nginx-jetty "
                   "| p50 ms | p99 ms | p99.9 ms | server CPU µs/message "
                   "| server CPU % | client CPU % | errors |")
        out.append("|---|---|---|---|---|---|---|---|---|---|---|")
        base = {b: med([r["rps"] for r in by.get(b, [])])
                for b in ("jetty", "nginx-jetty")}
        for name, runs in by.items():
            rps = med([r["rps"] for r in runs])
            ratio = lambda b: ("%.2f" % (rps / base[b])) if base[b] else "-"
            out.append("| %s | %.0f | %s | %s | %.2f | %.2f | %.2f | %.1f | "
                       "%.0f | %.0f | %d |" % (
                           name, rps, ratio("jetty"), ratio("nginx-jetty"),
                           med([r["p50_ms"] for r in runs]),
                           med([r["p99_ms"] for r in runs]),
                           med([r["p999_ms"] for r in runs]),
                           med([r.get("server_cpu_us_per_rt") for r in runs])
                           or 0,
                           med([r.get("server_cpu_pct") for r in runs]) or 0,
                           med([r["client_cpu_pct"] for r in runs]),
                           sum(r["errors"] + r["connect_errors"]
                               for r in runs)))
        out.append("\nEach round's messages/s: " + "; ".join(
            "%s %s" % (n, ", ".join("%.0f" % r["rps"] for r in runs))
            for n, runs in by.items()) + "\n")
    if results.get("python_client"):
        pc = results["python_client"]
        out.append("## The load client\n")
        out.append("Python asyncio `websockets` %s, %s connections, against "
                   "`%s`: %s round trips/s at %s%% of a core; the Go client "
                   "(bench/ws/wsload) against the same server in this run's "
                   "echo phase: median %s round trips/s at %s%% client CPU.\n"
                   % (pc.get("version"), pc.get("conns"), pc.get("server"),
                      "%.0f" % pc["rps"] if "rps" in pc else pc.get("error"),
                      "%.0f" % pc["client_cpu_pct"]
                      if "client_cpu_pct" in pc else "?",
                      pc.get("go_rps", "?"), pc.get("go_cpu", "?")))
    idle = results.get("idle") or {}
    if idle:
        out.append("## Memory per idle WebSocket (%s opened, one echo each, "
                   "then idle 5 s; round 1 on fresh servers, round 2 after "
                   "round 1's were closed)\n" % a["idle"])
        out.append("| server | round | open | RSS before MB | RSS after MB | "
                   "KB per WebSocket | of which Java heap's RSS | target | "
                   "JVM live heap per WebSocket |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        for name, rounds in idle.items():
            for rnd, m in enumerate(rounds, 1):
                kb = m.get("kb_per_conn")
                target = ("-" if not name.startswith("jvm-") else
                          ("PASS (<= 2 KB)" if kb is not None and kb <= 2
                           else "**FAIL** (> 2 KB)"))
                heap = m.get("heap_bytes_per_conn")
                out.append("| %s | %d | %d | %.1f | %.1f | %s | %s | %s | %s |"
                           % (name, rnd, m["open"],
                              m["rss_before_total_kb"] / 1024,
                              m["rss_after_total_kb"] / 1024,
                              "%.2f" % kb if kb is not None else "-",
                              "%.2f KB" % m["heap_rss_kb_per_conn"]
                              if "heap_rss_kb_per_conn" in m else "-",
                              target,
                              "%.0f B" % heap if heap is not None else "-"))
        out.append("\nWhere the live heap per socket goes (classes that grew "
                   "most with the sockets open, round 2, count and bytes):\n")
        for name, rounds in idle.items():
            m = rounds[-1]
            if m["heap_growth_classes"]:
                out.append("- %s: %s" % (name, "; ".join(
                    "%s %d / %d B" % (c, n, b)
                    for c, n, b in m["heap_growth_classes"][:6])))
        out.append("")
        for name, rounds in idle.items():
            for m in rounds:
                if m["connect_errors"] or m["alive_at_end"] != m["open"]:
                    out.append("- %s: %d failed to open (%s); %d of %d still "
                               "echoed at the end" % (
                                   name, m["connect_errors"],
                                   m["first_error"], m["alive_at_end"],
                                   m["open"]))
        out.append("")
    cyc = results.get("cycles") or {}
    if cyc:
        out.append("## Open/close cycles against nginx-jvm (open, one echo, "
                   "close handshake; 20 at a time)\n")
        out.append("| server | cycles | worker RSS MB | worker fds | live "
                   "heap MB | nginx.jvm WebSocket objects | errors |")
        out.append("|---|---|---|---|---|---|---|")
        for name, points in cyc.items():
            for p in points:
                out.append("| %s | %d | %.1f | %d | %.1f | %d | %s |" % (
                    name, p["cycles"], p["rss_kb"] / 1024, p["fds"],
                    p["heap_bytes"] / 1048576, p["sockets"],
                    p.get("errors", "-")))
        out.append("")
    errs = {k: v for k, v in (results.get("log_errors") or {}).items() if v}
    out.append("## Error logs\n")
    if not errs:
        out.append("No [error] (or worse) line and no exception in any "
                   "server's log.\n")
    for k, lines in errs.items():
        out.append("- %s: %d lines, first: `%s`" % (k, len(lines), lines[0]))
    return "\n".join(out)


def machine():
    try:
        model = re.search(r"model name\s*:\s*(.*)",
                          Path("/proc/cpuinfo").read_text()).group(1)
    except (OSError, AttributeError):
        model = "?"
    return "%d cores (%s), %d GiB" % (
        os.cpu_count(), model,
        os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 30)


def main():
    global RESULTS_PATH
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", default=",".join(SERVERS))
    p.add_argument("--conns", default="100,1000")
    p.add_argument("--inflight", default="1,8",
                   help="messages in flight per connection in the echo "
                   "runs, each level a run of its own")
    p.add_argument("--duration", type=float, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--idle", type=int, default=10000)
    p.add_argument("--cycles", type=int, default=10000)
    p.add_argument("--quick", action="store_true",
                   help="1 round of 3 s, 2,000 idle, 2,000 cycles")
    p.add_argument("--no-echo", action="store_true")
    p.add_argument("--no-idle", action="store_true")
    p.add_argument("--no-cycles", action="store_true")
    p.add_argument("--no-client-check", action="store_true")
    p.add_argument("--out", help="the Markdown report (default: "
                   "bench/results/YYYY-MM-DD-HHMM-websocket.md)")
    p.add_argument("--report-from", help="only write the report of a "
                   "results JSON file")
    args = p.parse_args()
    if args.report_from:
        print(report(json.loads(Path(args.report_from).read_text())))
        return
    if args.quick:
        args.duration, args.rounds, args.idle, args.cycles = 3, 1, 2000, 2000
    names = [n.strip() for n in args.servers.split(",") if n.strip()]
    for n in names:
        if n not in SERVERS:
            p.error("unknown server %s (known: %s)" % (n, ", ".join(SERVERS)))
    for n in [n for n in names if n in PEERS]:
        built, why = servers.peer_status(n)
        if why:
            log("%s: not run: %s" % (n, why))
            names.remove(n)
    now = datetime.datetime.now()
    out = Path(args.out) if args.out else (
        ROOT / "bench" / "results" / now.strftime("%Y-%m-%d-%H%M-websocket.md"))
    RESULTS_PATH = out.with_suffix(".json")
    nginx_v = subprocess.run([NGINX, "-v"], capture_output=True,
                             text=True).stderr.strip().split("/")[-1]
    java_v = subprocess.run([JDK17 + "/bin/java", "-version"],
                            capture_output=True, text=True).stderr.splitlines()
    results = {"date": now.strftime("%Y-%m-%d %H:%M"),
               "command": " ".join(["bench/websocket.py"] + sys.argv[1:]),
               "machine": machine(), "nginx": nginx_v,
               "java": java_v[1] if len(java_v) > 1 else "?",
               "servers": names, "args": vars(args),
               "echo": {}, "idle": {}, "cycles": {}}
    with tempfile.TemporaryDirectory(prefix="ws-bench-") as tmp:
        work = Path(tmp)
        prepare(work)
        wsload = work / "wsload"
        if not args.no_echo:
            log("starting %s" % ", ".join(names))
            with Fleet(names, work / "echo") as fleet:
                echo_phase(fleet, wsload,
                           [int(c) for c in args.conns.split(",")],
                           args.rounds, args.duration, results,
                           [int(n) for n in args.inflight.split(",")])
                if not args.no_client_check:
                    target = next((n for n in ("jvm-java", "jvm-ring")
                                   if n in fleet.servers), names[0])
                    log("Python client check against %s" % target)
                    pc = python_client_check(fleet.servers[target], 100,
                                             args.duration)
                    import websockets
                    runs = results["echo"].get("100", {}).get(target, [])
                    pc.update(version=websockets.__version__, conns=100,
                              server=target,
                              go_rps="%.0f" % med([r["rps"] for r in runs])
                              if runs else "?",
                              go_cpu="%.0f" % med([r["client_cpu_pct"]
                                                   for r in runs])
                              if runs else "?")
                    results["python_client"] = pc
                    log("Python client: %s" % pc)
                check_logs(fleet, results, "echo")
        if not (args.no_idle and args.no_cycles):
            # fresh servers: the echo phase's heap growth would hide the
            # memory the idle sockets take
            log("starting %s again" % ", ".join(names))
            with Fleet(names, work / "idle") as fleet:
                for s in fleet.servers.values():
                    run_echo(wsload, s, 100, 2, 0.5)      # a short warm-up
                if not args.no_idle:
                    idle_phase(fleet, wsload, args.idle, results)
                if not args.no_cycles:
                    cycles_phase(fleet, wsload, args.cycles, results)
                check_logs(fleet, results, "idle")
        save(results)
    text = report(results)
    out.write_text(text + "\n")
    print(text)
    log("report: %s (raw numbers: %s)" % (out, RESULTS_PATH))


def check_logs(fleet, results, phase):
    """The [error]-or-worse lines of the servers' logs, and exceptions."""
    for name, s in fleet.servers.items():
        logs = [s.log] + ([s.behind.log] if s.behind else [])
        found = results.setdefault("log_errors", {})[
            "%s (%s)" % (name, phase)] = []
        for lp in logs:
            try:
                lines = [l for l in Path(lp).read_text().splitlines()
                         if re.search(r"\[(error|crit|alert|emerg)\]"
                                      r"|Exception", l)]
            except OSError:
                lines = []
            found += lines[:20]


if __name__ == "__main__":
    main()
