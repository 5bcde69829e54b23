#!/usr/bin/env python3
"""Many idle connections (issue 37's "600,000 connections"): N/2 keep-alive
HTTP connections and N/2 WebSockets held open against nginx-jvm (or
http-kit), each asking again every 5 to 45 s, then one broadcast through a
topic to every WebSocket.

    bench/conns.py [--server nginx-jvm|http-kit] [--conns 600000]
                   [--workers W] [--clients C] [--listens L]
                   [--idle 60] [--time-limit 1500] [--json FILE]

What it does and reports:
  - the server: nginx-jvm with W workers (each with its JVM, jvm_mode loop,
    the Java handler bench/conns/java/connbench/Conns.java, the topic
    "bcast"), listening with `reuseport` on L addresses 127.0.0.1..L so that
    the kernel spreads connections evenly over the workers; or http-kit in
    one JVM process (bench/conns/clj/connbench/httpkit.clj, `make
    bench-peers`), whose limit here is one process's 20,000 descriptors;
  - C client processes (bench/ws/connload, Go, one epoll loop each, `go
    build` here), client i bound to 127.1.x.y of its own, N/C connections
    each: HTTP connections GET /ping, WebSockets send a short message the
    server echoes, each again every --min to --max seconds;
  - once all are open and --idle seconds have passed (every connection has
    asked again), memory: user = the sum of the server's processes' PSS
    (/proc/PID/smaps_rollup), kernel = the growth of /proc/meminfo Slab
    plus /proc/net/sockstat TCP `mem` pages (both ends of every loopback
    connection: the clients' sockets too), each per connection held;
  - GET /publish: the server stamps the time (ns since the epoch) and
    publishes "B<ns>" on the topic; every WebSocket's client stamps when it
    came: p50, p99 and max of the delivery time, and how many got it (must
    be N/2); the server's CPU seconds from publish to the last delivery;
  - errors: connects refused or reset, failed or timed-out requests,
    sockets closed early (counted by the clients), and the server log's
    [error]/[crit]/[alert]/[emerg] lines. The run fails (exit 1) if any.

Machine-wide settings, raised for the run only when they are too low, and
restored at the end (each change and its restoring said on stderr):
net.netfilter.nf_conntrack_max (the firewall's connection tracking follows
loopback connections on this machine, one entry per connection: 262,144 by
default, and a full table drops SYNs); net.ipv4.tcp_mem (pages all TCP
sockets may hold: during the broadcast every WebSocket's two ends may each
hold a page for a moment, so its maximum must be at least N pages); and
fs.file-max (two descriptors per connection, both ends being here).  Every
process is ours: started here, stopped by its PID.  --time-limit bounds the
whole run: past it everything is stopped and the run fails.
"""

import argparse
import json
import math
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchsuite import servers                                # noqa: E402
from benchsuite.servers import children, free_port            # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
JAR = BUILD / "nginx-jvm.jar"
NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")
JDK17 = os.environ.get("BENCH_JDK17", "/usr/lib/jvm/java-17-openjdk-amd64")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
# what one process may hold here, and what each keeps for itself
FD_LIMIT = 20000
# connections a worker or client gets by default: 600,000 on 32 workers
# and 32 clients, the fewest the descriptor limit allows (a worker holds
# its share, about 2.2 standard deviations more at the busiest of 32, and
# about 150 descriptors of its own: 19,200 of 20,000 at 600,000)
PER_PROCESS = 18750
# nginx closes idle keep-alive connections ("worker_connections are not
# enough, reusing connections", a [warn]) once fewer than a sixteenth of
# worker_connections are free: with 19,500, at about 18,280 connections a
# worker, below the 18,750 each of 32 workers holds at 600,000 (the full
# run of 2026-11-28 lost 15,486 connections so).  The descriptor limit
# (20,000), not worker_connections, is what bounds a worker's sockets.
WORKER_CONNECTIONS = 21000
TOPIC = "bcast"
WARMUP = "jvm_warmup /ping requests=5000 time=60s;"


def log(*a):
    print("conns:", *a, file=sys.stderr, flush=True)


# --- pure helpers (bench/tests/test_conns.py) --------------------------------

def plan(conns, workers=None, clients=None, per_process=PER_PROCESS):
    """How N connections are spread: (http, ws, workers, [(http, ws)] per
    client). Half are HTTP (the odd one too), half WebSockets."""
    if conns < 2:
        raise ValueError("--conns must be at least 2")
    http, ws = conns - conns // 2, conns // 2
    workers = workers or max(1, math.ceil(conns / per_process))
    clients = clients or max(1, math.ceil(conns / per_process))
    shares = []
    for i in range(clients):
        h = http // clients + (1 if i < http % clients else 0)
        w = ws // clients + (1 if i < ws % clients else 0)
        shares.append((h, w))
    if max(h + w for h, w in shares) > FD_LIMIT - 100:
        raise ValueError("%d clients cannot hold %d connections under %d "
                         "descriptors each: more --clients"
                         % (clients, conns, FD_LIMIT))
    return http, ws, workers, shares


def conntrack_needed(count, conns):
    """Entries the connection-tracking table must have room for: those in
    it now (other programs' connections, TIME_WAIT), one per connection of
    the run and a fifth more for the ones closing and reopening."""
    return count + int(1.2 * conns) + 10000


def client_source(i):
    """Client i's own loopback address: 127.1.0.1, ..., 127.1.0.200, 127.1.1.1."""
    return "127.1.%d.%d" % (i // 200, i % 200 + 1)


def parse_kv_kb(text, keys):
    """'Name:   123 kB' lines (meminfo, smaps_rollup) -> {name: kB}."""
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in keys:
            out[name] = int(rest.split()[0])
    return out


def parse_sockstat(text):
    """/proc/net/sockstat -> {'inuse', 'orphan', 'tw', 'alloc', 'mem'} of TCP."""
    for line in text.splitlines():
        if line.startswith("TCP:"):
            f = line.split()[1:]
            return {f[i]: int(f[i + 1]) for i in range(0, len(f) - 1, 2)}
    return {}


def parse_slabinfo(text):
    """/proc/slabinfo -> {cache: bytes} (objects allocated x object size)."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) > 4 and not line.startswith(("slabinfo", "#")):
            try:
                out[f[0]] = out.get(f[0], 0) + int(f[2]) * int(f[3])
            except ValueError:
                pass
    return out


def slab_growth(before, after, top=8):
    """The caches that grew most: [(cache, MB)]."""
    grew = {k: after[k] - before.get(k, 0) for k in after}
    return [(k, round(v / 1048576, 1)) for k, v in
            sorted(grew.items(), key=lambda kv: -kv[1])[:top] if v > 0]


def percentile(sorted_values, p):
    """The p-th percentile (nearest rank) of a sorted list; None if empty."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1,
                   math.ceil(p / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


def hist_merge(hists):
    """The clients' latency histograms ({"upper bound ms": count}) summed:
    {ms: count}."""
    out = {}
    for h in hists:
        for k, v in (h or {}).items():
            out[int(k)] = out.get(int(k), 0) + v
    return out


def hist_diff(after, before):
    """What a histogram gained between two samples of it."""
    return {k: v - before.get(k, 0) for k, v in after.items()
            if v - before.get(k, 0) > 0}


def hist_summary(h):
    """{"n", "p50_ms", "p99_ms", "max_ms"} of a histogram (each figure the
    upper bound of its bucket: exact to 16 ms, within an eighth above);
    None when empty."""
    n = sum(h.values())
    if not n:
        return None
    out, seen = {"n": n}, 0
    marks = [("p50_ms", math.ceil(0.5 * n)), ("p99_ms", math.ceil(0.99 * n)),
             ("max_ms", n)]
    for ms in sorted(h):
        seen += h[ms]
        while marks and seen >= marks[0][1]:
            out[marks.pop(0)[0]] = ms
    return out


def lat_text(s):
    return ("-" if not s else "p50 %s, p99 %s, max %s ms (%s)"
            % (s["p50_ms"], s["p99_ms"], s["max_ms"], s["n"]))


COUNTS = ("http_open", "ws_open", "connect_errors", "handshake_errors",
          "request_errors", "timeouts", "closed_early", "asks_http",
          "asks_ws", "bcast_got", "bcast_extra")
ERRORS = ("connect_errors", "handshake_errors", "request_errors", "timeouts",
          "closed_early")


def merge_reports(reports):
    """The clients' "report" objects -> totals, the first errors and the
    delivery times (ms: p50, p99, max)."""
    total = {k: sum(r.get(k, 0) for r in reports) for k in COUNTS}
    kinds = {}
    for r in reports:
        for k, v in (r.get("error_kinds") or {}).items():
            kinds[k] = kinds.get(k, 0) + v
    total["error_kinds"] = kinds
    for k in ("connect", "first", "ask"):
        total["hist_" + k] = hist_merge(r.get("lat_" + k) for r in reports)
    total["errors"] = sum(total[k] for k in ERRORS)
    total["first_errors"] = sorted({r["first_error"] for r in reports
                                    if r.get("first_error")})[:5]
    by_ns = {}
    for r in reports:
        for rd in r.get("rounds") or []:
            by_ns.setdefault(rd["ns"], []).extend(rd.get("lat_us") or [])
    total["rounds"] = []
    for ns in sorted(by_ns):
        lat = sorted(by_ns[ns])
        rd = {"ns": ns, "got": len(lat)}
        for name, p in (("p50", 50), ("p99", 99), ("max", 100)):
            rd[name + "_ms"] = percentile(lat, p) / 1000.0
        total["rounds"].append(rd)
    return total


def log_problems(text):
    """Lines of a server's log that are errors: nginx's [error] and worse,
    and the apps' own "broadcast send failed"."""
    bad = ("[error]", "[crit]", "[alert]", "[emerg]",
           "broadcast send failed", "Exception",
           # a [warn], but nginx closed idle connections to make room
           "worker_connections are not enough")
    return [l for l in text.splitlines() if any(b in l for b in bad)]


def listen_lines(conf, port, listens, warmup=WARMUP):
    """The writer's one `listen 127.0.0.1:PORT ...;` -> one per address
    127.0.0.1..L, each with reuseport (a socket per worker: the kernel
    spreads connections evenly, where one shared socket lets a busy worker
    take more than its worker_connections), and a jvm_warmup of /ping: 40
    cold JVMs compiling while the connections arrive (load average 67 on a
    shared core) left some without an answer for 60 s."""
    old = "listen 127.0.0.1:%d backlog=4096;" % port
    if old not in conf:
        raise ValueError("no %r in the writer's config" % old)
    new = "\n        ".join(["listen 127.0.0.%d:%d backlog=4096 reuseport;"
                            % (k, port) for k in range(1, listens + 1)] +
                           ([warmup] if warmup else []))
    return conf.replace(old, new)


def multi_accept(conf):
    """The writer's `events { worker_connections N; }` with `multi_accept
    on`: a worker takes every connection waiting on its listening socket
    each time round its loop, not one.  Without it, once a worker's loop
    went round with hundreds of asks at a time (on two cores shared by 64
    processes, a round took a second and more), each of its two sockets
    gave it one new connection a round: the open of 600,000 ended at 50
    connections a second, and connections the kernel had established
    waited in the accept queue past the clients' 60 s for a first
    answer."""
    old = "events {\n    worker_connections"
    if old not in conf:
        raise ValueError("no %r in the writer's config" % old)
    return conf.replace(old, "events {\n    multi_accept on;\n"
                             "    worker_connections", 1)


# --- /proc -------------------------------------------------------------------

def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def pss_kb(pids):
    return sum(parse_kv_kb(read("/proc/%d/smaps_rollup" % p),
                           ("Pss",)).get("Pss", 0) for p in pids)


def cpu_seconds(pids):
    """(user, system) CPU seconds of the processes, their threads included."""
    user = system = 0
    for pid in pids:
        try:
            fields = read("/proc/%d/stat" % pid).rsplit(")", 1)[1].split()
            user += int(fields[11])
            system += int(fields[12])
        except (IndexError, ValueError):
            pass
    return user / CLK_TCK, system / CLK_TCK


def machine_cpu():
    """/proc/stat's first line: {user, nice, system, idle, iowait, irq,
    softirq, steal} in clock ticks (all CPUs)."""
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq",
             "steal")
    for line in read("/proc/stat").splitlines():
        if line.startswith("cpu "):
            return dict(zip(names, map(int, line.split()[1:9])))
    return {}


def cpu_shares(before, after):
    """Where the machine's time went between two machine_cpu() samples:
    {name: percent}."""
    d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    total = sum(d.values()) or 1
    return {k: round(100.0 * v / total, 1) for k, v in d.items() if v}


TCP_COUNTERS = ("ListenOverflows", "ListenDrops", "TCPTimeouts",
                "TCPSynRetrans", "SyncookiesSent", "TCPReqQFullDrop",
                "TCPBacklogDrop", "RetransSegs")


def parse_snmp(text, keys=TCP_COUNTERS):
    """/proc/net/netstat and /proc/net/snmp ("Name: a b" then "Name: 1 2"
    line pairs) -> {counter: value} of those in keys."""
    out, lines = {}, text.splitlines()
    for head, vals in zip(lines[::2], lines[1::2]):
        for k, v in zip(head.split()[1:], vals.split()[1:]):
            if k in keys:
                out[k] = int(v)
    return out


def tcp_counters():
    out = parse_snmp(read("/proc/net/netstat"))
    out.update(parse_snmp(read("/proc/net/snmp")))
    return out


def kernel_now():
    m = parse_kv_kb(read("/proc/meminfo"), ("Slab", "SUnreclaim"))
    s = parse_sockstat(read("/proc/net/sockstat"))
    return {"slab_kb": m.get("Slab", 0), "sunreclaim_kb": m.get("SUnreclaim", 0),
            "tcp_mem_pages": s.get("mem", 0), "tcp_inuse": s.get("inuse", 0)}


# --- machine-wide settings ----------------------------------------------------

class Sysctls:
    """Raises what the run needs, and only that; restores it on exit."""

    def __init__(self):
        self.saved = {}

    def _path(self, key):
        return Path("/proc/sys") / key.replace(".", "/")

    def get(self, key):
        return self._path(key).read_text().split()

    def set(self, key, values, why):
        old = self.get(key)
        log("sysctl %s: %s -> %s (%s; restored at the end)"
            % (key, " ".join(old), " ".join(map(str, values)), why))
        self._path(key).write_text(" ".join(map(str, values)))
        self.saved.setdefault(key, old)

    def need(self, conns):
        tcp_mem = [int(x) for x in self.get("net.ipv4.tcp_mem")]
        if tcp_mem[2] < conns:
            self.set("net.ipv4.tcp_mem",
                     [max(tcp_mem[0], conns // 2), max(tcp_mem[1], conns),
                      max(tcp_mem[2], 2 * conns)],
                     "a page per socket end for a moment during the broadcast")
        if self._path("net.netfilter.nf_conntrack_max").exists():
            count = int(self.get("net.netfilter.nf_conntrack_count")[0])
            want = conntrack_needed(count, conns)
            if int(self.get("net.netfilter.nf_conntrack_max")[0]) < want:
                self.set("net.netfilter.nf_conntrack_max", [want],
                         "connection tracking follows loopback connections "
                         "here, an entry each: a full table drops SYNs")
        file_max = int(self.get("fs.file-max")[0])
        if file_max < 2.2 * conns:
            self.set("fs.file-max", [int(2.2 * conns)],
                     "two descriptors per connection, both ends here")

    def restore(self, wait=100):
        # not cut short by the caller's timeout: nothing left changed
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for key, old in self.saved.items():
            if key == "net.netfilter.nf_conntrack_max":
                # below what the table holds, the machine's new connections
                # would be dropped until the entries of ours expire
                deadline = time.monotonic() + wait
                while (int(self.get("net.netfilter.nf_conntrack_count")[0])
                       > 0.9 * int(old[0]) and time.monotonic() < deadline):
                    time.sleep(2)
            self._path(key).write_text(" ".join(old))
            log("sysctl %s restored to %s" % (key, " ".join(old)))
        self.saved = {}


# --- servers -----------------------------------------------------------------

class Server:
    def __init__(self, name, proc, port, addrs, log_path, workers):
        self.name, self.proc, self.port = name, proc, port
        self.addrs, self.log_path, self.nworkers = addrs, log_path, workers

    def pids(self):
        return [self.proc.pid] + children(self.proc.pid)

    def problems(self):
        return log_problems(read(self.log_path))


def build(work):
    log("building bench/ws/connload (go build)")
    subprocess.run(["go", "build", "-o", str(work / "connload"), "."],
                   cwd=ROOT / "bench" / "ws" / "connload", check=True)
    subprocess.run([JDK17 + "/bin/javac", "-nowarn", "--release", "17",
                    "-cp", str(JAR), "-d", str(work / "classes"),
                    str(ROOT / "bench" / "conns" / "java" / "connbench" /
                        "Conns.java")], check=True)


def start_nginx_jvm(work, workers, listens, jvm_options=()):
    port, prefix = free_port(), work / "nginx-jvm"
    for d in ("logs", "tmp"):
        (prefix / d).mkdir(parents=True, exist_ok=True)
    conf = servers.writer_conf(
        prefix, port, "connbench.Conns", [work / "classes"],
        ["--connections", str(WORKER_CONNECTIONS),
         "--main", "worker_rlimit_nofile %d;" % FD_LIMIT,
         "--http", "keepalive_timeout 300s;",
         "--topic", "%s:1m" % TOPIC,
         "--jvm-path", "%s/lib/server/libjvm.so" % JDK17] +
        [x for o in jvm_options for x in ("--jvm-option", o)], workers=workers)
    conf = multi_accept(listen_lines(conf, port, listens))
    (prefix / "nginx.conf").write_text(conf)
    with open(prefix / "logs" / "stderr.log", "w") as out:
        proc = subprocess.Popen([NGINX, "-p", "%s/" % prefix, "-c",
                                 str(prefix / "nginx.conf"), "-g",
                                 "daemon off;"], stdout=out, stderr=out,
                                start_new_session=True)
    addrs = ["127.0.0.%d:%d" % (k, port) for k in range(1, listens + 1)]
    return Server("nginx-jvm", proc, port, addrs,
                  prefix / "logs" / "error.log", workers)


def start_http_kit(work):
    d = servers.PEERS_DIR / "http-kit"
    if not (d / "built").exists():
        raise RuntimeError("http-kit is not built: make bench-peers")
    port = free_port()
    cp = [d / "classes", d / "src" / "src", BUILD / "lib" / "*",
          ROOT / "bench" / "conns" / "clj"]
    expr = ("(require 'org.httpkit.server 'connbench.httpkit)"
            "(org.httpkit.server/run-server connbench.httpkit/handler"
            " {:ip \"127.0.0.1\" :port %d :thread 2})@(promise)" % port)
    log_path = work / "http-kit.log"
    with open(log_path, "w") as out:
        proc = subprocess.Popen(
            [JDK17 + "/bin/java", "-cp", ":".join(map(str, cp)),
             "clojure.main", "-e", expr],
            stdout=out, stderr=out, start_new_session=True)
    return Server("http-kit", proc, port, ["127.0.0.1:%d" % port], log_path, 0)


def get(addr, path, timeout=30):
    host, port = addr.split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                   % path).encode())
        data = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            data += b
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


def wait_ready(server, deadline):
    """Every worker up and answering, the server idle (every JVM started
    and warmed up: under 5% of a core for 2 s) and its memory settled."""
    last, calm = None, 0
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError("%s exited (%s): see %s" % (
                server.name, server.proc.returncode, server.log_path))
        try:
            ok = all(get(a, "/ping", 5)[0] == 200 for a in server.addrs)
        except OSError:
            ok = False
        if ok and len(server.pids()) > server.nworkers:
            cpu0, pss = sum(cpu_seconds(server.pids())), pss_kb(server.pids())
            time.sleep(1)
            busy = sum(cpu_seconds(server.pids())) - cpu0
            settled = last is not None and abs(pss - last) < 0.005 * last
            calm = calm + 1 if busy < 0.05 and settled else 0
            if calm >= 2:
                return
            last = pss
        else:
            time.sleep(1)
    raise RuntimeError("%s not ready in time" % server.name)


def stop(proc, grace=30):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        for pid in [proc.pid] + children(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()


# --- clients -----------------------------------------------------------------

class Clients:
    def __init__(self, work, shares, addrs, args):
        self.lines = queue.Queue()
        self.procs = []
        self.latest = {}          # client -> its last "counts" object
        for i, (h, w) in enumerate(shares):
            p = subprocess.Popen(
                [str(work / "connload"), "-source", client_source(i),
                 "-servers", ",".join(addrs), "-http", str(h), "-ws", str(w),
                 "-min", str(args.min), "-max", str(args.max),
                 "-inflight", str(args.inflight)] +
                (["-rate", "%g" % (args.rate / len(shares))]
                 if args.rate else []) +
                (["-cpuprofile", "%s/client-%d.prof" % (args.profile, i)]
                 if args.profile else []),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=open(work / ("client-%d.log" % i), "w"), text=True,
                # its one goroutine waits in a raw epoll_wait: no signal
                # to preempt it (main.go)
                env=dict(os.environ, GODEBUG="asyncpreemptoff=1"),
                start_new_session=True)
            self.procs.append(p)
            threading.Thread(target=self._read, args=(i, p),
                             daemon=True).start()

    def _read(self, i, p):
        for line in p.stdout:
            try:
                obj = json.loads(line)
            except ValueError:
                obj = {"event": "garbage", "line": line}
            if obj.get("event") == "counts":
                self.latest[i] = obj
            else:
                self.lines.put((i, obj))
        self.lines.put((i, {"event": "exit", "rc": p.wait()}))

    def counts(self, wait=30):
        """Every client's counts now (merged), or None if one did not say
        within `wait` seconds."""
        self.latest = {}
        self.send("counts")
        end = time.monotonic() + wait
        while len(self.latest) < len(self.procs) and time.monotonic() < end:
            time.sleep(0.05)
        if len(self.latest) < len(self.procs):
            return None
        return merge_reports(list(self.latest.values()))

    def wait_all(self, event, deadline, match=None, every=None):
        """{client: object} of `event` from every client (those `match`
        accepts), or raises; `every` (seconds, function) is called that
        often meanwhile."""
        got = {}
        tick = time.monotonic()
        while len(got) < len(self.procs):
            if every and time.monotonic() - tick >= every[0]:
                tick = time.monotonic()
                every[1]()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("%d of %d clients sent %r" % (
                    len(got), len(self.procs), event))
            try:
                i, obj = self.lines.get(timeout=min(left, 1))
            except queue.Empty:
                continue
            if obj["event"] == event and (match is None or match(obj)):
                got[i] = obj
            elif obj["event"] == "exit":
                raise RuntimeError("client %d exited (%s)" % (i, obj["rc"]))
        return got

    def send(self, cmd):
        for p in self.procs:
            try:
                p.stdin.write(cmd + "\n")
                p.stdin.flush()
            except OSError:
                pass

    def pids(self):
        return [p.pid for p in self.procs]

    def stop(self):
        self.send("quit")
        for p in self.procs:
            try:
                p.stdin.close()
            except OSError:
                pass
        for p in self.procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


# --- one run -----------------------------------------------------------------

def run(args, work, res):
    """One run; its figures go into `res` as they come (kept when it
    fails half-way)."""
    t_start = time.monotonic()
    deadline = t_start + args.time_limit
    http, ws, workers, shares = plan(args.conns, args.workers, args.clients)
    if args.server == "http-kit":
        workers = 0
    res.update({"server": args.server, "conns": args.conns, "http": http,
                "rate": args.rate, "inflight": args.inflight,
                "jvm_options": args.jvm_option,
                "ws": ws, "workers": workers, "clients": len(shares),
                "min_s": args.min, "max_s": args.max, "idle_s": args.idle,
                "ok": False})
    log("%s: %d connections (%d HTTP, %d WebSockets), %d workers, %d clients"
        % (args.server, args.conns, http, ws, workers, len(shares)))
    k0 = kernel_now()
    if args.server == "http-kit":
        server = start_http_kit(work)
    else:
        server = start_nginx_jvm(work, workers, args.listens,
                                 args.jvm_option)
    clients = None
    try:
        wait_ready(server, deadline)
        res["ready_s"] = round(time.monotonic() - t_start, 1)
        pss0 = pss_kb(server.pids())
        k1 = kernel_now()
        slab1 = parse_slabinfo(read("/proc/slabinfo"))
        res["server_pss_idle_mb"] = round(pss0 / 1024, 1)
        log("ready in %.0f s, PSS %.0f MB" % (res["ready_s"], pss0 / 1024))
        t_open = time.monotonic()
        m0, tc0 = machine_cpu(), tcp_counters()
        scpu0 = sum(cpu_seconds(server.pids()))
        clients = Clients(work, shares, server.addrs, args)
        last = [m0, time.monotonic()]

        def progress():
            c, m = clients.counts(5), machine_cpu()
            if c:
                log("opening, %.0f s: %d open, %d errors; the machine %s"
                    % (time.monotonic() - t_open, c["http_open"] +
                       c["ws_open"], c["errors"], cpu_shares(last[0], m)))
            last[0] = m
        opened = clients.wait_all("open", deadline, every=(30, progress))
        res["open_s"] = round(time.monotonic() - t_open, 1)
        o = merge_reports(list(opened.values()))
        res["open_errors"] = o["errors"]
        res["open_machine_cpu"] = cpu_shares(m0, machine_cpu())
        res["open_server_cpu_s"] = round(
            sum(cpu_seconds(server.pids())) - scpu0, 1)
        res["open_clients_cpu_s"] = round(sum(cpu_seconds(clients.pids())), 1)
        tc1 = tcp_counters()
        res["open_tcp"] = {k: tc1[k] - tc0.get(k, 0) for k in tc1
                           if tc1[k] != tc0.get(k, 0)}
        res["lat_connect"] = hist_summary(o["hist_connect"])
        res["lat_first"] = hist_summary(o["hist_first"])
        log("open in %.0f s: %d HTTP, %d WebSockets, %d errors %s"
            % (res["open_s"], o["http_open"], o["ws_open"], o["errors"],
               o["first_errors"]))
        log("  connects %s; first answers %s; the machine %s; CPU s: server "
            "%s, clients %s; TCP %s" % (
                lat_text(res["lat_connect"]), lat_text(res["lat_first"]),
                res["open_machine_cpu"], res["open_server_cpu_s"],
                res["open_clients_cpu_s"], res["open_tcp"]))
        # every connection asks again at least once; meanwhile what an ask
        # costs (all that runs is the asks)
        c0, t0, m0 = clients.counts(), time.monotonic(), machine_cpu()
        s0, k0_ = cpu_seconds(server.pids()), cpu_seconds(clients.pids())
        time.sleep(max(0, min(args.idle, deadline - time.monotonic() - 60)))
        c1, t1, m1 = clients.counts(), time.monotonic(), machine_cpu()
        s1, k1_ = cpu_seconds(server.pids()), cpu_seconds(clients.pids())
        if c0 and c1:
            asks = (c1["asks_http"] + c1["asks_ws"] - c0["asks_http"]
                    - c0["asks_ws"])
            res["held"] = {
                "seconds": round(t1 - t0, 1), "asks_per_s": round(asks / (t1 - t0)),
                "server_us_per_ask": round((sum(s1) - sum(s0)) * 1e6 / max(1, asks), 1),
                "server_user_s": round(s1[0] - s0[0], 1),
                "server_sys_s": round(s1[1] - s0[1], 1),
                "clients_us_per_ask": round((sum(k1_) - sum(k0_)) * 1e6 / max(1, asks), 1),
                "lat_ask": hist_summary(hist_diff(c1["hist_ask"], c0["hist_ask"])),
                "machine_cpu": cpu_shares(m0, m1),
                "errors": c1["errors"] - c0["errors"]}
            log("held: %s" % res["held"])
        pss1 = pss_kb(server.pids())
        k2 = kernel_now()
        res["slab_growth_mb"] = slab_growth(
            slab1, parse_slabinfo(read("/proc/slabinfo")))
        held = o["http_open"] + o["ws_open"]
        res["server_pss_open_mb"] = round(pss1 / 1024, 1)
        res["client_pss_mb"] = round(pss_kb(clients.pids()) / 1024, 1)
        res["tcp_inuse"] = k2["tcp_inuse"]
        res["slab_mb"] = round((k2["slab_kb"] - k1["slab_kb"]) / 1024, 1)
        res["tcp_mem_mb"] = round((k2["tcp_mem_pages"] - k1["tcp_mem_pages"])
                                  * PAGE / 1048576, 1)
        if held:
            res["user_b_per_conn"] = round((pss1 - pss0) * 1024 / held)
            # with what the server costs before any connection (the JVMs)
            res["server_b_per_conn_all"] = round(pss1 * 1024 / held)
            res["kernel_b_per_conn"] = round(
                ((k2["slab_kb"] - k1["slab_kb"]) * 1024 +
                 (k2["tcp_mem_pages"] - k1["tcp_mem_pages"]) * PAGE) / held)
            res["sunreclaim_b_per_conn"] = round(
                (k2["sunreclaim_kb"] - k1["sunreclaim_kb"]) * 1024 / held)
        res["workers_conns"] = sorted(
            len(os.listdir("/proc/%d/fd" % p)) for p in children(server.proc.pid)
        ) if workers else None
        # the broadcasts: the first finds the code cold, the next warm
        res["publish"] = []
        for k in range(args.broadcasts):
            cpu0 = cpu_seconds(server.pids())
            ccpu0 = cpu_seconds(clients.pids())
            status, body = get(server.addrs[0], "/publish")
            one = {"status": status}
            try:
                delivered = clients.wait_all("delivered", min(
                    deadline, time.monotonic() + args.deliver_timeout),
                    match=lambda o: str(o["ns"]) == body.strip())
                last = max(d["last_ns"] for d in delivered.values())
                one["all_ms"] = round((last - int(body)) / 1e6, 1)
            except (TimeoutError, ValueError) as e:
                one["error"] = str(e)
                log("broadcast %d: %s" % (k + 1, e))
            cpu1 = cpu_seconds(server.pids())
            ccpu1 = cpu_seconds(clients.pids())
            # from the publish to the last delivery (and a bit: the time
            # the clients' lines take to come), the asks going on meanwhile
            one["server_user_s"] = round(cpu1[0] - cpu0[0], 2)
            one["server_sys_s"] = round(cpu1[1] - cpu0[1], 2)
            one["server_cpu_s"] = round(sum(cpu1) - sum(cpu0), 2)
            one["clients_cpu_s"] = round(sum(ccpu1) - sum(ccpu0), 2)
            one["server_us_per_socket"] = round(
                one["server_cpu_s"] * 1e6 / max(1, o["ws_open"]), 1)
            res["publish"].append(one)
            log("broadcast %d: %s" % (k + 1, one))
            time.sleep(2)
        clients.send("report")
        reports = clients.wait_all("report", deadline + 30)
        total = merge_reports(list(reports.values()))
        res.update({k: total[k] for k in total if not k.startswith("hist_")})
        res["lat_ask"] = hist_summary(total["hist_ask"])
        res["server_log_problems"] = server.problems()[:10]
        res["k0"], res["k1"], res["k2"] = k0, k1, k2
    finally:
        if clients:
            clients.stop()
        stop(server.proc)
    res["seconds"] = round(time.monotonic() - t_start, 1)
    res["ok"] = (res.get("errors", 1) == 0
                 and len(res.get("rounds", [])) == args.broadcasts
                 and all(rd["got"] == ws for rd in res["rounds"])
                 and all("error" not in p for p in res.get("publish", []))
                 and res.get("ws_open") == ws
                 and res.get("http_open") == http
                 and not res.get("server_log_problems"))
    return res


def summary(r):
    def f(k, fmt="%s"):
        v = r.get(k)
        return "-" if v is None else fmt % v
    return "\n".join([
        "%s: %s connections (%s HTTP open of %s, %s WebSockets open of %s), "
        "%s workers, %s clients: %s" % (
            r["server"], r["conns"], f("http_open"), r["http"], f("ws_open"),
            r["ws"], r["workers"], r["clients"], "OK" if r["ok"] else "FAILED"),
        "  ready %s s, opened in %s s, whole run %s s; descriptors per "
        "worker %s" % (f("ready_s"), f("open_s"), f("seconds"),
                       "%d to %d" % (min(r["workers_conns"]),
                                     max(r["workers_conns"]))
                       if r.get("workers_conns") else "-"),
        "  memory per connection: user %s B (server PSS %s -> %s MB: %s B a "
        "connection all told), kernel "
        "%s B (Slab %s MB + TCP mem %s MB, both ends), clients' PSS %s MB" % (
            f("user_b_per_conn"), f("server_pss_idle_mb"),
            f("server_pss_open_mb"), f("server_b_per_conn_all"),
            f("kernel_b_per_conn"), f("slab_mb"),
            f("tcp_mem_mb"), f("client_pss_mb")),
        "  slab caches that grew (MB): %s" % r.get("slab_growth_mb"),
        "  the open: connects %s; first answers %s; the machine %s; CPU s "
        "server %s, clients %s; TCP %s" % (
            lat_text(r.get("lat_connect")), lat_text(r.get("lat_first")),
            r.get("open_machine_cpu"), f("open_server_cpu_s"),
            f("open_clients_cpu_s"), r.get("open_tcp")),
    ] + ([
        "  held %s s: %s asks a second, answered in %s; CPU per ask: server "
        "%s us, clients %s us; the machine %s" % (
            h["seconds"], h["asks_per_s"], lat_text(h["lat_ask"]),
            h["server_us_per_ask"], h["clients_us_per_ask"],
            h["machine_cpu"])
        for h in [r["held"]]] if r.get("held") else []) + [
        "  broadcast %d: %s of %s got it; p50 %s ms, p99 %s ms, max %s ms; "
        "server CPU %s s (user %s, system %s; %s us a socket), clients' "
        "%s s" % (k + 1, rd["got"], r["ws"], rd["p50_ms"], rd["p99_ms"],
                  rd["max_ms"], p.get("server_cpu_s"), p.get("server_user_s"),
                  p.get("server_sys_s"), p.get("server_us_per_socket"),
                  p.get("clients_cpu_s"))
        for k, (rd, p) in enumerate(zip(r.get("rounds") or [],
                                        r.get("publish") or []))
    ] + [
        "  asks answered: %s HTTP, %s WebSocket; errors %s %s %s" % (
            f("asks_http"), f("asks_ws"), f("errors"), r.get("error_kinds"),
            r.get("first_errors") or ""),
        "  server log problems: %s" % (r.get("server_log_problems") or "none"),
    ] + (["  stopped by: %s" % r["exception"]] if r.get("exception") else []))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", choices=("nginx-jvm", "http-kit"),
                    default="nginx-jvm")
    ap.add_argument("--conns", type=int, default=600000)
    ap.add_argument("--workers", type=int, help="default: conns / %d" % PER_PROCESS)
    ap.add_argument("--clients", type=int, help="default: conns / %d" % PER_PROCESS)
    ap.add_argument("--listens", type=int, default=2,
                    help="server addresses 127.0.0.1..L (nginx-jvm)")
    ap.add_argument("--min", type=float, default=5)
    ap.add_argument("--max", type=float, default=45)
    ap.add_argument("--idle", type=float, default=60,
                    help="seconds all are held before memory and the broadcast")
    ap.add_argument("--inflight", type=int, default=32,
                    help="connects in progress at once per client")
    ap.add_argument("--rate", type=float, default=1200,
                    help="connects a second at most, all clients together "
                    "(0: as fast as --inflight lets)")
    ap.add_argument("--jvm-option", action="append", default=[],
                    help="an option of the workers' JVMs (nginx-jvm); "
                    "repeat for several")
    ap.add_argument("--broadcasts", type=int, default=3,
                    help="publishes, one after the other")
    ap.add_argument("--deliver-timeout", type=float, default=120)
    ap.add_argument("--time-limit", type=float, default=1500)
    ap.add_argument("--json", help="append the result as a JSON line here")
    ap.add_argument("--profile", metavar="DIR",
                    help="each client writes a CPU profile (go tool pprof) "
                    "into DIR: client-I.prof")
    args = ap.parse_args()
    plan(args.conns, args.workers, args.clients)     # fails early when it cannot
    if args.server == "http-kit" and args.conns > FD_LIMIT - 400:
        ap.error("http-kit is one process: --conns at most %d" % (FD_LIMIT - 400))
    import tempfile
    sysctls = Sysctls()
    # a SIGTERM (or the caller's timeout) still stops everything and
    # restores the settings
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="conns-") as tmp:
        work = Path(tmp)
        build(work)
        r = {}
        try:
            sysctls.need(args.conns)
            run(args, work, r)
        except Exception as e:                          # noqa: BLE001
            r["ok"] = False
            r["exception"] = "%s: %s" % (type(e).__name__, e)
            log("FAILED: %s" % r["exception"])
        finally:
            sysctls.restore()
    if "server" in r:
        print(summary(r))
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(r) + "\n")
    sys.exit(0 if r["ok"] else 1)


if __name__ == "__main__":
    main()
