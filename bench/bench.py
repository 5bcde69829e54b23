#!/usr/bin/env python3
"""The benchmark suite (`make bench`): nginx-jvm side by side with plain
nginx, with Ring's Jetty adapter, alone and behind nginx, and with the
peers nginx-clojure and http-kit where bench/peers/build.sh built them.

Starts every server itself on free ports of 127.0.0.1 (the builds come from
`make all`), measures throughput (wrk, servers interleaved round by round),
fixed-rate latency (oha) and resident memory at rest and per idle keep-alive
connection, stops the servers by PID (Ctrl-C included), then writes a
Markdown report to bench/results/YYYY-MM-DD-HHMM.md and prints it.  The
method and the targets are those of BASELINES.md.

    bench/bench.py [--quick] [--servers a,b] [--routes x,y] [--duration S]
                   [--rounds N] [--no-latency] [--no-memory] [--out FILE]
"""

import argparse
import datetime
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchsuite import load, report, servers
from benchsuite.servers import HOST

RESULTS = Path(__file__).resolve().parent / "results"

DEFAULTS = dict(servers=",".join(servers.SERVERS), routes=",".join(
    servers.ROUTES), duration=10, rounds=3, warmup=5, latency_duration=15,
    idle=10000)
# under 3 minutes: the main comparison only, short runs, 2,000 idle conns
QUICK = dict(servers="nginx,jvm-loop,jvm-pool,jetty", routes="hello,file",
             duration=3, rounds=3, warmup=2, latency_duration=5, idle=2000)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", help="comma-separated, of: %s (default: all)"
                   % ", ".join(servers.SERVERS))
    p.add_argument("--routes", help="comma-separated, of: %s (default: all)"
                   % ", ".join(servers.ROUTES))
    p.add_argument("--duration", type=int, help="seconds per wrk run (10)")
    p.add_argument("--rounds", type=int, help="interleaved rounds (3)")
    p.add_argument("--warmup", type=int,
                   help="seconds of warm-up per server and route (5)")
    p.add_argument("--conns", type=int, default=50,
                   help="connections of wrk and oha (50)")
    p.add_argument("--rate", type=int, default=10000,
                   help="oha's fixed rate, req/s (10000)")
    p.add_argument("--rates", default="",
                   help="per-server rates, e.g. nginx-jetty=5000,jetty=5000")
    p.add_argument("--latency-duration", type=int,
                   help="seconds per oha run (15)")
    p.add_argument("--idle", type=int,
                   help="idle keep-alive connections to hold (10000)")
    p.add_argument("--no-latency", action="store_true")
    p.add_argument("--no-memory", action="store_true")
    p.add_argument("--no-cost", action="store_true",
                   help="no CPU time and allocated bytes per request (jcmd "
                   "before and after each throughput run)")
    p.add_argument("--quick", action="store_true",
                   help="a preset that takes under 3 minutes: %s"
                   % ", ".join("%s=%s" % kv for kv in QUICK.items()))
    p.add_argument("--out", help="the report's file (default: "
                   "bench/results/YYYY-MM-DD-HHMM.md)")
    p.add_argument("--jvm-options", default="",
                   help="more jvm_options for the nginx-jvm servers, e.g. "
                   "\"-Xms16m -XX:+UseSerialGC\" (default: none)")
    p.add_argument("--keep", action="store_true",
                   help="keep the work directory (configs, logs)")
    args = p.parse_args(argv)
    for key, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.servers = [s for s in args.servers.split(",") if s]
    args.routes = [r for r in args.routes.split(",") if r]
    for s in args.servers:
        if s not in servers.SERVERS:
            p.error("unknown server %r" % s)
    for r in args.routes:
        if r not in servers.ROUTES:
            p.error("unknown route %r" % r)
    args.rates = dict((kv.split("=")[0], int(kv.split("=")[1]))
                      for kv in args.rates.split(",") if kv)
    return args


def first_line(cmd, lines=1):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (p.stdout + p.stderr).strip().splitlines()
    return ", ".join(t.strip() for t in text[:lines]) or None


def build_info():
    """The tree's commit and when the module and the jar were built: others
    may rebuild while a run goes on."""
    stamp = lambda f: (datetime.datetime.fromtimestamp(f.stat().st_mtime)
                       .strftime("%Y-%m-%d %H:%M") if f.exists() else "missing")
    return "commit %s; module built %s, jar built %s" % (
        first_line(["git", "-C", str(servers.ROOT), "describe", "--always",
                    "--dirty"]), stamp(servers.MODULE), stamp(servers.JAR))


def machine(oha_path):
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    jdks = [first_line([jdk + "/bin/java", "-version"], 2)
            for jdk in (servers.JDK17, servers.JDK25)]
    return {"cores": os.cpu_count(), "memory": "%.1f GiB" % (mem_kb / 2**20),
            "kernel": first_line(["uname", "-srvm"]),
            "nginx": first_line([servers.NGINX, "-v"]),
            "jdks": [j for j in jdks if j], "build": build_info(),
            "wrk": first_line(["wrk", "-v"]),
            "oha": oha_path and first_line([oha_path, "--version"])}


def uptime():
    return first_line(["uptime"]), round(os.getloadavg()[0], 2)


def check(server, route):
    """None if the server answers `route` with the expected bytes, else
    what is wrong."""
    method, headers, body = servers.request_of(route)
    conn = servers.connection(server)       # HTTPS too (protocols.py)
    try:
        conn.request(method, "/" + route, body=body, headers=dict(headers))
        resp = conn.getresponse()
        data = resp.read()
    except OSError as e:
        return "%s /%s: %s" % (server.name, route, e)
    finally:
        conn.close()
    want = servers.expected_body(route)
    if resp.status != 200 or data != want:
        return ("%s %s /%s: status %d, %d bytes %r, expected 200, %d bytes"
                % (server.name, method, route, resp.status, len(data),
                   data[:80], len(want)))
    return None


class Runner:
    """The measurements of one run, filling `results` for report.render."""

    def __init__(self, args, fleet, work, results):
        self.args, self.fleet, self.results = args, fleet, results
        self.lua = work / "echo.lua"
        self.lua.write_text(load.wrk_lua(*servers.request_of("echo")))

    def serving(self, route):
        return [s for s in self.fleet.servers.values() if route in s.routes]

    def wrk(self, server, route, duration, cost=None):
        """wrk's req/s against the server's route; with `cost` (a list),
        what each request cost the server is appended to it: its processes'
        CPU time and its JVMs' allocated bytes (every thread's, jcmd) over
        the run, per request."""
        kwargs = {"conns": self.args.conns}
        if cost is not None:
            jvms = server.jvms()
            alloc0 = [load.jvm_allocated(p, servers.JCMD) for p in jvms]
            cpu0 = load.cpu_seconds(server.pids())
        if route == "echo":
            kwargs["script"] = self.lua
        elif route == "headers":
            kwargs["headers"] = servers.HEADERS
        try:
            parsed, raw = load.wrk(server.url(route), duration, **kwargs)
        except (ValueError, subprocess.TimeoutExpired) as e:
            self.results["wrk_problems"].append(
                "%s /%s: %s" % (server.name, route, e))
            return None
        if cost is not None and parsed.get("requests"):
            cpu = load.cpu_seconds(server.pids()) - cpu0
            alloc1 = [load.jvm_allocated(p, servers.JCMD) for p in jvms]
            n = parsed["requests"]
            c = {"cpu_us_per_req": cpu * 1e6 / n}
            if jvms and None not in alloc0 + alloc1:
                c["alloc_per_req"] = (sum(alloc1) - sum(alloc0)) / n
            cost.append(c)
        if parsed["non2xx"] or parsed["socket_errors"]:
            self.results["wrk_problems"].append(
                "%s /%s: %d non-2xx answers, %d socket errors of %s requests"
                % (server.name, route, parsed["non2xx"],
                   parsed["socket_errors"], parsed["requests"]))
        return parsed["rps"]

    def checks(self):
        """Compares every answer with the expected bytes; a peer is not
        measured on a route it answers otherwise (our own servers are, and
        the report lists the problem)."""
        for route in self.args.routes:
            for server in self.serving(route):
                problem = check(server, route)
                if problem and server.name in servers.PEERS:
                    server.routes.remove(route)
                    self.results["restricted"].setdefault(
                        server.name, []).append(route)
                    problem += " (so /%s is not measured on it)" % route
                if problem:
                    self.results["checks"].append(problem)

    def warm_up(self):
        for route in self.args.routes:
            for server in self.serving(route):
                log("warm-up %s /%s" % (server.name, route))
                self.wrk(server, route, self.args.warmup)

    def throughput(self):
        tp = self.results["throughput"]
        for n in range(self.args.rounds):
            for route in self.args.routes:
                for server in self.serving(route):
                    cost = None if self.args.no_cost else \
                        self.results["cost"].setdefault(
                            server.name, {}).setdefault(route, [])
                    rps = self.wrk(server, route, self.args.duration, cost)
                    log("round %d/%d /%s %s: %s req/s" % (
                        n + 1, self.args.rounds, route, server.name,
                        rps and round(rps)))
                    if rps is not None:
                        tp.setdefault(server.name, {}).setdefault(
                            route, []).append(rps)

    def memory_at_rest(self, when):
        """Resident memory now, as `when` ("start" or "rest")."""
        time.sleep(2)
        for server in self.fleet.servers.values():
            workers = [load.rss_kb(p) for p in server.workers()]
            m = self.results["memory"].setdefault(server.name, {})
            m[when + "_kb"] = sum(map(load.rss_kb, server.pids()))
            m[when + "_worker_kb"] = max(workers) if workers else None

    def latency(self, oha_path):
        for server in self.fleet.servers.values():
            rate = self.args.rates.get(server.name, self.args.rate)
            log("latency %s at %d req/s" % (server.name, rate))
            try:
                parsed, _ = load.oha(oha_path, server.url("hello"), rate,
                                     self.args.latency_duration,
                                     self.args.conns)
                parsed["rate"] = rate
            except (RuntimeError, ValueError, KeyError,
                    subprocess.TimeoutExpired) as e:
                parsed = {"rate": rate, "error": str(e)[:200]}
            self.results["latency"][server.name] = parsed

    def idle(self):
        for server in self.fleet.servers.values():
            # nginx-jetty: only nginx's own processes hold these connections
            before = sum(map(load.rss_kb, server.pids(own=True)))
            log("idle connections: %s, %d" % (server.name, self.args.idle))
            socks, failed = load.open_idle(HOST, server.port, self.args.idle)
            log("%d held, %d failed" % (len(socks), failed))
            try:
                time.sleep(2)
                after = sum(map(load.rss_kb, server.pids(own=True)))
            finally:
                load.close_all(socks)
            self.results["memory"].setdefault(server.name, {})["idle"] = {
                "held": len(socks), "failed": failed, "before_kb": before,
                "after_kb": after, "per_conn_bytes":
                (after - before) * 1024 / len(socks) if socks else None}
            time.sleep(2)       # let the server close them before the next


T0 = time.monotonic()


def log(text):
    print("bench: %4.0fs %s" % (time.monotonic() - T0, text), file=sys.stderr,
          flush=True)


def log_problems(fleet):
    found = {}
    for server in fleet.servers.values():
        pattern = ("WARN", "ERROR", "Exception") \
            if server.name in servers.JVM_PROCESSES \
            else ("[alert]", "[crit]", "[error]", "[emerg]")
        try:
            lines = Path(server.log).read_text(errors="replace").splitlines()
        except OSError:
            continue
        found[server.name] = [ln for ln in lines if any(p in ln
                                                        for p in pattern)]
    return found


def preflight(args):
    """Drops servers that cannot run here: returns {server: why}; fails if
    wrk or the build is missing."""
    skipped = {}
    if not shutil.which("wrk"):
        sys.exit("bench: wrk is missing: apt-get install wrk")
    if any(s.startswith("jvm-") for s in args.servers):
        for f in (servers.MODULE, servers.JAR, servers.BUILD / "lib"):
            if not f.exists():
                sys.exit("bench: %s is missing: run `make all` first" % f)
    for name in ("jvm-virtual", "jvm-coloop"):
        if name in args.servers and not os.path.exists(
                servers.JDK25 + "/lib/server/libjvm.so"):
            args.servers.remove(name)
            skipped[name] = "no JDK at %s" % servers.JDK25
    for peer in servers.PEERS:
        if peer in args.servers:
            built, why = servers.peer_status(peer)
            if not why and not (servers.BUILD / "lib").exists():
                why = "%s is missing: run `make libs`" % (servers.BUILD /
                                                          "lib")
            if why:
                args.servers.remove(peer)
                skipped[peer] = why
    return skipped


def describe(name):
    """The report's words for a server: a peer's with what was built."""
    if name in servers.PEERS:
        built, _ = servers.peer_status(name)
        if built:
            return "%s; built: %s" % (servers.SERVERS[name], built)
    return servers.SERVERS[name]


def main(argv):
    args = parse_args(argv)
    skipped = preflight(args)
    # SIGTERM unwinds like Ctrl-C, through the Fleet's stop
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    oha_path, latency_note = None, None
    if not args.no_latency:
        oha_path = load.find_oha()
        if oha_path is None:
            oha_path, why = load.install_oha()
            if oha_path is None:
                latency_note = "Not measured: %s." % why
    up_before, load_before = uptime()
    started = datetime.datetime.now()
    results = {
        "started": started.strftime("%Y-%m-%d %H:%M"),
        "command": " ".join(["bench/bench.py"] + argv),
        "machine": machine(oha_path),
        "uptime_before": up_before, "load_before": load_before,
        "settings": {"duration": args.duration, "rounds": args.rounds,
                     "warmup": args.warmup, "conns": args.conns,
                     "latency_duration": args.latency_duration,
                     "idle": args.idle, "jvm_options": args.jvm_options},
        "servers": {s: describe(s) for s in args.servers},
        "skipped": skipped, "restricted": {},
        "routes": args.routes, "throughput": {}, "memory": {}, "cost": {},
        "checks": [], "wrk_problems": [], "log_problems": {}}
    if not args.no_latency:
        results["latency"] = {}
        results["latency_note"] = latency_note
    work = Path(tempfile.mkdtemp(prefix="nginx-jvm-bench-"))
    try:
        log("starting %s in %s" % (", ".join(args.servers), work))
        with servers.Fleet(args.servers, work, args.jvm_options) as fleet:
            log("all up")
            run = Runner(args, fleet, work, results)
            run.checks()
            if not args.no_memory:
                run.memory_at_rest("start")
            run.warm_up()
            if not args.no_memory:
                run.memory_at_rest("rest")
            run.throughput()
            if oha_path:
                run.latency(oha_path)
            if not args.no_memory:
                run.idle()
        results["log_problems"] = log_problems(fleet)
    finally:
        if args.keep:
            log("work directory kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    results["uptime_after"], results["load_after"] = uptime()
    results["finished"] = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    text = report.render(results)
    out = Path(args.out) if args.out else RESULTS / (
        started.strftime("%Y-%m-%d-%H%M") + ".md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    log("report written to %s" % out)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except KeyboardInterrupt:
        sys.exit("bench: interrupted; the servers are stopped")
