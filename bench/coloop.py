#!/usr/bin/env python3
"""jvm_mode coloop beside loop, virtual and pool, in one nginx worker
(Temurin 25 JDK), measured in one run so that the ratios hold on a shared
machine.

1. /hello in each mode, a Java handler and a Ring one (bench/app's) that
   answer at once: wrk runs of --duration seconds, the modes in turn,
   --rounds rounds (the order rotates each round); the median requests/s
   of each, the worker's CPU time per request, and coloop's ratio to loop
   (the median of the rounds' ratios).
2. /pg (SELECT pg_sleep(0.05) over one 100-connection HikariCP pool, a
   private PostgreSQL: bench/realapp/pg.py) in coloop, virtual and pool
   (jvm_pool_size 100): --bursts bursts of 500 concurrent requests each
   (fresh connections, asyncio), the time of each burst (ideal: 5 round
   trips, 0.25 s), while another process asks for a static file of the same
   worker every 5 ms on a keep-alive connection: its latency's median, 99th
   percentile and max. The modes take turns, --pg-rounds rounds (the order
   rotating), and each mode's figures pool its rounds: a p99 of one run of
   10 bursts (about 600 samples: the 6th slowest) moved by 2 ms between
   two runs of the same mode.

  bench/coloop.py [--rounds 5] [--duration 5] [--bursts 10] [--pg-rounds 3]
                  [--no-pg] [--no-hello] [--no-pin]
"""
import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests"))
sys.path.insert(0, os.path.join(HERE, "realapp"))
import harness  # noqa: E402
from harness import JAR, Nginx, request  # noqa: E402

JDK = "/usr/lib/jvm/temurin-25-jdk-amd64"
LIBS = os.path.join(TOP, "build", "realapp-lib")
MODES = ["loop", "coloop", "virtual", "pool"]
PG_MODES = ["coloop", "virtual", "pool"]
BURST = 500


def compile_handlers(out):
    cp = "%s:%s/*" % (JAR, LIBS)
    subprocess.run([JDK + "/bin/javac", "--release", "17", "-cp", cp, "-d", out,
                    os.path.join(HERE, "coloop", "bench", "Coloop.java")], check=True)


def locations(pg):
    text = "        location /static.html { root @PREFIX@/html; }\n"
    for m in MODES:
        text += "        location /%s/hello { jvm_mode %s; jvm_content bench.Coloop$Hello; }\n" % (m, m)
        text += "        location /ring/%s/hello { jvm_mode %s; jvm_content bench.core/handler; }\n" % (m, m)
    if pg:
        for m in PG_MODES:
            text += "        location /%s/pg { jvm_mode %s; jvm_content bench.Coloop$Pg; }\n" % (m, m)
    return text


def cpu_ticks(pid):
    """The worker's CPU time so far (user + system), in clock ticks."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


# --pin (the default): for /hello, the worker's event loop on CPU 0, wrk on
# CPU 1 (/pg is not pinned: PostgreSQL and the client share the machine
# with the worker). Unpinned, the
# kernel's placement of the two (same core or not: who pays loopback's
# softirq work) moved a whole round by -15 % to +14 %, both modes alike,
# and the round's ratio with it.
WRK_PREFIX = []


def wrk(port, path, duration, conns, pid=None):
    before = cpu_ticks(pid) if pid else 0
    out = subprocess.run(WRK_PREFIX + ["wrk", "-t1", "-c%d" % conns, "-d%ds" % duration,
                          "http://127.0.0.1:%d%s" % (port, path)],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError("wrk %s: %s non-2xx answers" % (path, errors.group(1)))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    if pid is None:
        return rps
    n = int(re.search(r"(\d+) requests in", out).group(1))
    us = (cpu_ticks(pid) - before) / os.sysconf("SC_CLK_TCK") * 1e6 / n
    return rps, us


def hello(port, pid, rounds, duration, conns, prefix):
    rps = {m: [] for m in MODES}
    cpu = {m: [] for m in MODES}
    for m in MODES:                     # warm-up: the JIT, every path
        wrk(port, "%s/%s/hello" % (prefix, m), 2, conns)
    for r in range(rounds):
        order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
        for m in order:
            x, us = wrk(port, "%s/%s/hello" % (prefix, m), duration, conns, pid)
            rps[m].append(x)
            cpu[m].append(us)
        print("  round %d: %s" % (r + 1, ", ".join("%s %.0f/s %.2f us" % (m, rps[m][-1], cpu[m][-1])
                                                    for m in MODES)), flush=True)
    ratios = [c / l for c, l in zip(rps["coloop"], rps["loop"])]
    return rps, cpu, ratios


async def one(port, path):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(("GET %s HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n" % path).encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    return data.split(b" ", 2)[1]


async def burst(port, path):
    start = time.monotonic()
    statuses = await asyncio.gather(*(one(port, path) for _ in range(BURST)))
    took = time.monotonic() - start
    bad = [s for s in statuses if s != b"200"]
    if bad:
        raise RuntimeError("%s: %d answers were not 200: %r" % (path, len(bad), bad[:5]))
    return took


def probe(port, path):
    """--probe: GET path every 5 ms until stdin closes; prints the latencies."""
    import http.client
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    times = []
    while not stop.is_set():
        t = time.monotonic()
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        times.append(time.monotonic() - t)
        if r.status != 200:
            raise RuntimeError("static: %d" % r.status)
        time.sleep(0.005)
    print(json.dumps(times))


def pg_round(port, mode, bursts):
    prober = subprocess.Popen([sys.executable, __file__, "--probe", str(port), "/static.html"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    took = [asyncio.run(burst(port, "/%s/pg" % mode)) for _ in range(bursts)]
    out, _ = prober.communicate("", timeout=60)
    return took, json.loads(out)


def pin(pid, cpus):
    """Every thread of process pid, and of its children (PostgreSQL's
    backends), on the CPUs cpus."""
    for p in [pid] + harness.children(pid):
        try:
            tids = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for t in tids:
            try:
                os.sched_setaffinity(int(t), cpus)
            except OSError:
                pass                    # a thread that ended meanwhile


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--bursts", type=int, default=10)
    ap.add_argument("--pg-rounds", type=int, default=3)
    ap.add_argument("--no-pg", action="store_true")
    ap.add_argument("--no-hello", action="store_true", help="measure /pg only")
    ap.add_argument("--probe", nargs=2)
    ap.add_argument("--no-pin", dest="pin", action="store_false",
                    help="leave the worker and wrk where the kernel puts them")
    a = ap.parse_args()
    if a.probe:
        probe(int(a.probe[0]), a.probe[1])
        return
    pg = None
    if not a.no_pg:
        from pg import Postgres, missing_reason
        why = missing_reason()
        if why:
            sys.exit("no PostgreSQL: %s (--no-pg to measure /hello only)" % why)
        pg = Postgres(max_connections=200).start()
    classes = tempfile.mkdtemp(prefix="nginx-jvm-coloop-bench-")
    try:
        compile_handlers(classes)
        # 500 clients and 100 database connections in one worker
        harness.CONF = harness.CONF.replace("worker_connections 256", "worker_connections 4096")
        http = ("    jvm_path %s/lib/server/libjvm.so;\n    jvm_pool_size 100;\n"
                "    jvm_queue 1000;\n" % JDK)
        if pg:
            http += "    jvm_options -Dbench.jdbc=%s;\n" % pg.jdbc_url()
        for o in os.environ.get("BENCH_JVM_OPTIONS", "").split():
            http += "    jvm_options %s;\n" % o
        if a.pin:
            WRK_PREFIX[:] = ["taskset", "-c", "1"]
        with Nginx(locations(pg), http=http, main="worker_rlimit_nofile 8192;",
                   classpath=[str(JAR), classes, LIBS + "/*", os.path.join(TOP, "build", "lib") + "/*",
                              os.path.join(TOP, "bench", "app")]) as ng:
            with open(ng.path("html", "static.html"), "w") as f:
                f.write("x" * 1024)
            print("machine: %d cores, load %s (shared); %s"
                  % (os.cpu_count(), os.getloadavg(),
                     "/hello: the worker's loop on CPU 0, wrk on CPU 1" if a.pin else "not pinned"))
            for name, prefix in () if a.no_hello else (("Java", ""), ("Ring", "/ring")):
                print("\n%s /hello, wrk -t1 -c%d -d%ds, %d rounds:"
                      % (name, a.connections, a.duration, a.rounds))
                pid = ng.worker_pids()[0]
                if a.pin:
                    os.sched_setaffinity(pid, {0})      # the event loop's thread
                rps, cpu, ratios = hello(ng.port, pid, a.rounds, a.duration, a.connections, prefix)
                # /pg below: the worker shares the machine with PostgreSQL and the client
                os.sched_setaffinity(pid, set(range(os.cpu_count())))
                print("| mode | requests/s (median) | worker CPU per request, us (median) |\n"
                      "|---|---|---|")
                for m in MODES:
                    print("| %s | %.0f | %.2f |"
                          % (m, statistics.median(rps[m]), statistics.median(cpu[m])))
                print("coloop / loop, requests/s: median %.3f, rounds %s"
                      % (statistics.median(ratios), " ".join("%.3f" % r for r in ratios)))
                print("loop / coloop, CPU per request: %.3f"
                      % (statistics.median(cpu["loop"]) / statistics.median(cpu["coloop"])))
            if pg:
                for m in PG_MODES:      # warm-up: the pool full, the JIT
                    for _ in range(3):
                        asyncio.run(burst(ng.port, "/%s/pg" % m))
                print("\n/pg: %d rounds of %d bursts of %d concurrent requests, 100 connections,"
                      " pg_sleep(0.05); %s"
                      % (a.pg_rounds, a.bursts, BURST,
                         "the worker on CPU 0; PostgreSQL, clients and prober on CPU 1"
                         if a.pin else "not pinned"))
                everywhere = set(range(os.cpu_count()))
                if a.pin:
                    # a server of its own: the worker (its loop, pool and
                    # carrier threads alike) on CPU 0; PostgreSQL, the
                    # clients and the prober on CPU 1
                    pin(ng.worker_pids()[0], {0})
                    pin(pg.postmaster_pid(), {1})
                    os.sched_setaffinity(0, {1})
                took = {m: [] for m in PG_MODES}
                times = {m: [] for m in PG_MODES}
                for r in range(a.pg_rounds):
                    for m in PG_MODES[r % len(PG_MODES):] + PG_MODES[:r % len(PG_MODES)]:
                        t, x = pg_round(ng.port, m, a.bursts)
                        took[m] += t
                        times[m] += x
                        print("  round %d %s: static p99 %.2f ms" % (r + 1, m, pct(x, 0.99) * 1000),
                              flush=True)
                print("| mode | burst median (s) | burst max (s) | static p50 (ms) | static p99 (ms) "
                      "| static max (ms) | static samples |\n|---|---|---|---|---|---|---|")
                for m in PG_MODES:
                    print("| %s | %.3f | %.3f | %.2f | %.2f | %.2f | %d |"
                          % (m, statistics.median(took[m]), max(took[m]), pct(times[m], 0.5) * 1000,
                             pct(times[m], 0.99) * 1000, max(times[m]) * 1000, len(times[m])))
                if a.pin:
                    pin(ng.worker_pids()[0], everywhere)
                    pin(pg.postmaster_pid(), everywhere)
                    os.sched_setaffinity(0, everywhere)
            problems = ng.log_problems(0)
            if problems:
                print("error log:\n" + "\n".join(problems[:10]))
    finally:
        if pg:
            pg.stop()
        subprocess.run(["rm", "-rf", classes])


if __name__ == "__main__":
    main()
