#!/usr/bin/env python3
"""Two protocol scenarios of issue 37 (`make bench-protocols`): pipelined
HTTP/1.1 and HTTP/2 over TLS, nginx-jvm beside plain nginx and the peers.

1. Pipelined HTTP/1.1, depth 16 -- TechEmpower's plaintext rule: wrk
   (`-t1 -c50`) with a Lua script whose every write is 16 GET /hello
   requests, against plain nginx, jvm-loop, jvm-coloop, enso, http-kit,
   Ring's Jetty 12 adapter and nginx-clojure (the peers where
   bench/peers/build.sh built them).  Before any load, a raw socket sends
   16 pipelined requests to each server and counts 16 whole 200 answers:
   a server that drops pipelined requests would otherwise look fast.
2. HTTP/2 over TLS: h2load (`-c 8 -m 32 -D S`, nghttp2-client) against
   https://127.0.0.1:PORT/hello of plain nginx (`listen ... ssl http2`),
   jvm-loop and jvm-coloop (the same listener, from `bin/nginx-jvm config
   --tls`) and enso (`:http2` with an SSLContext), a self-signed
   certificate made in the run's directory.  Jetty is not measured on h2:
   see H2_SKIPPED.

Each scenario starts its servers (bench/benchsuite/servers.py), warms each
up, then measures them interleaved round by round (as bench/bench.py), with
each server's CPU time per request (/proc, over the run), checks the
servers' error logs, stops them by PID and writes a Markdown report to
bench/results/YYYY-MM-DD-HHMM-protocols.md.

    bench/protocols.py [--quick] [--scenarios pipeline,h2]
        [--servers a,b] [--h2-servers a,b] [--duration S] [--rounds N]
        [--warmup S] [--conns N] [--depth N] [--h2-clients N]
        [--h2-streams N] [--out FILE] [--keep]
"""

import argparse
import datetime
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench
from benchsuite import load, report, servers
from benchsuite.servers import HOST

RESULTS = Path(__file__).resolve().parent / "results"

PIPELINE_SERVERS = ("nginx", "jvm-loop", "jvm-coloop", "enso", "http-kit",
                    "jetty", "nginx-clojure")
H2_SERVERS = ("nginx", "jvm-loop", "jvm-coloop", "enso")
# Why Jetty is not among the h2 servers: the report says it.
H2_SKIPPED = {
    "jetty": "not measured: ring-jetty-adapter 1.15.5 has no HTTP/2 option "
             "(its SSL connector is SslConnectionFactory to \"http/1.1\" "
             "only); h2 would take a :configurator adding Jetty's "
             "HTTP2ServerConnectionFactory and ALPN, and the "
             "jetty-http2-server and jetty-alpn-java-server jars, which "
             "bench/peers/jetty12/pom.xml does not fetch"}
OURS = ("jvm-loop", "jvm-coloop")
# issue 37: nginx-jvm on the loop at least this share of plain nginx's own
# HTTP/2 rate
H2_TARGET = 0.9

DEFAULTS = dict(duration=10, rounds=3, warmup=5)
# a smoke run: every server, short runs (about 3 minutes with every peer)
QUICK = dict(duration=3, rounds=2, warmup=2)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenarios", default="pipeline,h2",
                   help="comma-separated, of: pipeline, h2 (default: both)")
    p.add_argument("--servers", default=",".join(PIPELINE_SERVERS),
                   help="the pipelined scenario's servers (default: %s)"
                   % ",".join(PIPELINE_SERVERS))
    p.add_argument("--h2-servers", default=",".join(H2_SERVERS),
                   help="the HTTP/2 scenario's servers (default: %s)"
                   % ",".join(H2_SERVERS))
    p.add_argument("--duration", type=int, help="seconds per run (10)")
    p.add_argument("--rounds", type=int, help="interleaved rounds (3)")
    p.add_argument("--warmup", type=int,
                   help="seconds of warm-up per server (5)")
    p.add_argument("--conns", type=int, default=50,
                   help="wrk's connections, pipelined scenario (50)")
    p.add_argument("--depth", type=int, default=16,
                   help="requests per pipelined write (16)")
    p.add_argument("--h2-clients", type=int, default=8,
                   help="h2load's connections, -c (8)")
    p.add_argument("--h2-streams", type=int, default=32,
                   help="h2load's concurrent streams per connection, -m (32)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke-run preset: %s"
                   % ", ".join("%s=%s" % kv for kv in QUICK.items()))
    p.add_argument("--jvm-options", default="",
                   help="more jvm_options for the nginx-jvm servers")
    p.add_argument("--out", help="the report's file (default: "
                   "bench/results/YYYY-MM-DD-HHMM-protocols.md)")
    p.add_argument("--keep", action="store_true",
                   help="keep the work directories (configs, logs)")
    args = p.parse_args(argv)
    for key, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    for s in args.scenarios:
        if s not in ("pipeline", "h2"):
            p.error("unknown scenario %r" % s)
    args.servers = [s for s in args.servers.split(",") if s]
    args.h2_servers = [s for s in args.h2_servers.split(",") if s]
    for s in args.servers:
        if s not in servers.SERVERS:
            p.error("unknown server %r" % s)
    for s in args.h2_servers:
        if s not in servers.TLS_SERVERS:
            p.error("no HTTP/2 set-up for %r (of: %s)"
                    % (s, ", ".join(servers.TLS_SERVERS)))
    return args


T0 = time.monotonic()


def log(text):
    print("protocols: %4.0fs %s" % (time.monotonic() - T0, text),
          file=sys.stderr, flush=True)


# --- pipelined HTTP/1.1 -----------------------------------------------------

def pipeline_lua(path, depth):
    """A wrk script whose every request() is `depth` GETs of `path` in one
    buffer: wrk writes it at once and counts `depth` answers for it (it
    parses the buffer to know how many to wait for)."""
    return ("-- %d pipelined GET %s per write (TechEmpower's plaintext)\n"
            "local depth = %d\n"
            "local batch\n"
            "init = function(args)\n"
            "  local r = {}\n"
            "  for i = 1, depth do\n"
            "    r[i] = wrk.format(\"GET\", \"%s\")\n"
            "  end\n"
            "  batch = table.concat(r)\n"
            "end\n"
            "request = function()\n"
            "  return batch\n"
            "end\n" % (depth, path, depth, path))


def split_responses(data):
    """HTTP/1.1 answers one after another in `data` -> ([(status, body)],
    the bytes after the last whole one).  Content-Length or chunked
    bodies; an answer without either has no body here (to /hello, none is
    sent so)."""
    found = []
    while True:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            return found, data
        head = data[:end].decode("latin-1")
        status = int(head.split(" ", 2)[1])
        rest = data[end + 4:]
        m = re.search(r"^content-length:\s*(\d+)", head, re.M | re.I)
        if m:
            n = int(m.group(1))
            if len(rest) < n:
                return found, data
            body, data = rest[:n], rest[n:]
        elif re.search(r"^transfer-encoding:.*chunked", head, re.M | re.I):
            body, pos = b"", 0
            while True:
                line_end = rest.find(b"\r\n", pos)
                if line_end < 0:
                    return found, data
                size = int(rest[pos:line_end].split(b";")[0], 16)
                if size == 0:
                    # no trailers from these servers: the last CRLF
                    if len(rest) < line_end + 4:
                        return found, data
                    data = rest[line_end + 4:]
                    break
                if len(rest) < line_end + 2 + size + 2:
                    return found, data
                body += rest[line_end + 2:line_end + 2 + size]
                pos = line_end + 2 + size + 2
        else:
            body, data = b"", rest
        found.append((status, body))


def pipelined_check(port, path, depth, want, timeout=10):
    """Sends `depth` GETs of `path` in one write and reads until as many
    answers came; None if each is a 200 with `want`, else what is wrong."""
    req = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (path, HOST, port))
    answers, data = [], b""
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as s:
            s.sendall(req.encode() * depth)
            while len(answers) < depth and time.monotonic() < deadline:
                chunk = s.recv(65536)
                if not chunk:
                    break
                found, data = split_responses(data + chunk)
                answers += found
    except OSError as e:
        return "%d of %d pipelined answers, then %s" % (len(answers), depth,
                                                        e)
    good = sum(1 for status, body in answers if status == 200 and body == want)
    if good != depth:
        return ("%d good answers of %d pipelined requests (%d answers: %s)"
                % (good, depth, len(answers),
                   [st for st, _ in answers][:depth]))
    return None


# --- HTTP/2 (h2load) --------------------------------------------------------

def parse_h2load(text):
    """h2load's report -> {rps, total, succeeded, failed, errored, timeout,
    2xx, 3xx, 4xx, 5xx, protocol (ALPN's), tls (the version)}.  Raises ValueError without its
    "finished in" line (it could not connect, say)."""
    m = re.search(r"^finished in [\d.]+\w*, ([\d.]+) req/s", text, re.M)
    if not m:
        raise ValueError("no req/s in h2load's output: %r" % text[-300:])
    out = {"rps": float(m.group(1))}
    m = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, "
                  r"(\d+) succeeded, (\d+) failed, (\d+) errored, "
                  r"(\d+) timeout", text, re.M)
    if m:
        for key, value in zip(("total", "started", "done", "succeeded",
                               "failed", "errored", "timeout"), m.groups()):
            out[key] = int(value)
    m = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, "
                  r"(\d+) 5xx", text, re.M)
    if m:
        for key, value in zip(("2xx", "3xx", "4xx", "5xx"), m.groups()):
            out[key] = int(value)
    m = re.search(r"^Application protocol: (\S+)", text, re.M)
    out["protocol"] = m.group(1) if m else None
    m = re.search(r"^TLS Protocol: (\S+)", text, re.M)
    out["tls"] = m.group(1) if m else None
    return out


def h2load(url, clients, streams, duration=None, requests=None):
    """Runs h2load (one thread) for `duration` seconds or `requests`
    requests; returns (parsed, raw output)."""
    cmd = ["h2load", "-t", "1", "-c", str(clients), "-m", str(streams)]
    cmd += ["-D", str(duration)] if duration else ["-n", str(requests)]
    p = subprocess.run(cmd + [url], capture_output=True, text=True,
                       timeout=(duration or 30) + 60)
    return parse_h2load(p.stdout + p.stderr), p.stdout + p.stderr


# the nginx servers' keepalive_requests (the launcher's and
# servers.HTTP_CONF's): over HTTP/2 a connection ends after that many
# requests, and h2load does not open another, so a run whose connections
# all reached it ended early and its rate (over -D) is a floor
KEEPALIVE_REQUESTS = 100000


def h2_problem(name, parsed, clients=None):
    """What is wrong with an h2load run, or None."""
    if parsed.get("protocol") != "h2":
        return "%s: h2load spoke %s, not h2" % (name, parsed.get("protocol"))
    if clients and (parsed.get("succeeded") or 0) >= clients * KEEPALIVE_REQUESTS:
        return ("%s: every connection reached keepalive_requests (%d): the "
                "run ended early, its rate is a floor; take a shorter -D"
                % (name, KEEPALIVE_REQUESTS))
    bad = sum(parsed.get(k, 0) for k in ("failed", "errored", "timeout",
                                          "3xx", "4xx", "5xx"))
    if bad or parsed.get("succeeded") != parsed.get("2xx"):
        return ("%s: %s requests, %s succeeded, %s 2xx, %d failed, errored, "
                "timed out or not 2xx" % (name, parsed.get("total"),
                                          parsed.get("succeeded"),
                                          parsed.get("2xx"), bad))
    return None


# --- the runs ---------------------------------------------------------------

class Scenario:
    """One scenario's servers and measurements: `results[key]` gets
    {rps: {server: [per round]}, cpu_us: {server: [per round]},
    checks: [problems], problems: [load tool's], restricted: [servers
    left out]}."""

    def __init__(self, key, args, fleet, work, results):
        self.key, self.args, self.fleet = key, args, fleet
        self.out = results[key] = {"rps": {}, "cpu_us": {}, "checks": [],
                                   "problems": [], "restricted": []}
        self.lua = work / "pipeline.lua"
        self.lua.write_text(pipeline_lua("/hello", args.depth))

    def measured(self):
        return [s for s in self.fleet.servers.values()
                if s.name not in self.out["restricted"]]

    def run(self, server, duration):
        """One load run: (req/s, CPU µs per request) or (None, None)."""
        cpu0 = load.cpu_seconds(server.pids())
        try:
            if self.key == "pipeline":
                parsed, _ = load.wrk(server.url("hello"), duration,
                                     script=self.lua, conns=self.args.conns)
                n = parsed["requests"]
                if parsed["non2xx"] or parsed["socket_errors"]:
                    self.out["problems"].append(
                        "%s: %d non-2xx answers, %d socket errors of %s "
                        "requests" % (server.name, parsed["non2xx"],
                                      parsed["socket_errors"], n))
            else:
                parsed, _ = h2load(server.url("hello"), self.args.h2_clients,
                                   self.args.h2_streams, duration=duration)
                n = parsed.get("done")
                problem = h2_problem(server.name, parsed,
                                     self.args.h2_clients)
                if problem:
                    self.out["problems"].append(problem)
        except (ValueError, subprocess.TimeoutExpired) as e:
            self.out["problems"].append("%s: %s" % (server.name, e))
            return None, None
        cpu = load.cpu_seconds(server.pids()) - cpu0
        return parsed["rps"], (cpu * 1e6 / n if n else None)

    def checks(self):
        """Before any load: 16 pipelined requests answered in full (HTTP/1.1)
        or a short h2load run all 2xx over h2, and the body over HTTPS
        (HTTP/1.1, http.client).  A peer failing it is not measured."""
        for server in list(self.fleet.servers.values()):
            if self.key == "pipeline":
                problem = pipelined_check(server.port, "/hello",
                                          self.args.depth, servers.HELLO)
                problem = problem and "%s: %s" % (server.name, problem)
            else:
                problem = bench.check(server, "hello")
                if not problem:
                    try:
                        parsed, _ = h2load(server.url("hello"), 1,
                                           self.args.depth, requests=64)
                        problem = h2_problem(server.name, parsed)
                        self.out.setdefault("tls", {})[server.name] = \
                            parsed.get("tls")
                    except (ValueError, subprocess.TimeoutExpired) as e:
                        problem = "%s: %s" % (server.name, e)
            if problem and server.name in servers.PEERS:
                self.out["restricted"].append(server.name)
                problem += " (so it is not measured)"
            if problem:
                self.out["checks"].append(problem)
            log("check %s %s: %s" % (self.key, server.name,
                                     problem or "ok"))

    def warm_up(self):
        for server in self.measured():
            log("warm-up %s %s" % (self.key, server.name))
            self.run(server, self.args.warmup)

    def rounds(self):
        for n in range(self.args.rounds):
            for server in self.measured():
                rps, cpu = self.run(server, self.args.duration)
                log("round %d/%d %s %s: %s req/s, %s us/req CPU" % (
                    n + 1, self.args.rounds, self.key, server.name,
                    rps and round(rps), cpu and round(cpu, 1)))
                # None keeps the rounds aligned for the per-round ratios
                self.out["rps"].setdefault(server.name, []).append(rps)
                self.out["cpu_us"].setdefault(server.name, []).append(cpu)


def run_scenario(key, names, args, results):
    work = Path(tempfile.mkdtemp(prefix="nginx-jvm-protocols-%s-" % key))
    try:
        log("%s: starting %s in %s" % (key, ", ".join(names), work))
        with servers.Fleet(names, work, args.jvm_options,
                           tls=(key == "h2")) as fleet:
            log("%s: all up" % key)
            sc = Scenario(key, args, fleet, work, results)
            sc.checks()
            sc.warm_up()
            sc.rounds()
        results[key]["log_problems"] = bench.log_problems(fleet)
    finally:
        if args.keep:
            log("work directory kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


def preflight(names, h2):
    """(the servers that can run, {server: why not})."""
    ns = argparse.Namespace(servers=list(names))
    skipped = bench.preflight(ns)
    if h2:
        for name, why in H2_SKIPPED.items():
            if name in ns.servers:
                ns.servers.remove(name)
                skipped[name] = why
    return ns.servers, skipped


# --- the report -------------------------------------------------------------

def valid(values):
    return [v for v in values or [] if v is not None]


def per_round(a, b):
    """Round-by-round ratios of two servers' rates (None where either
    failed)."""
    return [x / y if x is not None and y else None for x, y in zip(a, b)]


def fmt_rounds(values, fmt):
    return ", ".join(fmt(v) for v in values) or "n/a"


def render_scenario(title, data, settings, target=None):
    """One scenario's section: rates per round with medians and ratio to
    plain nginx, CPU per request, nginx-jvm over each peer."""
    rps, cpu = data.get("rps", {}), data.get("cpu_us", {})
    out = ["## %s" % title, "", settings, ""]
    base = rps.get("nginx", [])
    base_med = report.median(valid(base))
    out += ["| server | req/s per round | median | / nginx (per round) "
            "| CPU µs/req (median) |", "|---|---|---|---|---|"]
    for name, values in rps.items():
        med = report.median(valid(values))
        ratios = per_round(values, base) if name != "nginx" else []
        out.append("| %s | %s | %s | %s | %s |" % (
            name, fmt_rounds(values, report.fmt_rps), report.fmt_rps(med),
            "" if name == "nginx" else "**%s** (%s)" % (
                report.fmt_ratio(report.ratio(med, base_med)),
                fmt_rounds(ratios, report.fmt_ratio)),
            "n/a" if not valid(cpu.get(name)) else "%.1f"
            % report.median(valid(cpu.get(name)))))
    if not rps:
        out.append("| (nothing measured) | | | | |")
    peers = [p for p in rps if p in servers.PEERS]
    ours = [s for s in rps if s in OURS]
    if peers and ours:
        out += ["", "nginx-jvm's rate over each peer's: median of the "
                "rounds' ratios (per round)", "",
                "| | %s |" % " | ".join(peers),
                "|---|" + "---|" * len(peers)]
        for s in ours:
            cells = []
            for p in peers:
                r = per_round(rps[s], rps[p])
                cells.append("**%s** (%s)" % (
                    report.fmt_ratio(report.median(valid(r))),
                    fmt_rounds(r, report.fmt_ratio)))
            out.append("| %s | %s |" % (s, " | ".join(cells)))
    if data.get("tls"):
        out += ["", "TLS version h2load negotiated: %s" % ", ".join(
            "%s %s" % kv for kv in data["tls"].items())]
    if target:
        least, server = target
        r = report.ratio(report.median(valid(rps.get(server))), base_med)
        out += ["", "Target (issue 37): %s >= %.2f of plain nginx's HTTP/2 "
                "rate: %s" % (server, least, "n/a" if r is None else
                              "%.3f, %s" % (r, report.mark(r >= least)))]
    notes = []
    for label, key in (("Checks before the load", "checks"),
                       ("Load tool problems", "problems")):
        if data.get(key):
            notes += ["", "%s:" % label, ""] + ["- %s" % p for p in data[key]]
    logs = {k: v for k, v in (data.get("log_problems") or {}).items() if v}
    if logs:
        notes += ["", "Error-log lines (warnings and errors):", ""]
        for name, lines in logs.items():
            notes += ["- %s: %d lines, e.g. `%s`" % (name, len(lines),
                                                      lines[0][:200])]
    elif "log_problems" in data:
        notes += ["", "Error logs: no warnings or errors."]
    return out + notes + [""]


def render(results):
    """The report, a pure function of `results` (see main)."""
    m = results["machine"]
    s = results["settings"]
    out = ["# Protocol scenarios: pipelined HTTP/1.1 and HTTP/2 over TLS", "",
           "Started %s, finished %s: `%s`" % (
               results["started"], results.get("finished", "n/a"),
               results["command"]), ""]
    if results.get("quick"):
        out += ["**Smoke run (--quick): short runs, not figures to quote.**",
                ""]
    out += ["## Servers", ""]
    for name, what in results["servers"].items():
        out.append("- %s: %s" % (name, what))
    for name, why in results.get("skipped", {}).items():
        out.append("- %s: skipped, %s" % (name, why))
    out.append("")
    if "pipeline" in results:
        out += render_scenario(
            "Pipelined HTTP/1.1, depth %d" % s["depth"], results["pipeline"],
            "wrk -t1 -c%d, a Lua script writing %d GET /hello at a time "
            "(TechEmpower's plaintext rule); %d s runs after %d s of "
            "warm-up each, %d interleaved rounds."
            % (s["conns"], s["depth"], s["duration"], s["warmup"],
               s["rounds"]))
    if "h2" in results:
        out += render_scenario(
            "HTTP/2 over TLS", results["h2"],
            "h2load -t1 -c%d -m%d -D %d against https://127.0.0.1:PORT/hello"
            " (a self-signed P-256 certificate; TLS as `bin/nginx-jvm config "
            "--tls` writes it); %d s of warm-up each, %d interleaved rounds."
            % (s["h2_clients"], s["h2_streams"], s["duration"], s["warmup"],
               s["rounds"]), target=(H2_TARGET, "jvm-loop"))
        for name, why in results.get("h2_skipped", {}).items():
            out.append("- %s (HTTP/2): %s" % (name, why))
        out.append("")
    out += ["## Machine", ""]
    for key in ("cores", "cpus allowed", "memory", "kernel", "nginx", "build",
                "wrk", "h2load"):
        out.append("- %s: %s" % (key, m.get(key)))
    for jdk in m.get("jdks", []):
        out.append("- JDK: %s" % jdk)
    out += ["- load before: %s; after: %s" % (results.get("uptime_before"),
                                              results.get("uptime_after")),
            ""]
    return "\n".join(out)


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if "h2" in args.scenarios and not shutil.which("h2load"):
        sys.exit("protocols: h2load is missing: apt-get install "
                 "nghttp2-client (scripts/install-deps.sh bench)")
    started = datetime.datetime.now()
    machine = bench.machine(None)
    del machine["oha"]
    machine["h2load"] = bench.first_line(["h2load", "--version"])
    # under `taskset`, the servers and the load tool share fewer cores
    machine["cpus allowed"] = ",".join(map(str, sorted(
        os.sched_getaffinity(0))))
    results = {
        "started": started.strftime("%Y-%m-%d %H:%M"),
        "command": " ".join(["bench/protocols.py"] + argv),
        "quick": args.quick, "machine": machine,
        "uptime_before": bench.uptime()[0],
        "settings": {k: getattr(args, k) for k in (
            "duration", "rounds", "warmup", "conns", "depth", "h2_clients",
            "h2_streams")},
        "servers": {}, "skipped": {}}
    if "pipeline" in args.scenarios:
        names, skipped = preflight(args.servers, False)
        results["skipped"].update(skipped)
        results["servers"].update({n: bench.describe(n) for n in names})
        run_scenario("pipeline", names, args, results)
    if "h2" in args.scenarios:
        names, skipped = preflight(args.h2_servers, True)
        results["h2_skipped"] = dict(H2_SKIPPED)
        results["skipped"].update({n: w for n, w in skipped.items()
                                   if n not in H2_SKIPPED})
        results["servers"].update({n: bench.describe(n) for n in names})
        run_scenario("h2", names, args, results)
    results["uptime_after"] = bench.uptime()[0]
    results["finished"] = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    text = render(results)
    out = Path(args.out) if args.out else RESULTS / (
        started.strftime("%Y-%m-%d-%H%M") + "-protocols.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    log("report written to %s" % out)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except KeyboardInterrupt:
        sys.exit("protocols: interrupted; the servers are stopped")
