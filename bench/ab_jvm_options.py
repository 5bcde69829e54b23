#!/usr/bin/env python3
"""A/B smoke of JVM options (not a benchmark): an app of bench/start.py
through the launcher, 2 workers, twice at once: A with $A_OPTS, B with the
options given. After a 5 s warm-up of each, wrk -t1 -c50 on A then B for
$ROUNDS rounds of $SECS seconds; prints each one's req/s, and its GC count
and total pause from -Xlog:gc (those move less than req/s on a shared
machine).

  A_OPTS=-Xms32m [APP=tiny|compojure] [ROUNDS=3] [SECS=5] \\
      bench/ab_jvm_options.py -Xms16m
"""
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from start import APPS, TOP, free_port  # noqa: E402


def start(name, options, work, app):
    handler, classpath, path = APPS[app]
    port = free_port()
    cmd = [os.path.join(TOP, "bin/nginx-jvm"), "run", "--handler", handler,
           "--classpath", classpath, "--port", str(port), "--workers", "2",
           "--jvm-option", "-Xlog:gc:file=%s/%s-gc-%%w.log" % (work, name)]
    for o in options:
        cmd += ["--jvm-option", o]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    return proc, "http://127.0.0.1:%d%s" % (port, path)


def wait_serving(proc, url):
    # a new option is a new class cache entry: minutes when loaded
    deadline = time.monotonic() + 300
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("%s: not serving" % url)
            time.sleep(0.5)


def wrk(url, seconds):
    out = subprocess.run(["wrk", "-t1", "-c50", "-d%ds" % seconds, url],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def gc_figures(work, name):
    count, pauses = 0, 0.0
    for f in glob.glob("%s/%s-gc-*.log" % (work, name)):
        with open(f) as log:
            for line in log:
                m = re.search(r"Pause (Young|Full).* ([\d.]+)ms", line)
                if m:
                    count += 1
                    pauses += float(m.group(2))
    return count, pauses


def main():
    app = os.environ.get("APP", "tiny")
    rounds = int(os.environ.get("ROUNDS", 3))
    secs = int(os.environ.get("SECS", 5))
    options = {"A": os.environ.get("A_OPTS", "").split(), "B": sys.argv[1:]}
    work = tempfile.mkdtemp(prefix="nginx-jvm-ab.")
    os.chmod(work, 0o777)       # the workers (nobody) write their GC logs
    servers = {}
    rates = {"A": [], "B": []}
    try:
        for name in "AB":
            servers[name] = start(name, options[name], work, app)
        for name in "AB":
            wait_serving(*servers[name])
        time.sleep(3)
        for name in "AB":
            wrk(servers[name][1], 5)
        for _ in range(rounds):
            for name in "AB":
                rates[name].append(wrk(servers[name][1], secs))
    finally:
        for proc, _ in servers.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait()
    for name in "AB":
        count, pauses = gc_figures(work, name)
        r = sorted(rates[name])
        print("%s %-24s req/s %s, median %.0f; %d GCs, %.0f ms of pauses"
              % (name, " ".join(options[name]) or "(defaults)",
                 " ".join("%.0f" % x for x in rates[name]),
                 r[len(r) // 2], count, pauses))


if __name__ == "__main__":
    main()
