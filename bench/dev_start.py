#!/usr/bin/env python3
"""How long `nginx-jvm dev` takes to start, with its class cache (the
archive of the jars' classes, docs/operations.md "A development loop on
any laptop") and without (--cache off): from the launcher's start until
both of 2 workers answered, and the CPU time each worker spent to get
there (read from /proc once it answered: a figure a busy machine disturbs
less than the wall clock).  Each run: off, then the first start with an
empty cache (it makes the archive), then the second (it maps it).

    python3 bench/dev_start.py [RUNS]        # as root, from the checkout
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests"))
from harness import LAUNCHER, free_port, request  # noqa: E402

UTIL = '(ns devtest.util)\n(defn version [] "v1")\n'
APP = """(ns devtest.app (:require [devtest.util :as u]))
(defn handler [req]
  {:status 200
   :body (str (u/version) " " (.pid (java.lang.ProcessHandle/current)))})
"""
TICK = os.sysconf("SC_CLK_TCK")


def cpu(pid):
    """utime + stime of a process, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def start(src, cache):
    """(seconds until both workers answered, CPU seconds of each)."""
    port = free_port()
    args = [LAUNCHER, "dev", "--handler", "devtest.app/handler", "--classpath",
            src, "--workers", "2", "--reuseport", "--port", str(port)]
    if cache is None:
        args += ["--cache", "off"]
    env = dict(os.environ, NGINX_JVM_CACHE=cache or "/nonexistent")
    started = time.monotonic()
    p = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    pids = set()
    try:
        while len(pids) < 2:
            if time.monotonic() - started > 300 or p.poll() is not None:
                raise SystemExit("dev did not start")
            try:
                r = request(port, "GET", "/", timeout=5)
            except OSError:
                time.sleep(0.05)
                continue
            if r.status == 200:
                pids.add(int(r.text.split()[1]))
        took = time.monotonic() - started
        return took, sorted(cpu(pid) for pid in pids)
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait()


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    top = tempfile.mkdtemp(prefix="nginx-jvm-dev-start-")
    try:
        src = os.path.join(top, "src")
        os.makedirs(os.path.join(src, "devtest"))
        for name, text in (("util.clj", UTIL), ("app.clj", APP)):
            with open(os.path.join(src, "devtest", name), "w") as f:
                f.write(text)
        subprocess.run(["chmod", "-R", "a+rX", top], check=True)
        cache = os.path.join(top, "cache")
        print("| run | cache | both workers answered | CPU of each worker | load |")
        print("|---|---|---|---|---|")
        for i in range(runs):
            for label in ("off", "first start (makes the archive)",
                          "second start (maps it)"):
                if label.startswith("first"):
                    shutil.rmtree(cache, ignore_errors=True)
                    os.makedirs(cache)
                    os.chmod(cache, 0o755)
                took, cpus = start(src, None if label == "off" else cache)
                print("| %d | %s | %.1f s | %s | %s |"
                      % (i + 1, label, took,
                         " and ".join("%.2f s" % c for c in cpus),
                         open("/proc/loadavg").read().split()[0]), flush=True)
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
