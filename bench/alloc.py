#!/usr/bin/env python3
"""Bytes allocated per request in nginx-jvm's JVMs (`make bench-alloc`).

A count, not a timing: it barely moves with the machine's load. Each server
is started alone (the benchmark suite's config, bin/nginx-jvm config, 2
workers; bench/benchsuite/servers.py), warmed with a fixed number of
requests (C2 compiles the request path: escape analysis removes what it
can), then the sum over its worker JVMs' threads of the bytes allocated is
read before and after a fixed number of requests (wrk -t1, stopped by its
script at that count) and divided by the requests wrk completed. The sums
come from bench/AllocCount.java (ThreadMXBean through each JVM's local JMX
agent): exact, where jcmd Thread.print -e (bench/bench.py's alloc_per_req)
rounds each thread's figure to 1 MB above 100 MB. What a sample itself
allocates in the JVMs (their RMI threads) is taken off; what they allocate
with no load is printed apart (its share of the run is inside bytes/req).

With --meter, each server also gets a jvm_status location, which turns
nginx.jvm.Meter on: alloc_sum / alloc_count of its histogram is what the
request's own threads allocated ($jvm_alloc_bytes). Meter itself allocates
per request in pool, virtual and coloop mode: measure those without it.
With --jfr DIR, a JFR recording (settings=profile: jdk.ObjectAllocationSample
with stacks) of each worker over the measured requests goes to DIR.

    bench/alloc.py [--servers ring-loop,java-coloop,...] [--requests N]
                   [--warmup N] [--conns C] [--route hello|json] [--meter]
                   [--jfr DIR] [--keep]
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from benchsuite import load, servers  # noqa: E402

# name -> (handler, launcher options, JDK, Java handler?)
KINDS = {"ring": ("bench.routes/handler", False),
         "java": ("bench.JavaRoutes", True)}
MODES = {"loop": ([], servers.JDK17), "coloop": (["--mode", "coloop"],
                                                 servers.JDK25),
         "pool": (["--mode", "pool"], servers.JDK17),
         "virtual": (["--mode", "virtual"], servers.JDK25)}
ALL = ["%s-%s" % (k, m) for k in KINDS for m in MODES]


def register(name, meter):
    """Adds server `name` (KIND-MODE) to the suite's table of nginx-jvm
    servers; with `meter`, a jvm_status location too."""
    kind, mode = name.split("-")
    handler, java = KINDS[kind]
    options, jdk = MODES[mode]
    options = list(options)
    if meter:
        options += ["--server", "location = /jvm-status { jvm_status; }"]
    key = "alloc-" + name
    servers.NGINX_JVM[key] = (handler, options, jdk, java)
    servers.SERVERS[key] = "nginx-jvm %s handler, jvm_mode %s" % (kind, mode)
    return key


# wrk's main thread sleeps for -d whatever its threads do: the script
# marks the file once it has its responses and stops its thread, and the
# caller then interrupts wrk, which prints its summary.
WRK_LUA = """
local n, limit = 0, tonumber(os.getenv("ALLOC_REQUESTS"))
response = function(status, headers, body)
    n = n + 1
    if n == limit then
        local f = io.open(os.getenv("ALLOC_DONE"), "w")
        f:write("done")
        f:close()
        wrk.thread:stop()
    end
end
"""


def fixed(url, n, conns, script):
    """wrk until `n` responses (one thread: the count is exact, plus at most
    `conns` requests in flight when it stops); (requests, errors)."""
    done = Path(str(script) + ".done")
    if done.exists():
        done.unlink()
    env = dict(os.environ, ALLOC_REQUESTS=str(n), ALLOC_DONE=str(done))
    p = subprocess.Popen(["wrk", "-t1", "-c%d" % conns, "-d3600s", "-s",
                          str(script), url], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=env)
    try:
        while not done.exists():
            if p.poll() is not None:
                raise RuntimeError("wrk ended early: %s" % p.stdout.read())
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    parsed = load.parse_wrk(out)
    return parsed["requests"], parsed["non2xx"], parsed["socket_errors"]


class Counter:
    """bench/AllocCount.java attached to a server's JVMs: sample() is the
    sum of the bytes their threads allocated so far, exactly (jcmd's
    Thread.print rounds each thread's to 1 MB above 100 MB)."""

    def __init__(self, server):
        self.proc = subprocess.Popen(
            [servers.JDK25 + "/bin/java", str(HERE / "AllocCount.java")]
            + [str(p) for p in server.jvms()], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.close()
            raise RuntimeError("AllocCount could not attach to %s's JVMs %s"
                               % (server.name, server.jvms()))

    def sample(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def status(server):
    """alloc_sum and alloc_count from the server's jvm_status page (the
    workers publish their figures every second: wait for them)."""
    time.sleep(2.5)
    with urllib.request.urlopen(server.url("jvm-status"), timeout=30) as r:
        text = r.read().decode()
    out = {}
    for key in ("alloc_sum", "alloc_count"):
        m = re.search(r"^nginx_jvm_handler_%s\s+([\d.e+]+)"
                      % key.replace("_", "_bytes_"), text, re.M)
        out[key] = float(m.group(1)) if m else None
    return out


def jfr(server, *command, pids=None):
    for pid in pids or server.jvms():
        subprocess.run([servers.JCMD, str(pid)] + list(command), check=True,
                       capture_output=True, timeout=120)


def measure(server, args, script):
    url = server.url(args.route)
    got, non2xx, _ = fixed(url, args.warmup, args.conns, script)
    if non2xx:
        raise RuntimeError("%s: %d answers not 2xx in the warm-up"
                           % (server.name, non2xx))
    counter = Counter(server)
    try:
        # what a sample itself costs the JVMs (their RMI threads), and what
        # they allocate with no request, over a few seconds
        # (the first sample sets JMX up: more than the later ones)
        counter.sample()
        a0 = counter.sample()
        a1 = counter.sample()
        t0 = time.monotonic()
        time.sleep(args.idle)
        a2 = counter.sample()
        sample, idle = a1 - a0, (a2 - a1 - (a1 - a0)) / (time.monotonic() - t0)
        s0 = status(server) if args.meter else None
        if args.jfr:
            jfr(server, "JFR.start", "name=alloc", "settings=profile")
        a0, t0 = counter.sample(), time.monotonic()
        n, non2xx, socket_errors = fixed(url, args.requests, args.conns,
                                         script)
        a1, took = counter.sample(), time.monotonic() - t0
        if args.jfr:
            os.makedirs(args.jfr, exist_ok=True)
            for pid in server.jvms():
                jfr(server, "JFR.dump", "name=alloc", "filename=%s" % (
                    Path(args.jfr).resolve() / ("%s-%d.jfr" % (server.name, pid))),
                    pids=[pid])
    finally:
        counter.close()
    if non2xx:
        raise RuntimeError("%s: %d answers not 2xx" % (server.name, non2xx))
    out = {"requests": n, "bytes": a1 - a0, "per_req": (a1 - a0 - sample) / n,
           "sample": sample, "idle_per_s": idle, "idle_share": idle * took / n,
           # wrk's read timeouts (2 s) on a loaded machine: the requests were
           # answered all the same, and counted when they were
           "socket_errors": socket_errors}
    if args.meter:
        s1 = status(server)
        out["meter_per_req"] = ((s1["alloc_sum"] - s0["alloc_sum"]) /
                                (s1["alloc_count"] - s0["alloc_count"]))
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", default=",".join(ALL),
                   help="comma-separated, of: %s" % ", ".join(ALL))
    p.add_argument("--requests", type=int, default=200000)
    p.add_argument("--warmup", type=int, default=50000)
    p.add_argument("--conns", type=int, default=50)
    p.add_argument("--route", default="hello", choices=("hello", "json"))
    p.add_argument("--idle", type=float, default=3.0,
                   help="seconds of no load measured before (default 3)")
    p.add_argument("--meter", action="store_true",
                   help="a jvm_status location too: Meter's figure")
    p.add_argument("--jvm-options", default="",
                   help="more jvm_options for nginx-jvm's workers")
    p.add_argument("--jfr", help="a JFR recording of each worker over the"
                   " measured requests, into this directory")
    p.add_argument("--keep", action="store_true",
                   help="keep the work directory (configs, logs)")
    args = p.parse_args(argv)
    names = [s for s in args.servers.split(",") if s]
    for n in names:
        if n not in ALL:
            p.error("unknown server %r" % n)
    work = Path(tempfile.mkdtemp(prefix="nginx-jvm-alloc-"))
    script = work / "count.lua"
    script.write_text(WRK_LUA)
    print("server            requests   bytes/req   idle B/s  idle share/req"
          "  sample B"
          + ("  meter B/req" if args.meter else ""))
    for name in names:
        key = register(name, args.meter)
        (work / name).mkdir()
        with servers.Fleet([key], work / name, args.jvm_options) as fleet:
            r = measure(fleet.servers[key], args, script)
        line = "%-16s %9d %11.1f %10.0f %15.1f" % (
            name, r["requests"], r["per_req"], r["idle_per_s"],
            r["idle_share"]) + " %9d" % r["sample"]
        if r["socket_errors"]:
            line += "  (wrk: %d socket errors)" % r["socket_errors"]
        if args.meter:
            line += " %12.1f" % r["meter_per_req"]
        print(line, flush=True)
        log = work / name / key / "logs" / "error.log"
        problems = [ln for ln in log.read_text(errors="replace").splitlines()
                    if re.search(r"\[(alert|crit|error|emerg)\]", ln)]
        if problems:
            print("  errors in %s:\n  %s" % (log, "\n  ".join(problems[:5])))
    if args.keep:
        print("(work directory %s)" % work)
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
