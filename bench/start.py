#!/usr/bin/env python3
"""Start time: from the launcher command to the first response.

For each app (a handler that uses only clojure.core, and the Compojure
example), runs `bin/nginx-jvm run` ROUNDS times, polls GET / on loopback
every 5 ms until an answer comes, and reports the median and the range.
Between rounds the launcher is stopped with SIGTERM and waited for.

  bench/start.py [--rounds N] [--workers N] [--jvm-option OPT ...]
                 [--apps tiny,compojure] [--cache DIR | --no-cache]
"""
import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ring_classpath():
    with open(os.path.join(TOP, "scripts/ring-jars.txt")) as f:
        jars = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    return ":".join("/usr/share/java/%s.jar" % j for j in jars)


APPS = {
    "tiny": ("bench.core/handler", os.path.join(TOP, "bench/app"), "/hello"),
    "compojure": ("hello.core/app",
                  os.path.join(TOP, "examples/hello/src") + ":" + ring_classpath(),
                  "/"),
}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def one_start(app, workers, options, env, limit=60.0):
    handler, classpath, path = APPS[app]
    port = free_port()
    cmd = [os.path.join(TOP, "bin/nginx-jvm"), "run", "--handler", handler,
           "--classpath", classpath, "--port", str(port),
           "--workers", str(workers)]
    for o in options:
        cmd += ["--jvm-option", o]
    log = tempfile.TemporaryFile()
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    elapsed = None
    try:
        while time.monotonic() - t0 < limit:
            try:
                with urllib.request.urlopen(
                        "http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
                    r.read()
                elapsed = time.monotonic() - t0
                break
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.005)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if elapsed is None:
        log.seek(0)
        sys.stderr.write(log.read().decode(errors="replace")[-3000:])
        raise SystemExit("%s: no answer within %.0f s" % (app, limit))
    return elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--apps", default="tiny,compojure")
    ap.add_argument("--jvm-option", action="append", default=[])
    ap.add_argument("--cache", help="NGINX_JVM_CACHE for the launcher")
    ap.add_argument("--no-cache", action="store_true",
                    help="start without the class cache")
    ap.add_argument("--cold", action="store_true",
                    help="a new, empty cache directory for each app: the "
                         "first start builds it (left in /tmp)")
    args = ap.parse_args()

    env = dict(os.environ)
    if args.no_cache:
        env["NGINX_JVM_CACHE"] = "off"
    elif args.cache:
        env["NGINX_JVM_CACHE"] = args.cache

    print("start time, launcher command to first response: %d workers, %s"
          % (args.workers, os.environ.get("JAVA_HOME", "default JDK")))
    for app in args.apps.split(","):
        if args.cold:
            env["NGINX_JVM_CACHE"] = tempfile.mkdtemp(prefix="nginx-jvm-cache-")
            # the workers (nobody, when started as root) read it
            os.chmod(env["NGINX_JVM_CACHE"], 0o755)
        first = one_start(app, args.workers, args.jvm_option, env)
        times = [one_start(app, args.workers, args.jvm_option, env)
                 for _ in range(args.rounds)]
        print("%-10s first %.3f s, then median %.3f s (min %.3f, max %.3f, "
              "%d rounds)" % (app, first, statistics.median(times),
                              min(times), max(times), len(times)))


if __name__ == "__main__":
    main()
