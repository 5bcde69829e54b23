#!/usr/bin/env python3
"""Soak: millions of requests and thousands of clients that leave mid-body,
per execution mode, against one worker with a fixed heap; fails unless the
worker stays flat.

Per mode (loop, pool, virtual: virtual takes the JDK 21+ the tests take):
1. one worker, `jvm_options -Xms<heap> -Xmx<heap>`;
2. warm-up: wrk on a small Ring answer for --warmup seconds, then a sample
   (worker RSS, open file descriptors, the runtime's live task count);
3. --seconds of wrk in --segment long runs, a sample after each; from the
   second run on, --aborts clients (raw sockets, a few threads) ask for a
   16 MB streamed body and close the socket after its first bytes;
4. a last sample once the load is over.

Flat means: the same worker answered all along (no crash); wrk saw no
socket error and no non-2xx answer; no [alert]/[crit]/[error]/[emerg] in
the error log; RSS grew by at most --rss-growth MB from the warm sample to
the end, and by at most half that over the second half of the run; no live
task left at the end; no more descriptors open at the end than after the
warm-up. The table goes to --out; the exit status is 1 when a mode is not
flat.

  bench/soak.py [--modes loop,pool,virtual] [--seconds 170] [--aborts 10000]
"""
import argparse
import datetime
import os
import re
import socket
import subprocess
import sys
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "tests"))
from harness import Nginx, jdk21_libjvm, ring_classpath, wait_for  # noqa: E402

LOCATIONS = """
        location /hello { jvm_content bench.soak/hello; }
        location /stream { jvm_content bench.soak/stream; }
        # on the loop in every mode: a pool or virtual task would count itself
        location /live-tasks { jvm_mode loop;
                               jvm_content testapp.offloop/live-tasks; }
"""


def wrk(port, seconds, conns):
    """wrk on /hello; returns requests, socket errors, non-2xx answers."""
    out = subprocess.run(
        ["wrk", "-t2", "-c%d" % conns, "-d%ds" % seconds, "--timeout", "5s",
         "http://127.0.0.1:%d/hello" % port],
        stdout=subprocess.PIPE, text=True, check=True).stdout
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                  r"timeout (\d+)", out)
    errors = sum(int(x) for x in m.groups()) if m else 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return requests, errors, int(m.group(1)) if m else 0


class Aborts:
    """count clients, over a few threads, that ask for /stream and close
    the socket after the first bytes of the body."""

    def __init__(self, port, count, threads=4):
        self.port = port
        self.left = count
        self.done = 0
        self.failed = []            # what went wrong, for the report
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, daemon=True)
                        for _ in range(threads)]

    def start(self):
        for t in self.threads:
            t.start()

    def join(self):
        for t in self.threads:
            t.join()

    def take(self):
        with self.lock:
            if self.left == 0:
                return False
            self.left -= 1
            return True

    def run(self):
        while self.take():
            try:
                with socket.create_connection(("127.0.0.1", self.port),
                                              timeout=10) as s:
                    s.sendall(b"GET /stream HTTP/1.1\r\nHost: soak\r\n\r\n")
                    got = b""
                    # past the header: the body has begun
                    while b"\r\n\r\n" not in got or len(got) < 4096:
                        b = s.recv(8192)
                        if not b:
                            raise OSError("closed before the body")
                        got += b
                    if not got.startswith(b"HTTP/1.1 200"):
                        raise OSError(got[:40])
                ok = True
            except OSError as e:
                ok = False
                err = str(e)
            with self.lock:
                if ok:
                    self.done += 1
                elif len(self.failed) < 10:
                    self.failed.append(err)


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def live_tasks(n):
    return int(n.get("/live-tasks").text)


def sample(n, pid, t0, label):
    time.sleep(1)           # nginx closes the connections wrk left
    return {"t": time.monotonic() - t0, "label": label, "rss": rss_kb(pid),
            "fds": fds(pid), "tasks": live_tasks(n)}


def soak(mode, args):
    """One mode; returns its result dict."""
    http = "    jvm_options -Xms%s -Xmx%s;" % (args.heap, args.heap)
    classpath = ring_classpath() + [os.path.join(TOP, "bench", "ring")]
    n = Nginx(LOCATIONS, http=http, classpath=classpath, mode=mode)
    res = {"mode": mode, "requests": 0, "errors": 0, "bad": 0,
           "samples": [], "problems": []}
    try:
        n.start(timeout=120)
        pid = n.worker_pids()[0]
        res["pid"] = pid
        t0 = time.monotonic()
        res["samples"].append(sample(n, pid, t0, "start"))
        r, e, b = wrk(n.port, args.warmup, args.connections)
        res["requests"] += r
        res["errors"] += e
        res["bad"] += b
        res["samples"].append(sample(n, pid, t0, "warm"))
        aborts = Aborts(n.port, args.aborts)
        segments = max(2, round(args.seconds / args.segment))
        for i in range(segments):
            if i == 1:
                aborts.start()
            r, e, b = wrk(n.port, args.segment, args.connections)
            res["requests"] += r
            res["errors"] += e
            res["bad"] += b
            res["samples"].append(sample(n, pid, t0, "load"))
            print("  %s %3.0fs: %d requests, %d aborts, RSS %d MB, fds %d, "
                  "tasks %d" % (mode, res["samples"][-1]["t"],
                                res["requests"], aborts.done,
                                res["samples"][-1]["rss"] // 1024,
                                res["samples"][-1]["fds"],
                                res["samples"][-1]["tasks"]), flush=True)
        aborts.join()
        res["aborts"] = aborts.done
        res["abort_failures"] = aborts.failed
        # the last streams and connections wind down
        wait_for(lambda: live_tasks(n) == 0, 10, 0.2)
        time.sleep(1)
        res["samples"].append(sample(n, pid, t0, "end"))
        res["workers"] = n.worker_pids()
        res["problems"] = n.log_problems()
    finally:
        n.stop()
        n.cleanup()
    return res


def verdict(res, args):
    """The reasons a mode is not flat (empty: flat)."""
    s = res["samples"]
    warm, end = s[1], s[-1]
    loads = [x for x in s if x["label"] == "load"]
    mid = loads[len(loads) // 2 - 1] if len(loads) > 1 else warm
    why = []
    if res["workers"] != [res["pid"]]:
        why.append("worker %d replaced by %s" % (res["pid"], res["workers"]))
    if res["errors"] or res["bad"]:
        why.append("wrk: %d socket errors, %d non-2xx"
                   % (res["errors"], res["bad"]))
    if res["aborts"] != args.aborts:
        why.append("%d of %d aborting clients got no body start (%s)"
                   % (args.aborts - res["aborts"], args.aborts,
                      "; ".join(res["abort_failures"])))
    if res["problems"]:
        why.append("error log: " + " | ".join(res["problems"][:3]))
    growth = (end["rss"] - warm["rss"]) / 1024
    if growth > args.rss_growth:
        why.append("RSS grew %.1f MB after warm-up (limit %d)"
                   % (growth, args.rss_growth))
    late = (end["rss"] - mid["rss"]) / 1024
    if late > args.rss_growth / 2:
        why.append("RSS grew %.1f MB over the second half (limit %.1f)"
                   % (late, args.rss_growth / 2))
    if end["tasks"] != 0:
        why.append("%d live tasks at the end" % end["tasks"])
    if end["fds"] > warm["fds"]:
        why.append("%d descriptors open at the end, %d after warm-up"
                   % (end["fds"], warm["fds"]))
    return why


def spark(values):
    """An ASCII line of values, scaled from their minimum to maximum."""
    marks = " .:-=+*#%@"
    lo, hi = min(values), max(values)
    if hi == lo:
        return marks[0] * len(values)
    return "".join(marks[round((v - lo) * (len(marks) - 1) / (hi - lo))]
                   for v in values)


def report(results, args, elapsed):
    jdk = {"virtual": jdk21_libjvm()}
    lines = [
        "# Soak: %s" % datetime.date.today().isoformat(), "",
        "`%s` (`make soak`), %.0f minutes in all. One worker "
        "per mode, `jvm_options -Xms%s -Xmx%s`; wrk -t2 -c%d on a small Ring "
        "answer (`bench.soak/hello`) for %d s of warm-up and %d s of load in "
        "%d s runs; from the second run on, %d clients (4 threads, raw "
        "sockets) ask for a 16 MB streamed body (a lazy seq) and close the "
        "socket after its first 4 KB. Samples after the warm-up and after "
        "each run, with no load: worker RSS, `/proc/PID/fd` entries, the "
        "runtime's live tasks (`nginx.jvm.Tasks`, read by "
        "`testapp.offloop/live-tasks`). JDK 17 for loop and pool; %s for "
        "virtual. A 2-core machine shared with other sessions' builds and "
        "tests." % (" ".join(["bench/soak.py"] + sys.argv[1:]), elapsed / 60, args.heap,
                    args.heap, args.connections, args.warmup, args.seconds,
                    args.segment, args.aborts,
                    os.path.dirname(os.path.dirname(os.path.dirname(
                        jdk["virtual"] or "-/-/-/-")))),
        "",
        "Flat: RSS growth from the warm sample to the end at most %d MB, at "
        "most %.0f MB over the second half; no live task at the end; no more "
        "descriptors than after the warm-up; the same worker throughout; no "
        "wrk error or non-2xx; nothing at [error] or worse in the log."
        % (args.rss_growth, args.rss_growth / 2), "",
        "| mode | requests | req/s | aborts | RSS warm → end (max) | "
        "fds start / warm / end | live tasks max / end | flat |",
        "|---|---|---|---|---|---|---|---|"]
    for res in results:
        if "error" in res:
            lines.append("| %s | — | — | — | — | — | — | **no**: %s |"
                         % (res["mode"], res["error"]))
            continue
        s = res["samples"]
        load_time = args.warmup + args.seconds
        lines.append(
            "| %s | %s | %.0f | %d | %.1f → %.1f MB (%.1f) | %d / %d / %d | "
            "%d / %d | %s |" % (
                res["mode"], "{:,}".format(res["requests"]),
                res["requests"] / load_time, res["aborts"],
                s[1]["rss"] / 1024, s[-1]["rss"] / 1024,
                max(x["rss"] for x in s) / 1024,
                s[0]["fds"], s[1]["fds"], s[-1]["fds"],
                max(x["tasks"] for x in s), s[-1]["tasks"],
                "yes" if not res["why"] else "**no**: " + "; ".join(res["why"])))
    lines += ["", "RSS over time (one mark per sample, scaled per mode from "
              "its minimum to its maximum):", "", "```"]
    for res in results:
        if "error" in res:
            continue
        rss = [x["rss"] / 1024 for x in res["samples"]]
        lines.append("%-8s %5.1f |%s| %5.1f MB" % (
            res["mode"], min(rss), spark(rss), max(rss)))
    lines += ["```", "", "Samples (seconds since start: RSS MB, fds, live "
              "tasks):", ""]
    for res in results:
        if "error" in res:
            continue
        lines.append("- %s: %s" % (res["mode"], ", ".join(
            "%.0f s: %.1f/%d/%d" % (x["t"], x["rss"] / 1024, x["fds"],
                                    x["tasks"])
            for x in res["samples"])))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default="loop,pool,virtual")
    ap.add_argument("--seconds", type=int, default=170,
                    help="load after the warm-up, per mode")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--segment", type=int, default=10,
                    help="seconds of wrk between samples")
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--aborts", type=int, default=10000)
    ap.add_argument("--heap", default="128m")
    ap.add_argument("--rss-growth", type=int, default=32,
                    help="MB of RSS growth allowed after the warm-up")
    ap.add_argument("--out", default=os.path.join(
        TOP, "bench", "results",
        "%s-soak.md" % datetime.date.today().isoformat()))
    args = ap.parse_args()

    start = time.monotonic()
    results = []
    for mode in args.modes.split(","):
        if mode == "virtual" and jdk21_libjvm() is None:
            print("soak: virtual skipped: no JDK 21 or newer")
            continue
        print("soak: %s" % mode, flush=True)
        try:
            res = soak(mode, args)
            res["why"] = verdict(res, args)
        except Exception as e:          # reported as a failed mode
            res = {"mode": mode, "error": "%s: %s" % (type(e).__name__, e)}
        results.append(res)
        print("soak: %s %s" % (mode, "flat" if not res.get("why", True) else
                               res.get("why") or res.get("error")), flush=True)
    text = report(results, args, time.monotonic() - start)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)
    print("soak: wrote %s" % args.out)
    return 0 if all(not r.get("why", True) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
