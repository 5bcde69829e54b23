#!/usr/bin/env python3
"""Faults under a bounded load, in every execution mode, each compared
with plain nginx under the same script (`make reliability`, a few minutes).

Each scenario runs wrk (1 thread, 20 connections, --duration seconds) on a
route that answers at once while the fault happens, and reports the
requests, the non-2xx answers, wrk's socket errors and the largest
latency; the scenario's own requests (the ones that meet the fault) are
checked apart. Pass criteria, per scenario (PLAIN: plain nginx's figures
in the same scenario):

- reload x5 (SIGHUP to the master, one a second): no non-2xx; socket
  errors at most PLAIN's plus one per connection (a reload closes idle
  keep-alive connections, for nginx itself too).
- kill -9 of a worker: no non-2xx; socket errors at most the connections
  (those the dead worker held, at most all of them).
- graceful quit (SIGQUIT) with 10 slow downloads in flight: every download
  completes with all its bytes; the load's requests in flight complete (no
  non-2xx); new connections are refused after the quit, as for PLAIN.
- out of memory in a handler (5 requests): each answers 500; the load has
  no non-2xx and no socket error; the same worker goes on.
- a handler that hangs (5 requests; loop mode: an async handler that never
  answers, since a blocking one on the loop stops its worker by design):
  each answers 504 after jvm_response_timeout; the load is untouched.
- a full queue (pool and virtual: 30 requests of 0.5 s at once, pool of 2,
  queue of 2 or 4): the excess answers 503 at once, the rest 200; the load
  is untouched.

Writes a table to --out (default bench/results/DATE-faults.md) and exits 1
when a criterion fails.

    reliability/faults.py [--modes loop,pool,virtual] [--duration 8] [--out F]
"""

import argparse
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from harness import Nginx, dechunk, jdk21_libjvm   # noqa: E402

CONNS = 20
BIG = 8 * 1024 * 1024            # a slow download's size

PLAIN = """
        location /ok { return 200 "ok"; }
        location /big { root @DATA@; }
"""

JVM = """
        location /ok { jvm_content testapp.ring/pid; }
        location /ok-loop { jvm_mode loop; jvm_content testapp.ring/pid; }
        location /big { jvm_content testapp.ring/stream-body; }
        location /oom { jvm_content testapp.ring/oom; }
        location /hang {
            jvm_response_timeout 1s;
            jvm_content testapp.ring/slow;
        }
        location /hang-async {
            jvm_response_timeout 1s;
            jvm_async on;
            jvm_content testapp.offloop/async-never;
        }
        location /queue { jvm_content testapp.ring/slow; }
"""


# --- load -------------------------------------------------------------------

def wrk(port, seconds, actions=(), path="/ok"):
    """wrk on path while each (delay, fn) of actions runs; returns a dict."""
    proc = subprocess.Popen(
        ["wrk", "-t1", "-c%d" % CONNS, "-d%ds" % seconds, "--timeout", "5s",
         "http://127.0.0.1:%d%s" % (port, path)],
        stdout=subprocess.PIPE, text=True)
    start = time.monotonic()
    results = []
    for delay, fn in actions:
        time.sleep(max(0, start + delay - time.monotonic()))
        results.append(fn())
    out = proc.communicate()[0]
    r = {"requests": int(re.search(r"(\d+) requests in", out).group(1)),
         "non2xx": 0, "errors": 0, "max": max_latency(out), "results": results}
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                  r"timeout (\d+)", out)
    if m:
        r["errors"] = sum(int(x) for x in m.groups())
        r["by"] = "connect %s, read %s, write %s, timeout %s" % m.groups()
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        r["non2xx"] = int(m.group(1))
    return r


def max_latency(out):
    lat = re.search(r"Latency\s+\S+\s+\S+\s+(\S+)", out).group(1)
    unit = re.match(r"[\d.]+(\D+)", lat).group(1)
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[unit]
    return float(lat[:-len(unit)]) * scale


def get(port, path, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        return r.status
    except (OSError, http.client.HTTPException) as e:
        return type(e).__name__
    finally:
        c.close()


def in_parallel(port, path, n):
    """n requests at once; returns their statuses."""
    out = [None] * n

    def one(i):
        out[i] = get(port, path)
    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def slow_download(port, path, got):
    """Reads a download at about 4 MB/s; appends the bytes received."""
    def run():
        try:
            with socket.create_connection(("127.0.0.1", port), 30) as s:
                s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n"
                          b"Connection: close\r\n\r\n" % path.encode())
                data = b""
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    data += b
                    time.sleep(0.015)
            head, _, body = data.partition(b"\r\n\r\n")
            if b"transfer-encoding: chunked" in head.lower():
                body, complete = dechunk(body)
                if not complete:
                    body = body[:-1]        # cut: never counts as whole
            got.append(len(body))
        except OSError:
            got.append(-1)
    t = threading.Thread(target=run)
    t.start()
    return t


# --- scenarios --------------------------------------------------------------

def reloads(n, d):
    actions = [(1 + i, lambda: os.kill(n.master_pid, signal.SIGHUP))
               for i in range(5)]
    return wrk(n.port, d, actions)


def kill_worker(n, d):
    return wrk(n.port, d, [(2, lambda: os.kill(n.worker_pids()[0],
                                               signal.SIGKILL))])


def quit_with_downloads(n, d):
    got = []
    path = "/big?n=%d" % BIG if n.jvm else "/big/big.bin"
    threads = []

    def start():
        threads.extend(slow_download(n.port, path, got) for _ in range(10))

    def quit_():
        os.kill(n.master_pid, signal.SIGQUIT)
    r = wrk(n.port, d, [(1, start), (2, quit_)])
    for t in threads:
        t.join(60)
    r["downloads"] = got
    r["ok"] = len(got) == 10 and all(g == BIG for g in got)
    n.proc.wait(30)
    return r


def oom(n, d):
    before = set(n.worker_pids())
    r = wrk(n.port, d, [(2, lambda: [get(n.port, "/oom") for _ in range(5)])])
    statuses = r["results"][0]
    r["ok"] = statuses == [500] * 5 and set(n.worker_pids()) == before
    r["statuses"] = statuses
    return r


def hang(n, d):
    path = "/hang-async" if n.mode == "loop" else "/hang?ms=60000"
    r = wrk(n.port, d, [(2, lambda: in_parallel(n.port, path, 5))])
    statuses = r["results"][0]
    r["ok"] = statuses == [504] * 5
    r["statuses"] = statuses
    return r


def full_queue(n, d):
    """One worker, a pool of 2 and a queue of 2 (pool) or 4 requests in
    flight (virtual); the load on a loop route, which needs no room."""
    r = wrk(n.port, d, [(2, lambda: in_parallel(n.port, "/queue?ms=500",
                                                30))], path="/ok-loop")
    statuses = r["results"][0]
    capacity = 4
    r["statuses"] = {s: statuses.count(s) for s in set(statuses)}
    r["ok"] = (set(statuses) <= {200, 503}
               and statuses.count(200) >= capacity
               and statuses.count(503) >= 30 - capacity - 2)
    return r


SCENARIOS = [("reload x5", reloads), ("kill -9 a worker", kill_worker),
             ("quit, downloads in flight", quit_with_downloads),
             ("out of memory", oom), ("handler hangs", hang),
             ("full queue", full_queue)]


def server(kind, mode, data, scenario=None):
    if kind == "nginx":
        n = Nginx(PLAIN.replace("@DATA@", str(data)), workers=2)
    elif scenario is full_queue:
        n = Nginx(JVM, http="    jvm_pool_size 2;\n    jvm_queue %d;\n"
                  % (2 if mode == "pool" else 4), mode=mode, workers=1)
    else:
        # a bounded heap, for the out-of-memory scenario
        n = Nginx(JVM, http="    jvm_options -Xmx96m;\n", mode=mode,
                  workers=2)
    n.jvm = kind != "nginx"
    n.start()
    return n


def stop(n):
    if n.proc.poll() is None:
        n.stop()
    n.cleanup()


def judge(name, r, plain):
    if name == "reload x5":
        return r["non2xx"] == 0 and r["errors"] <= plain["errors"] + CONNS
    if name == "kill -9 a worker":
        return r["non2xx"] == 0 and r["errors"] <= CONNS
    if name == "quit, downloads in flight":
        return r["ok"] and r["non2xx"] == 0
    return r["ok"] and r["non2xx"] == 0 and r["errors"] == 0


def run(args, modes, data):
    """Every scenario against plain nginx and each mode: rows, failures."""
    rows, failed = [], []
    plain = {}
    for name, fn in SCENARIOS:
        if fn in (reloads, kill_worker, quit_with_downloads):
            n = server("nginx", None, data)
            try:
                plain[name] = fn(n, args.duration)
            finally:
                stop(n)
            rows.append((name, "plain nginx", plain[name], "-"))
        for mode in modes:
            if fn is full_queue and mode == "loop":
                continue                # no queue on the loop
            n = server("jvm", mode, data, fn)
            try:
                r = fn(n, args.duration)
            finally:
                stop(n)
            ok = judge(name, r, plain.get(name, {"errors": 0}))
            rows.append((name, "nginx-jvm " + mode, r, "pass" if ok else "FAIL"))
            if not ok:
                failed.append("%s, %s: %r" % (name, mode, r))
            print("%-26s %-18s %s" % (name, mode, rows[-1][3]), flush=True)
    return rows, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default="loop,pool,virtual")
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--out", default=str(
        ROOT / "bench" / "results" / ("%s-faults.md"
                                      % time.strftime("%Y-%m-%d"))))
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",")
             if m != "virtual" or jdk21_libjvm()]

    data = Path(os.environ.get("TMPDIR", "/tmp")) / ("faults-%d" % os.getpid())
    (data / "big").mkdir(parents=True, exist_ok=True)
    try:
        (data / "big" / "big.bin").write_bytes(
            bytes(i % 251 for i in range(BIG)))
        rows, failed = run(args, modes, data)
    finally:
        # the 8 MB file goes whatever happened, Ctrl-C included
        shutil.rmtree(data, ignore_errors=True)

    lines = ["# Faults under load", "",
             "reliability/faults.py --duration %d; %s; %d cores; wrk -t1 -c%d "
             "on a route that answers at once; criteria in the script's "
             "docstring." % (args.duration, time.strftime("%Y-%m-%d %H:%M"),
                            os.cpu_count(), CONNS), "",
             "| fault | server | requests | non-2xx | socket errors | "
             "max latency | the fault's own requests | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for name, who, r, verdict in rows:
        own = r.get("statuses", r.get("downloads", ""))
        lines.append("| %s | %s | %d | %d | %d%s | %.3f s | %s | %s |" % (
            name, who, r["requests"], r["non2xx"], r["errors"],
            " (%s)" % r["by"] if r.get("by") else "", r["max"], own, verdict))
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)
    for f in failed:
        print("FAIL:", f, file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
