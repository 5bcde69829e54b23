#!/usr/bin/env python3
"""Calls out through nginx's upstreams (nginx.jvm.Upstream, issue 49)
against the JDK's HttpClient and a subrequest, side by side in one run
(`make bench-client`).

    bench/client.py [--duration S] [--rounds N] [--conns C] [--mb M] [--quick] [--out FILE]

One nginx-jvm worker serves every route; a plain nginx of its own (one
worker, not measured) is the upstream, over keep-alive. Each route makes
one call to the upstream's /data (26 bytes) a request:

  proxy        proxy_pass (nginx alone: the floor)
  subrequest   a jvm_async handler (loop), one subrequest to an internal
               location with the same proxy_pass
  call         a jvm_async handler (loop), Upstream.get through a
               jvm_client location with the same proxy_pass, the body
               relayed as it comes
  call-pool    a pool handler, Upstream.get(...).get(), the body read whole
  jdk-pool     a pool handler, the JDK's HttpClient.send (its own
               keep-alive connections)
  jdk-async    a jvm_async handler (loop), HttpClient.sendAsync

measured round by round (interleaved) with wrk: requests per second and
the worker's CPU time (utime + stime of /proc/PID/stat, its JVM's threads
and the HttpClient's with it) over the run, divided by its requests.

Then a streamed relay: M MB (--mb, 1024 by default) from the upstream to
curl through proxy_pass and through a jvm_async handler relaying an
Upstream call's body: MB/s, and the worker's RSS before and at its peak
(sampled every 50 ms).
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
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchsuite import servers                                # noqa: E402
from benchsuite.load import wrk                               # noqa: E402
from benchsuite.servers import children                       # noqa: E402
from phases import BUILD, JAVA_HOME, RESULTS, ROOT, Server   # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")

UPSTREAM = """\
{user}worker_processes 1;
error_log {prefix}/logs/error.log warn;
pid {prefix}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        location /data {{ default_type text/plain; return 200 "upstream data 0123456789\\n"; }}
        location /big {{ alias {prefix}/html/static/big.bin; }}
    }}
}}
"""

KEEP = ('proxy_http_version 1.1; proxy_set_header Connection "";'
        ' proxy_pass http://up/;')


def jvm_conf(prefix, port, classes, up):
    """The measured nginx-jvm's config, from the one writer (bin/nginx-jvm
    config), one worker: the subrequest's handler is its handler
    (location /), the other routes are locations of --server."""
    loc = []
    for text in (
            "location /proxy/ { %s }" % KEEP,
            "location /internal/ { internal; %s }" % KEEP,
            # only calls reach it; a slow reader holds the upstream back
            "location /_up/ { jvm_client up; proxy_max_temp_file_size 0; %s }"
            % KEEP,
            "location = /call { jvm_async on;"
            " jvm_content bench.ClientBench$Call; }",
            "location = /call-pool { jvm_mode pool;"
            " jvm_content bench.ClientBench$CallBlocking; }",
            "location = /jdk-pool { jvm_mode pool; set $bench_upstream %d;"
            " jvm_content bench.ClientBench$Jdk; }" % up,
            "location = /jdk-async { jvm_async on; set $bench_upstream %d;"
            " jvm_content bench.ClientBench$JdkAsync; }" % up):
        loc += ["--server", text]
    return servers.writer_conf(
        prefix, port, "bench.PhaseBench$OneCall", [classes], [
            "--async",
            "--http", "upstream up { server 127.0.0.1:%d; keepalive 64; }"
            % up] + loc, workers=1)


ROUTES = [("proxy", "/proxy/data"), ("subrequest", "/"),
          ("call", "/call"), ("call-pool", "/call-pool"),
          ("jdk-pool", "/jdk-pool"), ("jdk-async", "/jdk-async")]


def worker(server):
    pids = children(server.proc.pid)
    assert len(pids) == 1, pids
    return pids[0]


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def relay(url, pid, mb):
    """curl of url to /dev/null: (MB/s, RSS before, RSS peak) of the worker."""
    before = rss_kb(pid)
    peak = [before]
    done = threading.Event()

    def sample():
        while not done.wait(0.05):
            peak[0] = max(peak[0], rss_kb(pid))
    t = threading.Thread(target=sample)
    t.start()
    try:
        p = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w",
                            "%{http_code} %{size_download} %{time_total}",
                            url], capture_output=True, text=True,
                           timeout=600, check=True)
    finally:
        done.set()
        t.join()
    code, size, took = p.stdout.split()
    if code != "200" or int(size) != mb * 1024 * 1024:
        raise RuntimeError("%s: %s" % (url, p.stdout))
    return mb / float(took), before, peak[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--quick", action="store_true",
                    help="3 s runs, 2 rounds, a 256 MB relay")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.quick:
        args.duration, args.rounds, args.mb = 3, 2, 256

    classes = tempfile.mkdtemp(prefix="nginx-jvm-bench-classes-")
    subprocess.run([JAVA_HOME + "/bin/javac", "--release", "17", "-cp",
                    str(BUILD / "nginx-jvm.jar"), "-d", classes,
                    str(ROOT / "bench/java/bench/PhaseBench.java"),
                    str(ROOT / "bench/java/bench/ClientBench.java")],
                   check=True)
    # its workers read the file in its prefix (mkdtemp's: the owner's only)
    user = "user root;\n" if os.geteuid() == 0 else ""
    up = Server(lambda prefix, port: UPSTREAM.format(prefix=prefix,
                                                     port=port, user=user))
    with open(os.path.join(up.prefix, "html/static/big.bin"), "wb") as f:
        f.truncate(args.mb * 1024 * 1024)       # zeros, sent by sendfile
    jvm = Server(lambda prefix, port: jvm_conf(prefix, port, classes,
                                               up.port))
    rps = {name: [] for name, _ in ROUTES}
    cpu = {name: [] for name, _ in ROUTES}
    relays = {"proxy": [], "call": []}
    try:
        up.wait("/data")
        for _, path in ROUTES:
            body = jvm.wait(path)
            assert body == b"upstream data 0123456789\n", (path, body)
            wrk(jvm.url(path), 2, conns=args.conns)            # warm-up
        pid = worker(jvm)
        for _ in range(args.rounds):
            for name, path in ROUTES:
                c0 = cpu_s(pid)
                r, raw = wrk(jvm.url(path), args.duration, conns=args.conns)
                c1 = cpu_s(pid)
                if r["non2xx"] or r["socket_errors"] or not r["requests"]:
                    raise RuntimeError("%s: errors\n%s" % (name, raw))
                rps[name].append(r["rps"])
                cpu[name].append((c1 - c0) / r["requests"] * 1e6)
        for _ in range(args.rounds):
            relays["proxy"].append(relay(jvm.url("/proxy/big"), pid, args.mb))
            relays["call"].append(relay(jvm.url("/call?to=/big"), pid,
                                        args.mb))
        with open(os.path.join(jvm.prefix, "logs/error.log")) as f:
            problems = [l for l in f if "[error]" in l or "[alert]" in l
                        or "[crit]" in l]
        if problems:
            raise RuntimeError("the measured nginx logged:\n"
                               + "".join(problems[:10]))
    finally:
        jvm.stop()
        up.stop()
        shutil.rmtree(classes, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in rps.items()}
    mcpu = {k: statistics.median(v) for k, v in cpu.items()}
    lines = ["# Calls out: nginx.jvm.Upstream, the JDK's HttpClient, a "
             "subrequest", "",
             "%s, one worker, wrk -t1 -c%d, %d s x %d rounds (median), "
             "upstream: plain nginx, keep-alive; JDK %s"
             % (datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
                args.conns, args.duration, args.rounds, JAVA_HOME), "",
             "| route | req/s | worker CPU us/req | req/s / proxy |",
             "|---|---:|---:|---:|"]
    lines += ["| %s | %.0f | %.1f | %.2f |" % (k, med[k], mcpu[k],
                                               med[k] / med["proxy"])
              for k, _ in ROUTES]
    lines += ["", "| ratio | |", "|---|---:|",
              "| call / subrequest (req/s) | %.2f |"
              % (med["call"] / med["subrequest"]),
              "| call / jdk-async (req/s) | %.2f |"
              % (med["call"] / med["jdk-async"]),
              "| call-pool / jdk-pool (req/s) | %.2f |"
              % (med["call-pool"] / med["jdk-pool"]),
              "| call / jdk-async (CPU per request) | %.2f |"
              % (mcpu["call"] / mcpu["jdk-async"]),
              "", "%d MB relayed to curl, %d rounds (median MB/s; RSS of "
              "the worker, MB)" % (args.mb, args.rounds), "",
              "| route | MB/s | RSS before | RSS peak |", "|---|---:|---:|---:|"]
    for k, v in relays.items():
        lines.append("| %s | %.0f | %.1f | %.1f |" % (
            "proxy_pass" if k == "proxy" else "Upstream call relayed",
            statistics.median(x[0] for x in v),
            statistics.median(x[1] for x in v) / 1024,
            max(x[2] for x in v) / 1024))
    text = "\n".join(lines) + "\n"
    print(text)
    out = args.out or RESULTS / ("client-%s.md" % datetime.datetime.now()
                                 .strftime("%Y-%m-%d-%H%M"))
    Path(out).write_text(text)


if __name__ == "__main__":
    main()
