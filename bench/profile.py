#!/usr/bin/env python3
"""What a profile costs a busy server (docs/operations.md, "Profiling every
worker at once"; issue 48: under 5% of its rate while it runs).

`nginx-jvm run` of a Java hello handler with 2 workers and a jvm_status
location; wrk drives it for SECONDS with no profile, then for SECONDS while
a CPU profile of the same length runs, then with an allocation profile,
then again with none, ROUNDS times (each profiled window against the mean of
its round's two unprofiled ones); each window's rate and its workers'
CPU time per request (from /proc: utime + stime), and the ratios with the
profile to without, per round and their median.

    python3 bench/profile.py [ROUNDS [SECONDS [MODE [WORK]]]]  # make bench-profile

WORK is hello (default: testapp.Answer, a few microseconds of Java a
request, so few samples) or busy (testapp.Cost, 1 ms of Java spinning and
4 KB allocated a request: every sample lands in a handler's stack).
"""
import os
import re
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests"))
from harness import Launcher, java_classes, request  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu(pids):
    total = 0
    for pid in pids:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def window(n, pids, seconds, profile=None, path="/"):
    """(requests a second, CPU µs a request) of one wrk run; with
    `profile` (cpu or alloc) one of the same seconds asked meanwhile."""
    answer = {}

    def ask():
        r = request(n.port, "GET", "/jvm-status/profile?seconds=%d&event=%s&format=folded"
                    % (seconds, profile), timeout=seconds + 60)
        answer["status"] = r.status
        answer["stacks"] = len(r.text.splitlines())
    before = cpu(pids)
    t = None
    if profile:
        t = threading.Thread(target=ask)
        t.start()
    out = subprocess.run(["wrk", "-t1", "-c32", "-d%ds" % seconds,
                          "http://127.0.0.1:%d%s" % (n.port, path)],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    used = cpu(pids) - before
    if t:
        t.join()
        assert answer.get("status") == 200, answer
    m = re.search(r"(\d+) requests in", out)
    requests = int(m.group(1))
    return requests / seconds, used / requests * 1e6, answer.get("stacks")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    mode = sys.argv[3] if len(sys.argv) > 3 else "loop"
    work = sys.argv[4] if len(sys.argv) > 4 else "hello"
    handler, path = {"hello": ("testapp.Answer", "/"),
                     "busy": ("testapp.Cost", "/?spin=1&alloc=4096")}[work]
    n = Launcher(["--handler", handler, "--classpath", java_classes(),
                  "--status", "/jvm-status", "--reuseport"], workers=2, mode=mode)
    with n:
        pids = n.worker_pids()
        for _ in range(3000):                   # warm: both workers' JITs
            request(n.port, "GET", path)
        # a worker's first JFR recording sets JFR up (seconds of CPU, once
        # in its life): not what a profile costs after, so not measured
        for kind in ("cpu", "alloc"):
            r = request(n.port, "GET", "/jvm-status/profile?seconds=1&event=%s&format=folded"
                        % kind, timeout=90)
            assert r.status == 200, r
        print("uptime: %s" % open("/proc/loadavg").read().strip())
        print("mode %s, %s (%s %s), 2 workers, wrk -t1 -c32 -d%ds, %d rounds, JAVA_HOME=%s"
              % (mode, work, handler, path, seconds, rounds, os.environ.get("JAVA_HOME", "default")))
        ratios = {"cpu": [], "alloc": []}
        # each round brackets its profiled windows between two without
        # (before and after), and compares them with the mean of the two:
        # a machine whose speed drifts during a round biases neither side
        for i in range(rounds):
            before = window(n, pids, seconds, path=path)
            print("round %d: no profile      %8.0f req/s  %6.1f us CPU/req"
                  % (i + 1, before[0], before[1]))
            profiled = {}
            for kind in ("cpu", "alloc"):
                profiled[kind] = window(n, pids, seconds, kind, path)
            after = window(n, pids, seconds, path=path)
            print("round %d: no profile      %8.0f req/s  %6.1f us CPU/req"
                  % (i + 1, after[0], after[1]))
            base = ((before[0] + after[0]) / 2, (before[1] + after[1]) / 2)
            for kind, with_ in profiled.items():
                ratios[kind].append((with_[0] / base[0], with_[1] / base[1]))
                print("round %d: %-5s profile    %8.0f req/s  %6.1f us CPU/req"
                      "  (rate x%.3f, CPU/req x%.3f; %d stacks)"
                      % (i + 1, kind, with_[0], with_[1], with_[0] / base[0],
                         with_[1] / base[1], with_[2]))
        for kind, r in ratios.items():
            print("median, %s profile running: rate x%.3f, CPU a request x%.3f"
                  % (kind, statistics.median(x for x, _ in r),
                     statistics.median(y for _, y in r)))


if __name__ == "__main__":
    main()
