#!/usr/bin/env python3
"""Fast readers of endless streams against the other connections of their
worker (issue: one fast reader stalled a loop-mode worker for seconds).

One worker, jvm_mode loop.  N curl processes drain endless bodies (half a
Java InputStream of 16 KB reads, half a Ring seq of 16 KB strings) as fast
as they can, while one client asks, one request after another, nginx's own
`return 200` and a JVM handler on the event loop of the same worker.  For
N = 0, 1, 10, 100: the latency of those requests (median, 99th percentile,
max) and what the readers got altogether.  The 0-reader row is the same
worker idle: the ratio against it is what the readers cost the others.

  bench/stream_fairness.py [--requests 300] [--readers 0,1,10,100]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests"))
from harness import Nginx, request  # noqa: E402

LOCATIONS = """
        location /ring/pieces { access_log @PREFIX@/logs/bytes.log bytes;
                                jvm_content testapp.endless/pieces; }
        location /java/ { access_log @PREFIX@/logs/bytes.log bytes;
                          jvm_content testapp.Endless; }
        location /ok { return 200 "ok"; }
        location /jvm-ok { jvm_content testapp.Endless; }
"""


def latencies(port, path, n):
    out = []
    for _ in range(n):
        start = time.monotonic()
        r = request(port, "GET", path, timeout=60)
        out.append(time.monotonic() - start)
        assert r.status == 200, r
        time.sleep(0.005)
    return out


def sent(ng):
    """What nginx has sent the readers so far, by its access log."""
    try:
        with open(ng.path("logs", "bytes.log")) as f:
            return sum(int(line) for line in f)
    except OSError:
        return 0


def summary(xs):
    xs = sorted(xs)
    return (statistics.median(xs) * 1000, xs[int(len(xs) * 0.99) - 1] * 1000,
            xs[-1] * 1000)


def run(ng, readers, n):
    paths = (["/java/bytes", "/ring/pieces"] * readers)[:readers]
    procs = [subprocess.Popen(
        ["curl", "-s", "-o", "/dev/null", "--max-time", "300",
         "http://127.0.0.1:%d%s" % (ng.port, p)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for p in paths]
    before = sent(ng)
    try:
        time.sleep(1.0 if readers else 0)
        own = latencies(ng.port, "/ok", n)
        jvm = latencies(ng.port, "/jvm-ok/ok", n)
        alive = sum(p.poll() is None for p in procs)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)
    time.sleep(0.5)                 # each reader's request ends, and is logged
    return own, jvm, alive, sent(ng) - before


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--readers", default="0,1,10,100")
    args = ap.parse_args()
    rows = []
    with Nginx(LOCATIONS, mode="loop",
               http="    log_format bytes '$bytes_sent';") as ng:
        ng.get("/jvm-ok/ok")
        for readers in [int(x) for x in args.readers.split(",")]:
            own, jvm, alive, got = run(ng, readers, args.requests)
            rows.append((readers, summary(own), summary(jvm), alive, got))
            print("readers %3d  nginx /ok ms p50 %.2f p99 %.2f max %.2f  "
                  "jvm /ok ms p50 %.2f p99 %.2f max %.2f  readers alive %d"
                  % ((readers,) + summary(own) + summary(jvm) + (alive,)),
                  flush=True)
        problems = ng.log_problems()
    print()
    print("| readers | nginx `return 200` p50 / p99 / max (ms) "
          "| JVM loop handler p50 / p99 / max (ms) | readers still draining "
          "| the readers got (MB) |")
    print("|---|---|---|---|---|")
    for readers, own, jvm, alive, got in rows:
        print("| %d | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | %d of %d | %d |"
              % ((readers,) + own + jvm + (alive, readers, got >> 20)))
    if problems:
        print("error log problems:", problems)
        sys.exit(1)


if __name__ == "__main__":
    main()
