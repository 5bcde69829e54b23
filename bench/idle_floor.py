#!/usr/bin/env python3
"""What a low-priority neighbour costs the server's latency on this machine.

bench/reload_open.py's server (the Compojure example, 2 workers, workers
as root) under oha at a fixed rate for 10 s, once per load named on the
command line; the load runs beside it from 3 s in, for 4 s:

  none      nothing (a quiet run)
  spin      two busy shell loops under SCHED_IDLE
  jvm       JVMs started one after another (clojure.main loading a
            namespace; the JDK's own class archive only) under SCHED_IDLE
  jvmnice   the same at nice +10

A reload starts new JVMs beside the old workers, under SCHED_IDLE where
the workers may leave it again: this is the floor of what that start can
cost, with no reload and no nginx-jvm code involved.

    flock /tmp/nginx-jvm-bench.lock python3 bench/idle_floor.py none spin jvm jvmnice
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reload_open  # noqa: E402
from benchsuite import load  # noqa: E402

JAVA = "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java"
CLOJURE = "/usr/share/java/clojure.jar"
RATE = 40000
SECONDS = 4


def neighbour(kind):
    """Starts `kind` for SECONDS; returns its processes."""
    if kind == "spin":
        cmd = ["chrt", "-i", "0", "timeout", str(SECONDS), "sh", "-c",
               "while :; do :; done"]
        return [subprocess.Popen(cmd) for _ in range(2)]
    prefix = ["chrt", "-i", "0"] if kind == "jvm" else ["nice", "-n", "10"]
    loop = ("end=$(($(date +%%s)+%d)); while [ $(date +%%s) -lt $end ]; do "
            "%s -cp %s clojure.main -e \"(require 'clojure.pprint)\""
            " >/dev/null; done" % (SECONDS, JAVA, CLOJURE))
    return [subprocess.Popen(prefix + ["sh", "-c", loop])]


def main():
    kinds = sys.argv[1:] or ["none", "spin", "jvm", "jvmnice"]
    for k in kinds:
        if k not in ("none", "spin", "jvm", "jvmnice"):
            raise SystemExit("unknown load: " + k)
    oha = load.find_oha() or load.install_oha()[0]
    server = reload_open.Server("nginx-jvm", launcher=["--user", "root"])
    print("| load beside the server | p99 ms | p99.9 ms | max ms |")
    print("|---|---|---|---|")
    try:
        reload_open.oha(oha, server.url, RATE, 3, 50)     # warm connections
        for kind in kinds:
            started = []
            actions = [] if kind == "none" else [
                (3, lambda kind=kind: started.extend(neighbour(kind)))]
            r = reload_open.oha(oha, server.url, RATE, 10, 50, actions)
            for p in started:
                p.wait()
            print("| %s | %.2f | %.2f | %.1f |" % (kind, r["p99"], r["p99.9"],
                                                   r["max"]), flush=True)
            time.sleep(5)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
