#!/usr/bin/env python3
"""jvm_mode pool's /hello against loop's, in one worker, for several
jvm_pool_size values (issue 21: what the hand-off costs, and how much of
it is the pool's wake-ups). For each size a fresh nginx with one worker
(Temurin 25, the worker's loop pinned to CPU 0 and wrk to CPU 1, as
bench/coloop.py does), 5 rounds of wrk -c50 -d3s on the loop location then
the pool one; prints the median of the rounds' pool/loop ratios and each
mode's median requests/s and worker CPU per request.

  bench/pool_size.py 100 16 8 2 1
"""
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
sys.path.insert(0, HERE)
from harness import JAR, Nginx  # noqa: E402
import coloop  # noqa: E402

MODES = ("loop", "pool")


def main(sizes):
    classes = tempfile.mkdtemp(prefix="nginx-jvm-pool-size-")
    coloop.compile_handlers(classes)
    coloop.WRK_PREFIX[:] = ["taskset", "-c", "1"]
    for size in sizes:
        http = ("    jvm_path %s/lib/server/libjvm.so;\n    jvm_pool_size %d;\n"
                "    jvm_queue 1000;\n" % (coloop.JDK, size))
        locs = "".join("        location /%s/hello { jvm_mode %s; jvm_content bench.Coloop$Hello; }\n"
                       % (m, m) for m in MODES)
        with Nginx(locs, http=http, classpath=[str(JAR), classes]) as ng:
            pid = ng.worker_pids()[0]
            os.sched_setaffinity(pid, {0})      # the event loop's thread
            for m in MODES:                     # warm-up
                coloop.wrk(ng.port, "/%s/hello" % m, 3, 50)
            runs = {m: [] for m in MODES}
            for _ in range(5):
                for m in MODES:
                    runs[m].append(coloop.wrk(ng.port, "/%s/hello" % m, 3, 50, pid))
            ratio = statistics.median(p[0] / l[0] for p, l in zip(runs["pool"], runs["loop"]))
            print("jvm_pool_size %d: pool/loop %.3f; %s" % (size, ratio, ", ".join(
                "%s %.0f/s %.2f us" % (m, statistics.median(x[0] for x in runs[m]),
                                       statistics.median(x[1] for x in runs[m])) for m in MODES)),
                  flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [100, 16, 8, 2, 1])
