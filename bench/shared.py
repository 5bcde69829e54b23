#!/usr/bin/env python3
"""Shared dictionary throughput: SharedDict incr, get and put per second,
from a handler on the event loop and from JVM threads, with one worker and
with two workers at once (every operation takes the zone's one lock).

    bench/shared.py [--ops 200000] [--rounds 3] [--threads 1,2,4] [--out FILE]

Each measurement is one request to bench.SharedBench (bench/java), which
runs --ops operations on the dictionary "bench" and answers the time they
took; the median of --rounds is reported. With two workers, the same
request goes to both at once (reuseport spreads the connections; a round
is run again until the two landed on different workers) and the
operations of both are counted over the longer of the two times.
"""

import argparse
import http.client
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")
JAVA_HOME = os.environ.get("JAVA_HOME") or "/usr/lib/jvm/java-17-openjdk-amd64"

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchsuite.servers import free_port                      # noqa: E402

CONF = """\
load_module {build}/ngx_http_jvm_module.so;
user root;
worker_processes {workers};
error_log {prefix}/error.log warn;
pid {prefix}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/tmp;
    jvm_classpath {build}/nginx-jvm.jar {classes};
    jvm_shared_dict bench 16m;
    server {{
        listen 127.0.0.1:{port} reuseport;
        location /bench {{ jvm_content bench.SharedBench; }}
    }}
}}
"""


def compile_handler(out):
    src = ROOT / "bench" / "java" / "bench" / "SharedBench.java"
    subprocess.run([JAVA_HOME + "/bin/javac", "--release", "17", "-cp",
                    str(BUILD / "nginx-jvm.jar"), "-d", out, str(src)],
                   check=True)


class Server:
    def __init__(self, workers, classes):
        self.prefix = tempfile.mkdtemp(prefix="nginx-jvm-bench-shared-")
        os.mkdir(os.path.join(self.prefix, "tmp"))
        self.port = free_port()
        self.workers = workers
        conf = os.path.join(self.prefix, "nginx.conf")
        with open(conf, "w") as f:
            f.write(CONF.format(build=BUILD, workers=workers,
                                prefix=self.prefix, classes=classes,
                                port=self.port))
        self.proc = subprocess.Popen([NGINX, "-p", self.prefix, "-c", conf,
                                      "-g", "daemon off;"])
        deadline = time.monotonic() + 60
        while True:
            try:
                self.call("incr", 1, 0)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def call(self, op, n, threads):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        try:
            c.request("GET", "/bench?op=%s&n=%d&threads=%d" % (op, n, threads))
            r = c.getresponse()
            body = r.read().decode()
            if r.status != 200:
                raise RuntimeError(body)
            ops, nanos, pid = body.split()
            return int(ops), int(nanos), pid
        finally:
            c.close()

    def stop(self):
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.prefix, ignore_errors=True)


def measure(server, op, ops, threads, parallel):
    """Operations per second of `parallel` requests at once, each on its
    own worker (tried again until reuseport spread them so)."""
    for _ in range(20):
        results = [None] * parallel

        def one(i):
            results[i] = server.call(op, ops, threads)
        ts = [threading.Thread(target=one, args=(i,)) for i in range(parallel)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if len({r[2] for r in results}) == parallel:
            break
    total = sum(r[0] for r in results)
    longest = max(r[1] for r in results)
    return total / (longest / 1e9)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2,4")
    ap.add_argument("--out")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]

    classes = tempfile.mkdtemp(prefix="nginx-jvm-bench-classes-")
    compile_handler(classes)
    rows = []
    try:
        for workers in (1, 2):
            server = Server(workers, classes)
            try:
                for op in ("incr", "get", "put"):
                    for t in [0] + threads:
                        measure(server, op, args.ops // 4, t, workers)  # warm-up
                        rates = [measure(server, op, args.ops, t, workers)
                                 for _ in range(args.rounds)]
                        where = "event loop" if t == 0 else "%d threads" % t
                        rows.append((workers, op, where,
                                     statistics.median(rates)))
                        print("%d worker(s)  %-4s  %-10s  %12.0f ops/s"
                              % rows[-1], flush=True)
            finally:
                server.stop()
    finally:
        shutil.rmtree(classes, ignore_errors=True)

    lines = ["# Shared dictionary throughput", "",
             "bench/shared.py --ops %d --rounds %d (median); %s; %d cores"
             % (args.ops, args.rounds, time.strftime("%Y-%m-%d %H:%M"),
                os.cpu_count()), "",
             "| workers | op | from | ops/s |", "|---|---|---|---|"]
    for w, op, where, rate in rows:
        lines.append("| %d | %s | %s | %.0f |" % (w, op, where, rate))
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
