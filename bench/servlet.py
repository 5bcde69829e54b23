#!/usr/bin/env python3
"""make bench-servlet: a servlet web application (examples/servlet-war)
side by side in one run (issue 47, item 10):

  nginx-jvm   bin/nginx-jvm run --war, 2 workers (Tomcat 11 beneath nginx)
  direct      the same WAR on the same Tomcat's own HTTP connector
              (nginx.jvm.servlet.tomcat.Standalone)
  proxy       nginx (2 workers) proxy_pass to that Tomcat: the usual
              setup today

For each URL (the servlet hello, the JSP page) and each server, rounds
interleaved: wrk's closed-loop rate (-t1 -c16), the servers' CPU time per
request over that run (all their processes: /proc/PID/stat), and with oha
(scripts/install-deps.sh bench) the p99 latency at a fixed rate every
server sustains (-q, --latency-correction). Medians of the rounds, with
the range. Quote the ratios and CPU per request: the machine is shared.

  bench/servlet.py [--rounds 3] [--seconds 10] [--rate 2000] [--out FILE]
"""

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from benchsuite import load  # noqa: E402
BUILD = ROOT / "build"
SERVLET = BUILD / "servlet"
WAR_DIR = BUILD / "servlet-war-bench"
URLS = {"hello": "/app/hello?name=bench", "jsp": "/app/?name=bench"}
HZ = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=120):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("nothing listens on %d" % port)


def tree(pid):
    """pid and all its descendants."""
    out, i = [pid], 0
    while i < len(out):
        try:
            kids = Path("/proc/%d/task/%d/children" % (out[i], out[i])).read_text()
        except OSError:
            kids = ""
        out += [int(k) for k in kids.split()]
        i += 1
    return out


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            f = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(f[11]) + int(f[12])
    return total / HZ


def build_war():
    war = WAR_DIR / "target" / "servlet-war.war"
    shutil.rmtree(WAR_DIR, ignore_errors=True)
    shutil.copytree(ROOT / "examples" / "servlet-war", WAR_DIR,
                    ignore=shutil.ignore_patterns("target"))
    subprocess.run(["mvn", "-B", "-q", "package"], cwd=WAR_DIR, check=True)
    return war


class Server:
    def __init__(self, name, port, proc, pids):
        self.name, self.port, self.proc, self._pids = name, port, proc, pids

    def pids(self):
        return self._pids()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_direct(war, work):
    port = free_port()
    cp = ":".join([str(SERVLET / "nginx-jvm-servlet.jar"),
                   str(BUILD / "nginx-jvm.jar"), str(SERVLET / "tomcat-lib" / "*")])
    java = os.environ.get("JAVA", "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java")
    p = subprocess.Popen([java, "-cp", cp, "nginx.jvm.servlet.tomcat.Standalone",
                          str(war), str(port), "/app"],
                         stdout=subprocess.PIPE,
                         stderr=open(work / "direct.log", "wb"))
    server = Server("direct", port, p, lambda: [p.pid])
    if p.stdout.readline().strip() != b"ready":
        server.stop()
        raise RuntimeError("the direct Tomcat did not start: %s" % (work / "direct.log"))
    return server


def start_proxy(direct, work):
    port = free_port()
    d = work / "proxy"
    (d / "logs").mkdir(parents=True)
    (d / "nginx.conf").write_text("""
worker_processes 2;
error_log %(d)s/logs/error.log warn;
pid %(d)s/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    upstream tomcat { server 127.0.0.1:%(up)d; keepalive 64; }
    server {
        listen 127.0.0.1:%(port)d;
        location / {
            proxy_pass http://tomcat;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
        }
    }
}
""" % {"d": d, "up": direct.port, "port": port})
    p = subprocess.Popen(["nginx", "-p", str(d), "-c", str(d / "nginx.conf"),
                          "-g", "daemon off;"])
    server = Server("proxy", port, p, lambda: tree(p.pid) + direct.pids())
    try:
        wait_port(port)
    except RuntimeError:
        server.stop()
        raise
    return server


def start_nginx_jvm(war, work):
    port = free_port()
    p = subprocess.Popen([str(ROOT / "bin" / "nginx-jvm"), "run", "--war", str(war),
                          "--context-path", "/app", "--workers", "2",
                          "--port", str(port), "--error-level", "notice",
                          "--cache", str(work / "cache")],
                         stdout=subprocess.DEVNULL,
                         stderr=open(work / "nginx-jvm.log", "wb"))
    server = Server("nginx-jvm", port, p, lambda: tree(p.pid))
    try:
        wait_port(port)
        # both workers' Tomcat up: each says "worker N ready" in the error log
        end = time.monotonic() + 300
        while len(re.findall(r": jvm: worker \d+ ready",
                             (work / "nginx-jvm.log").read_text())) < 2:
            if time.monotonic() > end or p.poll() is not None:
                raise RuntimeError((work / "nginx-jvm.log").read_text())
            time.sleep(0.1)
    except RuntimeError:
        server.stop()
        raise
    return server


def get_ok(port, path):
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                          "http://127.0.0.1:%d%s" % (port, path)],
                         stdout=subprocess.PIPE, text=True).stdout
    return out == "200"


def wrk(port, path, seconds):
    out = subprocess.run(["wrk", "-t1", "-c16", "-d%ds" % seconds,
                          "http://127.0.0.1:%d%s" % (port, path)],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rate, total, int(bad.group(1)) if bad else 0


def oha(port, path, rate, seconds):
    """p99 (ms) at a fixed rate, open model (benchsuite.load's oha), or
    None without oha; a run with failed requests is an error."""
    exe = load.find_oha()
    if not exe:
        return None
    out, _ = load.oha(exe, "http://127.0.0.1:%d%s" % (port, path), rate, seconds,
                      conns=64)
    assert not out["errors"] and set(out["statuses"]) <= {"200"}, out
    return out["p99"]


def median_range(xs, fmt):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return "%s (%s-%s)" % (fmt % statistics.median(xs), fmt % min(xs), fmt % max(xs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--out", default=str(BUILD / "bench-servlet.md"))
    a = ap.parse_args()
    war = build_war()
    work = Path(tempfile.mkdtemp(prefix="nginx-jvm-bench-servlet-"))
    work.chmod(0o755)               # the workers (nobody) reach the cache
    servers = []
    try:
        # each kept as it starts, so that a failure stops those already up
        direct = start_direct(war, work)
        servers.append(direct)
        servers.insert(0, start_nginx_jvm(war, work))
        servers.append(start_proxy(direct, work))
        for s in servers:
            for u in URLS.values():
                assert get_ok(s.port, u), (s.name, u)
        res = {}
        for r in range(a.rounds):
            for uname, u in URLS.items():
                for s in servers:
                    wrk(s.port, u, 3)                       # warm
                    c0 = cpu_seconds(s.pids())
                    rate, total, bad = wrk(s.port, u, a.seconds)
                    c1 = cpu_seconds(s.pids())
                    assert bad == 0, (s.name, u, bad)
                    p99 = oha(s.port, u, a.rate, a.seconds)
                    k = (uname, s.name)
                    res.setdefault(k, []).append((rate, (c1 - c0) / total * 1e6, p99))
                    print("round %d %-5s %-9s %8.0f req/s %6.1f us CPU/req p99 %s ms"
                          % (r + 1, uname, s.name, rate, (c1 - c0) / total * 1e6,
                             "%.2f" % p99 if p99 is not None else "-"), flush=True)
        lines = ["# make bench-servlet", "",
                 "examples/servlet-war; nginx-jvm and proxy with 2 nginx workers; "
                 "wrk -t1 -c16 -d%ds; oha -q %d -c 64 --latency-correction -z %ds; "
                 "%d rounds, medians (range)." % (a.seconds, a.rate, a.seconds, a.rounds), "",
                 "| page | server | rate (req/s) | server CPU per request (µs) "
                 "| p99 at %d req/s (ms) |" % a.rate,
                 "|---|---|---|---|---|"]
        for (uname, sname), xs in res.items():
            lines.append("| %s | %s | %s | %s | %s |" % (
                uname, sname, median_range([x[0] for x in xs], "%.0f"),
                median_range([x[1] for x in xs], "%.1f"),
                median_range([x[2] for x in xs], "%.2f")))
        for uname in URLS:
            d = statistics.median(x[0] for x in res[(uname, "direct")])
            p = statistics.median(x[0] for x in res[(uname, "proxy")])
            n = statistics.median(x[0] for x in res[(uname, "nginx-jvm")])
            lines.append("")
            lines.append("%s: nginx-jvm's rate is %.2f of the proxy's and %.2f of "
                         "direct Tomcat's." % (uname, n / p, n / d))
        Path(a.out).write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
    finally:
        for s in reversed(servers):
            s.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
