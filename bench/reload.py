#!/usr/bin/env python3
"""Reloads under load: the Compojure example behind `bin/nginx-jvm run`
(2 workers, the class cache warm), and plain nginx for comparison.

1. quiet: wrk for --duration seconds, no reload (after as long a run to
   warm up, not counted);
2. one reload: the same with one `nginx -s reload` (SIGHUP to the master)
   1.5 s in; requests completed against the quiet run, max latency;
3. chaos: five reloads a second apart and a worker SIGKILLed, during a
   longer run: wrk's socket errors and non-2xx answers, against plain
   nginx serving a fixed answer through the same sequence.

  bench/reload.py [--duration 6] [--connections 50]
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from start import APPS, TOP, free_port  # noqa: E402
from memory import children, workers_of  # noqa: E402
from benchsuite import servers  # noqa: E402

# nginx-jvm is the launcher's `run` (its config the one writer's) with
# these options, and plain nginx has the same settings written out: the
# bench suite's (servers.py's MAIN_CONF and HTTP_CONF, 2 workers), which
# bench/tests/test_bench_configs.py checks against the writer's
RUN_OPTIONS = servers.IDLE


def plain_conf(port):
    """Plain nginx's config, for a prefix with logs/ and tmp/."""
    return ("%shttp {\n%s    server {\n"
            "        listen 127.0.0.1:%d backlog=4096;\n"
            "        location / { return 200 \"Hello, nginx!\"; }\n"
            "    }\n}\n" % (servers.MAIN_CONF, servers.HTTP_CONF, port))


def wrk(url, seconds, conns, actions=()):
    """Runs wrk; meanwhile calls each (delay, fn) of actions. Returns
    requests, max latency (s), socket errors, non-2xx answers."""
    proc = subprocess.Popen(["wrk", "-t2", "-c%d" % conns, "-d%ds" % seconds,
                             "--timeout", "5s", url],
                            stdout=subprocess.PIPE, text=True)
    start = time.monotonic()
    for delay, fn in actions:
        time.sleep(max(0, start + delay - time.monotonic()))
        fn()
    out = proc.communicate()[0]
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    lat = re.search(r"Latency\s+\S+\s+\S+\s+(\S+)", out).group(1)
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}
    unit = re.match(r"[\d.]+(\D+)", lat).group(1)
    maximum = float(lat[:-len(unit)]) * scale[unit]
    errors = 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                  r"timeout (\d+)", out)
    if m:
        errors = sum(int(x) for x in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    bad = int(m.group(1)) if m else 0
    return requests, maximum, errors, bad


class Server:
    """nginx-jvm (the launcher's `run` of the Compojure example) or plain
    nginx (in a prefix of its own, self.dir), 2 workers; reload_open.py's
    Server extends it."""
    workers = 2                         # as MAIN_CONF's

    def __init__(self, kind):
        self.kind = kind
        self.port = free_port()
        self.dir = None
        if kind == "nginx-jvm":
            self.proc = subprocess.Popen(
                self.run_command(TOP, RUN_OPTIONS),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)
            self.top = self.proc.pid
        else:
            self.dir = tempfile.mkdtemp(prefix="nginx-reload-")
            self.start_plain(plain_conf(self.port))
        self.wait_started()

    def run_command(self, top, options):
        """The `run` of the launcher in `top` for the Compojure example,
        with `options`; sets self.path."""
        handler, classpath, self.path = APPS["compojure"]
        return [os.path.join(top, "bin/nginx-jvm"), "run", "--handler",
                handler, "--classpath", classpath, "--port", str(self.port),
                "--workers", str(self.workers)] + list(options)

    def start_plain(self, conf):
        """Plain nginx with `conf`, in the prefix self.dir."""
        self.path = "/"
        for d in ("logs", "tmp"):
            os.mkdir(os.path.join(self.dir, d))
        with open(os.path.join(self.dir, "nginx.conf"), "w") as f:
            f.write(conf)
        self.proc = subprocess.Popen(
            ["nginx", "-p", self.dir, "-c",
             os.path.join(self.dir, "nginx.conf"), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        self.top = None

    def wait_started(self, exited=lambda: False):
        """Waits until every worker runs and the URL answers (SystemExit
        after 2 minutes, or as soon as `exited()`), then 1 + workers
        seconds more (the last worker's JVM too)."""
        self.url = "http://127.0.0.1:%d%s" % (self.port, self.path)
        deadline = time.monotonic() + 120
        while len(self.worker_pids()) < self.workers or not self.answers():
            if time.monotonic() > deadline or exited():
                raise SystemExit("%s did not start" % self.kind)
            time.sleep(0.1)
        time.sleep(1 + self.workers)

    def master(self):
        if self.top is None:
            return self.proc.pid
        return children(self.top)[0]

    def worker_pids(self):
        if self.top is not None:
            return workers_of(self.top)
        return [p for p in children(self.proc.pid)]

    def answers(self):
        try:
            urllib.request.urlopen(self.url, timeout=2).read()
            return True
        except OSError:
            return False

    def reload(self):
        os.kill(self.master(), signal.SIGHUP)

    def kill_worker(self):
        pids = self.worker_pids()
        if pids:
            os.kill(pids[0], signal.SIGKILL)

    def stop(self):
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=int, default=6)
    ap.add_argument("--connections", type=int, default=50)
    args = ap.parse_args()
    d, c = args.duration, args.connections
    for kind in ("nginx-jvm", "nginx"):
        s = Server(kind)
        try:
            wrk(s.url, d, c)                # JIT warm-up, not counted
            quiet = wrk(s.url, d, c)
            time.sleep(2)
            one = wrk(s.url, d, c, [(1.5, s.reload)])
            time.sleep(8)                   # the old workers gone
            chaos_actions = [(1 + i, s.reload) for i in range(5)]
            chaos_actions.insert(3, (3.5, s.kill_worker))
            chaos = wrk(s.url, 3 * d, c, chaos_actions)
        finally:
            s.stop()
        print("%s (%s, 2 workers, wrk -c%d):" % (
            kind, "Compojure example" if kind == "nginx-jvm"
            else "return 200", c))
        print("  quiet %d s: %d requests, max latency %.3f s"
              % (d, quiet[0], quiet[1]))
        print("  one reload: %d requests = %.2f of quiet, max latency "
              "%.3f s, %d socket errors, %d non-2xx"
              % (one[0], one[0] / quiet[0], one[1], one[2], one[3]))
        print("  five reloads + a SIGKILLed worker in %d s: %d requests, "
              "max latency %.3f s, %d socket errors, %d non-2xx"
              % (3 * d, chaos[0], chaos[1], chaos[2], chaos[3]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
