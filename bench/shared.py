#!/usr/bin/env python3
"""Shared state against Redis: SharedDict incr, get and put per second,
from a handler on the event loop, on a pool thread and from JVM threads,
with one worker and with two workers at once (every operation takes the
zone's one lock), and
the same operations on a Redis server on loopback through Jedis; then the
round trip of a message published to every worker, by a topic (jvm_topic)
and by Redis pub/sub.

    bench/shared.py [--ops 200000] [--redis-ops 20000] [--rounds 3]
                    [--threads 1,2,4] [--messages 2000] [--out FILE]

Each measurement is one request to bench.SharedBench (bench/java), which
runs the operations and answers the time they took; the median of --rounds
is reported. With two workers, the same request goes to both at once
(reuseport spreads the connections; a round is run again until the two
landed on different workers) and the operations of both are counted over
the longer of the two times. The round trip is bench.TopicBench: one
message at a time, timed from publish until every worker's subscriber has
acknowledged it in the dictionary. Redis (redis-server, Debian) and Jedis
(Maven Central, build/bench-lib) come from `make bench-deps`.
"""

import argparse
import http.client
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
BENCH_LIB = BUILD / "bench-lib"
REDIS = os.environ.get("REDIS_SERVER", "/usr/bin/redis-server")
NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")
JAVA_HOME = os.environ.get("JAVA_HOME") or "/usr/lib/jvm/java-17-openjdk-amd64"

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchsuite import servers                                # noqa: E402
from benchsuite.servers import free_port                      # noqa: E402


def conf(prefix, port, workers, classes, redis):
    """The server's nginx.conf, from the one writer (bin/nginx-jvm config,
    through benchsuite.servers.writer_conf): bench.SharedBench on the loop
    is its handler (location /, so /bench), the pool's and the topic's
    round trip locations of --server; every worker its own socket
    (--reuseport), so that two requests at once may reach both."""
    return servers.writer_conf(
        prefix, port, "bench.SharedBench", [classes, BENCH_LIB / "*"], [
            "--reuseport",
            "--jvm-option", "-Dbench.redis=%d" % redis,
            "--shared-dict", "bench:16m", "--topic", "bench:1m",
            "--http", "jvm_init bench.TopicBench;",
            "--server", "location /pool/bench { jvm_mode pool;"
            " jvm_content bench.SharedBench; }",
            "--server", "location /roundtrip { jvm_mode pool;"
            " jvm_content bench.TopicBench; }"], workers=workers)


def compile_handler(out):
    src = ROOT / "bench" / "java" / "bench"
    subprocess.run([JAVA_HOME + "/bin/javac", "--release", "17", "-cp",
                    "%s:%s/*" % (BUILD / "nginx-jvm.jar", BENCH_LIB),
                    "-d", out, str(src / "SharedBench.java"),
                    str(src / "TopicBench.java")], check=True)


class Redis:
    """A redis-server of the benchmark's own on a loopback port, with
    nothing saved to disk."""

    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="nginx-jvm-bench-redis-")
        self.proc = subprocess.Popen(
            [REDIS, "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


class Server:
    def __init__(self, workers, classes, redis):
        self.prefix = tempfile.mkdtemp(prefix="nginx-jvm-bench-shared-")
        self.port = free_port()
        self.workers = workers
        for d in ("logs", "tmp"):
            os.mkdir(os.path.join(self.prefix, d))
        path = os.path.join(self.prefix, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf(self.prefix, self.port, workers, classes, redis))
        self.proc = subprocess.Popen([NGINX, "-p", self.prefix, "-c", path,
                                      "-g", "daemon off;"])
        deadline = time.monotonic() + 60
        while True:
            try:
                self.call("dict", "incr", 1, 0)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        try:
            c.request("GET", path)
            r = c.getresponse()
            body = r.read().decode()
            if r.status != 200:
                raise RuntimeError(body)
            return body.split()
        finally:
            c.close()

    def call(self, store, op, n, threads):
        """threads: 0 on the event loop, "pool" on a pool thread (the
        handler's own in jvm_mode pool), N on N threads at once."""
        path = "/pool/bench" if threads == "pool" else "/bench"
        ops, nanos, pid = self.get("%s?store=%s&op=%s&n=%d&threads=%d"
                                   % (path, store, op, n,
                                      0 if threads == "pool" else threads))
        return int(ops), int(nanos), pid

    def round_trip(self, store, n):
        """Median and 99th percentile of one message's round trip, µs."""
        median, p99 = self.get("/roundtrip?store=%s&n=%d&workers=%d"
                               % (store, n, self.workers))
        return int(median) / 1000, int(p99) / 1000

    def stop(self):
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.prefix, ignore_errors=True)


def measure(server, store, op, ops, threads, parallel):
    """Operations per second of `parallel` requests at once, each on its
    own worker (tried again until reuseport spread them so)."""
    for _ in range(20):
        results = [None] * parallel

        def one(i):
            results[i] = server.call(store, op, ops, threads)
        ts = [threading.Thread(target=one, args=(i,)) for i in range(parallel)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if len({r[2] for r in results}) == parallel:
            break
    total = sum(r[0] for r in results)
    longest = max(r[1] for r in results)
    return total / (longest / 1e9)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", type=int, default=200000)
    ap.add_argument("--redis-ops", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2,4")
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--out")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    if not os.path.exists(REDIS) or not list(BENCH_LIB.glob("jedis-*.jar")):
        sys.exit("bench/shared.py: needs redis-server and Jedis: make bench-deps")

    classes = tempfile.mkdtemp(prefix="nginx-jvm-bench-classes-")
    compile_handler(classes)
    redis = Redis()
    rows, trips = [], []
    try:
        for workers in (1, 2):
            server = Server(workers, classes, redis.port)
            try:
                for op in ("incr", "get", "put"):
                    for t in [0, "pool"] + threads:
                        rates = []
                        for store, ops in (("dict", args.ops),
                                           ("redis", args.redis_ops)):
                            measure(server, store, op, ops // 4, t,
                                    workers)  # warm-up
                            rates.append(statistics.median(
                                measure(server, store, op, ops, t, workers)
                                for _ in range(args.rounds)))
                        where = ("event loop" if t == 0 else "pool thread"
                                 if t == "pool" else "%d threads" % t)
                        rows.append((workers, op, where) + tuple(rates))
                        print("%d worker(s)  %-4s  %-10s  %12.0f  %9.0f ops/s"
                              % rows[-1], flush=True)
                for store in ("topic", "redis"):
                    server.round_trip(store, args.messages // 10)  # warm-up
                    trips.append((workers, store) + tuple(
                        statistics.median(v) for v in zip(*(
                            server.round_trip(store, args.messages)
                            for _ in range(args.rounds)))))
                    print("%d worker(s)  %-5s round trip  median %.1f µs  "
                          "p99 %.1f µs" % trips[-1], flush=True)
            finally:
                server.stop()
    finally:
        redis.stop()
        shutil.rmtree(classes, ignore_errors=True)

    lines = ["# Shared state against Redis", "",
             "bench/shared.py --ops %d --redis-ops %d --rounds %d "
             "--messages %d (medians); %s; %d cores"
             % (args.ops, args.redis_ops, args.rounds, args.messages,
                time.strftime("%Y-%m-%d %H:%M"), os.cpu_count()), "",
             "## Operations per second", "",
             "| workers | op | from | SharedDict | Redis (Jedis) | ratio |",
             "|---|---|---|---|---|---|"]
    for w, op, where, shm, red in rows:
        lines.append("| %d | %s | %s | %.0f | %.0f | %.0f |"
                     % (w, op, where, shm, red, shm / red))
    lines += ["", "## Publish to every worker, round trip", "",
              "| workers | by | median µs | p99 µs |", "|---|---|---|---|"]
    for w, store, median, p99 in trips:
        lines.append("| %d | %s | %.1f | %.1f |"
                     % (w, "jvm_topic" if store == "topic"
                        else "Redis pub/sub", median, p99))
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
