#!/usr/bin/env python3
"""Phase handlers and subrequests against plain nginx, side by side in one
run (`make bench-phases`; part of `make bench`).

    bench/phases.py [--duration S] [--rounds N] [--conns C] [--out FILE]

One nginx worker serves every route; a second nginx is the upstream.
Routes, measured round by round with wrk (interleaved):

  static        a small static file
  access+static the same file behind a jvm_access handler (Java, loop)
  access(pool)+static  the same, the handler on a pool thread
  proxy         proxy_pass to the upstream (keep-alive)
  subrequest    a jvm_async content handler making one subrequest to an
                internal location with the same proxy_pass

Reported: requests per second (median of the rounds) and the ratios
access+static / static and subrequest / proxy.
"""

import argparse
import datetime
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")
JAVA_HOME = os.environ.get("JAVA_HOME") or "/usr/lib/jvm/java-17-openjdk-amd64"
RESULTS = ROOT / "bench" / "results"

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchsuite import servers                                # noqa: E402
from benchsuite.load import wrk                               # noqa: E402
from benchsuite.servers import free_port                      # noqa: E402

# the upstream: plain nginx of its own, not measured
UPSTREAM = """\
worker_processes 1;
error_log {prefix}/logs/error.log warn;
pid {prefix}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    server {{
        listen 127.0.0.1:{port};
        location /data {{ default_type text/plain; return 200 "upstream data 0123456789\\n"; }}
    }}
}}
"""


def jvm_conf(prefix, port, classes, up):
    """The measured nginx's config, from the one writer (bin/nginx-jvm
    config, through benchsuite.servers.writer_conf), one worker: the
    subrequest's handler is its handler (location /), the static file is
    --static, and the other routes are locations of --server."""
    static = "%s/html/static/" % prefix
    return servers.writer_conf(
        prefix, port, "bench.PhaseBench$OneCall", [classes], [
            "--async", "--static", "/static/=%s" % static,
            "--http", "upstream up { server 127.0.0.1:%d; keepalive 32; }"
            % up,
            "--server", "location /checked/ { jvm_access bench.PhaseBench$Check;"
            " alias %s; }" % static,
            "--server", "location /checked-pool/ { jvm_mode pool;"
            " jvm_access bench.PhaseBench$Check; alias %s; }" % static,
            "--server", "location /proxy/ { proxy_http_version 1.1;"
            " proxy_set_header Connection \"\"; proxy_pass http://up/; }",
            "--server", "location /internal/ { internal;"
            " proxy_http_version 1.1; proxy_set_header Connection \"\";"
            " proxy_pass http://up/; }"], workers=1)


ROUTES = [("static", "/static/a.txt"), ("access+static", "/checked/a.txt"),
          ("access(pool)+static", "/checked-pool/a.txt"),
          ("proxy", "/proxy/data"), ("subrequest", "/subrequest")]


class Server:
    """An nginx in a prefix of its own, on a free port; conf(prefix, port)
    is its nginx.conf."""

    def __init__(self, conf):
        self.prefix = tempfile.mkdtemp(prefix="nginx-jvm-bench-phases-")
        for d in ("logs", "tmp", "html/static"):
            os.makedirs(os.path.join(self.prefix, d))
        with open(os.path.join(self.prefix, "html/static/a.txt"), "w") as f:
            f.write("a small static file 0123456789\n")
        self.port = free_port()
        path = os.path.join(self.prefix, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf(self.prefix, self.port))
        self.proc = subprocess.Popen([NGINX, "-p", self.prefix, "-c", path,
                                      "-g", "daemon off;"])

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def wait(self, path, headers=None):
        deadline = time.monotonic() + 90
        while True:
            try:
                req = urllib.request.Request(self.url(path),
                                             headers=headers or {})
                with urllib.request.urlopen(req, timeout=10) as r:
                    return r.read()
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)

    def stop(self):
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.prefix, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--quick", action="store_true",
                    help="3 s runs, 2 rounds")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.quick:
        args.duration, args.rounds = 3, 2

    classes = tempfile.mkdtemp(prefix="nginx-jvm-bench-classes-")
    subprocess.run([JAVA_HOME + "/bin/javac", "--release", "17", "-cp",
                    str(BUILD / "nginx-jvm.jar"), "-d", classes,
                    str(ROOT / "bench/java/bench/PhaseBench.java")], check=True)
    up = Server(lambda prefix, port: UPSTREAM.format(prefix=prefix,
                                                     port=port))
    jvm = Server(lambda prefix, port: jvm_conf(prefix, port, classes,
                                               up.port))
    headers = [("X-Token", "secret")]
    rps = {name: [] for name, _ in ROUTES}
    try:
        up.wait("/data")
        for _, path in ROUTES:
            body = jvm.wait(path, dict(headers))
            assert body, path
            wrk(jvm.url(path), 2, headers=headers, conns=args.conns)  # warm-up
        for _ in range(args.rounds):
            for name, path in ROUTES:
                r, raw = wrk(jvm.url(path), args.duration, headers=headers,
                             conns=args.conns)
                if r["non2xx"] or r["socket_errors"]:
                    raise RuntimeError("%s: errors\n%s" % (name, raw))
                rps[name].append(r["rps"])
    finally:
        jvm.stop()
        up.stop()
        shutil.rmtree(classes, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in rps.items()}
    lines = ["# Phase handlers and subrequests vs plain nginx",
             "", "%s, one worker, wrk -t1 -c%d, %d s x %d rounds (median)"
             % (datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
                args.conns, args.duration, args.rounds), "",
             "| route | req/s |", "|---|---:|"]
    lines += ["| %s | %.0f |" % (k, med[k]) for k, _ in ROUTES]
    lines += ["", "| ratio | |", "|---|---:|",
              "| access+static / static | %.2f |"
              % (med["access+static"] / med["static"]),
              "| access(pool)+static / static | %.2f |"
              % (med["access(pool)+static"] / med["static"]),
              "| subrequest / proxy | %.2f |"
              % (med["subrequest"] / med["proxy"])]
    text = "\n".join(lines) + "\n"
    print(text)
    out = args.out or RESULTS / ("phases-%s.md" % datetime.datetime.now()
                                 .strftime("%Y-%m-%d-%H%M"))
    Path(out).write_text(text)


if __name__ == "__main__":
    main()
