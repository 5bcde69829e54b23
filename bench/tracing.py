#!/usr/bin/env python3
"""What tracing costs a request (`make bench-tracing`): CPU per request of
one nginx-jvm worker, side by side in one run, with tracing off, on and
unsampled, and on and sampled (every span exported over OTLP/HTTP to a
receiver on loopback).

    bench/tracing.py [--duration S] [--rounds N] [--conns C] [--quick] [--out FILE]

Three servers from the one config writer (bin/nginx-jvm config), one
worker each, the same Java handler (bench.JavaRoutes, /hello) and the
OpenTelemetry SDK on every class path (build/otel-lib):

  off        no otel.traces.exporter: nothing of OpenTelemetry loaded
  unsampled  otel.traces.exporter=otlp, otel.traces.sampler=always_off
  sampled    otel.traces.exporter=otlp, always_on: three spans a request
             (server, handler; the export batches), to the receiver

Measured round by round (interleaved) with wrk: requests per second and
the worker's CPU time (utime + stime of /proc/PID/stat, its JVM's threads
with it: the exporter's too) over the run, divided by the requests. The
receiver (a Python HTTP server here, not measured) answers every export
at once; what a slow one costs is in tests/test_tracing.py.
"""

import argparse
import datetime
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchsuite import servers                                # noqa: E402
from benchsuite.load import wrk                               # noqa: E402
from phases import BUILD, JAVA_HOME, RESULTS, ROOT, Server   # noqa: E402

OTEL_LIB = BUILD / "otel-lib"
TICKS = os.sysconf("SC_CLK_TCK")


class Receiver:
    """An OTLP/HTTP endpoint that answers every export with an empty
    ExportTraceServiceResponse (0 bytes of protobuf) and counts them."""

    def __init__(self):
        self.posts = self.bytes = 0
        rx = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                self.rfile.read(n)
                rx.posts += 1
                rx.bytes += n
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def jvm_conf(options, classes):
    def conf(prefix, port):
        opts = []
        for o in options:
            opts += ["--jvm-option", o]
        return servers.writer_conf(prefix, port, "bench.JavaRoutes",
                                   [classes, str(OTEL_LIB) + "/*"], opts,
                                   workers=1)
    return conf


def variants(rx_port):
    otlp = ["-Dotel.traces.exporter=otlp",
            "-Dotel.exporter.otlp.endpoint=http://127.0.0.1:%d" % rx_port,
            "-Dotel.service.name=bench"]
    return [("off", []),
            ("unsampled", otlp + ["-Dotel.traces.sampler=always_off"]),
            ("sampled", otlp + ["-Dotel.traces.sampler=always_on"])]


def worker_pid(master):
    with open("/proc/%d/task/%d/children" % (master, master)) as f:
        pids = [int(p) for p in f.read().split()]
    if len(pids) != 1:
        raise RuntimeError("expected one worker of %d, found %s" % (master, pids))
    return pids[0]


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--quick", action="store_true", help="3 s runs, 1 round")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.quick:
        args.duration, args.rounds = 3, 1
    if not (OTEL_LIB / ".done").exists():
        sys.exit("bench/tracing.py: build/otel-lib is missing: make otel-deps")

    classes = tempfile.mkdtemp(prefix="nginx-jvm-bench-classes-")
    os.chmod(classes, 0o755)
    subprocess.run([JAVA_HOME + "/bin/javac", "--release", "17", "-cp",
                    str(BUILD / "nginx-jvm.jar"), "-d", classes,
                    str(ROOT / "bench/java/bench/JavaRoutes.java")], check=True)
    rx = Receiver()
    started = []
    rps = {}
    cpu_us = {}
    try:
        for name, options in variants(rx.port):
            started.append((name, Server(jvm_conf(options, classes))))
        for name, s in started:
            assert s.wait("/hello"), name
            wrk(s.url("/hello"), 2, conns=args.conns)          # warm-up
            rps[name], cpu_us[name] = [], []
        for _ in range(args.rounds):
            for name, s in started:
                pid = worker_pid(s.proc.pid)
                before = cpu_seconds(pid)
                r, raw = wrk(s.url("/hello"), args.duration, conns=args.conns)
                used = cpu_seconds(pid) - before
                if r["non2xx"] or r["socket_errors"] or not r["requests"]:
                    raise RuntimeError("%s: errors\n%s" % (name, raw))
                rps[name].append(r["rps"])
                cpu_us[name].append(used * 1e6 / r["requests"])
    finally:
        for _, s in started:
            s.stop()
        rx.stop()
        shutil.rmtree(classes, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in rps.items()}
    cpu = {k: statistics.median(v) for k, v in cpu_us.items()}
    lines = ["# Tracing: CPU per request, off, on and unsampled, on and sampled",
             "", "%s, one worker (jvm_mode loop), bench.JavaRoutes /hello, "
             "wrk -t1 -c%d, %d s x %d rounds (median); the receiver got %d "
             "exports (%d bytes)"
             % (datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
                args.conns, args.duration, args.rounds, rx.posts, rx.bytes),
             "", "| tracing | req/s | worker CPU us/request | CPU / off |",
             "|---|---:|---:|---:|"]
    lines += ["| %s | %.0f | %.1f | %.2f |" % (k, med[k], cpu[k], cpu[k] / cpu["off"])
              for k, _ in variants(0)]
    text = "\n".join(lines) + "\n"
    print(text)
    out = args.out or RESULTS / ("tracing-%s.md" % datetime.datetime.now()
                                 .strftime("%Y-%m-%d-%H%M"))
    Path(out).write_text(text)


if __name__ == "__main__":
    main()
