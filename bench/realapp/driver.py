#!/usr/bin/env python3
"""The realapp benchmark (`make bench-realapp`): TechEmpower's six test
types on nginx-jvm and its peers, against a private PostgreSQL.

For each server in turn (servers.py): start it, run the verifier
(verify.py; a type that fails is not measured on that server), then for
each test type a ladder of fixed rates (oha -q RATE --latency-correction:
an open model as wrk2's, the latency of a request counted from when it was
due), each held for --step seconds after a warm-up (as fast as 16 connections
go), recording the HDR
percentiles p50..p99.99 and the maximum; the ladder stops at the first rate
that breaks the bounds (p99 < 10 ms, p99.9 < 100 ms, no errors, 95% of the
rate served).  The rate before it is then held for --hold seconds (60): the
server's wall is the highest rate that holds the bounds for that long (if
the wall's rate fails the long run, the rates below it are tried).  Then a
concurrency sweep (closed model, as fast as it goes) for plaintext and db at
16, 256, 1,024 and 10,000 connections: throughput and p99.  The CPU the
server's processes and PostgreSQL's used in each step is recorded (cores),
to say what limits it.  Then plaintext pipelined 16 deep as TechEmpower
runs it (wrk, pipeline.lua: 16 requests per write) at --pipeline
connections, beside the sweep's unpipelined figures.

Writes bench/results/DATE-realapp.md (tables, the commands, the plots
DATE-realapp-TYPE.png made by plot.py with Debian's matplotlib) and
DATE-realapp.json (every number).

    bench/realapp/driver.py [--quick] [--servers a,b] [--types x,y]
                           [--rates R,R,...] [--step S] [--sweep N,N]
                           [--pipeline N,N] [--gc parallel|g1|zgc]
                           [--out FILE]
"""

import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import pg  # noqa: E402
import servers  # noqa: E402
import verify  # noqa: E402
from benchsuite import load  # noqa: E402

RESULTS = HERE.parent / "results"
P99_MS, P999_MS = 10.0, 100.0
SERVED = 0.95                  # of the rate asked for
PERCENTILES = ("p50", "p90", "p99", "p99.9", "p99.99", "max")

# The rates (requests/s) each type's ladder climbs, and the query count of
# queries and updates (TechEmpower's highest, 20). On a quiet machine four
# servers reached the top of json's ladder at 48,000 and two plaintext's
# at 64,000 (2026-11-28): the ladders go on, so that a wall is a wall.
LADDERS = {
    "plaintext": [1000, 2000, 4000, 8000, 12000, 16000, 24000, 32000,
                  48000, 64000, 80000, 96000, 128000],
    "json": [1000, 2000, 4000, 8000, 12000, 16000, 24000, 32000, 48000,
             64000, 80000, 96000],
    "db": [500, 1000, 2000, 4000, 6000, 8000, 10000, 12000, 16000, 20000,
           24000],
    "fortunes": [500, 1000, 2000, 4000, 6000, 8000, 10000, 12000, 16000,
                 20000, 24000],
    "queries": [100, 200, 400, 800, 1200, 1600, 2400, 3200],
    "updates": [50, 100, 200, 400, 600, 800, 1200, 1600],
}
QUERIES = 20
SWEEP_TYPES = ("plaintext", "db")
WARMUP_CONNS = 16
# TechEmpower's plaintext test pipelines 16 requests per write (wrk with a
# Lua script), at 256 to 16,384 connections; its headers, its read timeout.
# One wrk thread: the load generator shares the machine with the server
# (the suite's wrk runs -t1 too).
PIPELINE_DEPTH = 16
PIPELINE_SCRIPT = HERE / "pipeline.lua"
PIPELINE_HEADERS = [
    "Accept: text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,"
    "application/xml;q=0.8,*/*;q=0.7", "Connection: keep-alive"]

DEFAULTS = dict(servers=",".join(servers.SERVERS),
                types=",".join(verify.TYPES), step=10, hold=60, warmup=10,
                sweep="16,256,1024,10000", sweep_step=15, conns=256,
                pipeline="256,1024",
                retries=1,
                max_steps=len(max(LADDERS.values(), key=len)))
# under five minutes: nginx-jvm's three modes, three rates a type, short
QUICK = dict(servers="jvm-loop,jvm-pool,jvm-virtual", step=3, hold=0,
             warmup=2, retries=0,
             sweep="16,256", sweep_step=3, max_steps=3, pipeline="256")


def log(*a):
    print("realapp:", *a, flush=True)


def path_of(type_):
    p = verify.PATHS[type_]
    return p + ("?queries=%d" % QUERIES if type_ in ("queries", "updates")
                else "")


# --- load -------------------------------------------------------------------

def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def run_oha(oha, url, duration, conns, rate=None):
    """One oha run: the parsed numbers (ms), max added, and the command."""
    flags = load.oha_output_flags(subprocess.run(
        [oha, "--help"], capture_output=True, text=True).stdout)
    if not flags:
        raise RuntimeError("this oha prints no JSON: install a newer one")
    cmd = [oha, "-c", str(conns), "-z", "%ds" % duration, "--no-tui"]
    if rate:
        cmd += ["-q", str(rate), "--latency-correction"]
    cmd += flags + [url]
    p = subprocess.run(cmd, capture_output=True, text=True,
                       timeout=duration + 180, preexec_fn=raise_nofile)
    if p.returncode != 0:
        raise RuntimeError("oha failed (%d): %s" % (p.returncode,
                                                    p.stderr.strip()[-300:]))
    out = load.parse_oha_json(p.stdout)
    slowest = json.loads(p.stdout)["summary"].get("slowest")
    out["max"] = None if slowest is None else slowest * 1000.0
    out["non200"] = sum(n for code, n in out["statuses"].items()
                        if code != "200")
    out["command"] = " ".join(map(str, cmd[1:])).replace(url, "URL")
    return out


def parse_wrk_latency(text):
    """wrk --latency's report -> {p50, p75, p90, p99, max} in ms (None for a
    figure it does not print)."""
    out = dict.fromkeys(("p50", "p75", "p90", "p99", "max"))
    for pct, value, unit in re.findall(
            r"^\s*(50|75|90|99)(?:\.000)?%\s+([\d.]+)(us|ms|s|m|h)\s*$",
            text, re.M):
        out["p" + pct] = load.to_ms(value, unit)
    # "Latency   avg  stdev  max  +/- stdev"
    m = re.search(r"^\s*Latency\s+[\d.]+\w+\s+[\d.]+\w+\s+([\d.]+)"
                  r"(us|ms|s|m|h)\b", text, re.M)
    if m:
        out["max"] = load.to_ms(*m.groups())
    return out


def run_wrk_pipelined(url, duration, conns, depth=PIPELINE_DEPTH):
    """One wrk run, `depth` requests per write: rps, percentiles (ms),
    errors (socket errors) and non200 (wrk's non-2xx/3xx), the command."""
    cmd = ["wrk", "-t1", "-c%d" % conns, "-d%ds" % duration, "--timeout",
           "8", "--latency", "-s", str(PIPELINE_SCRIPT)]
    for h in PIPELINE_HEADERS:
        cmd += ["-H", h]
    cmd += [url, "--", str(depth)]
    p = subprocess.run(cmd, capture_output=True, text=True,
                       timeout=duration + 120, preexec_fn=raise_nofile)
    text = p.stdout + p.stderr
    w = load.parse_wrk(text)            # raises when wrk measured nothing
    out = parse_wrk_latency(text)
    out.update(rps=w["rps"], requests=w["requests"],
               errors=w["socket_errors"], non200=w["non2xx"], depth=depth,
               command=" ".join(cmd[1:]).replace(url, "URL"))
    return out


# --- CPU --------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / TICK


def postgres_pids(db):
    try:
        master = int((db.data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return []
    return [master] + servers.suite.children(master)


class CpuMeter:
    """Cores used by the server and by PostgreSQL between start and
    stop."""

    def __init__(self, server, db):
        self.server, self.db = server, db

    def __enter__(self):
        self.t = time.monotonic()
        self.pids = (self.server.pids(), postgres_pids(self.db))
        self.before = [cpu_seconds(p) for p in self.pids]
        return self

    def __exit__(self, *exc):
        elapsed = time.monotonic() - self.t
        after = [cpu_seconds(p) for p in (self.server.pids(),
                                          postgres_pids(self.db))]
        self.server_cores, self.db_cores = [
            max(0.0, (a - b) / elapsed) for a, b in zip(after, self.before)]


# --- one server ---------------------------------------------------------------

def holds(r, rate):
    return (r["errors"] == 0 and r["non200"] == 0
            and r["p99"] is not None and r["p99"] < P99_MS
            and r["p99.9"] is not None and r["p99.9"] < P999_MS
            and (r["rps"] or 0) >= SERVED * rate)


def ladder(oha, server, db, type_, args):
    url = "http://%s:%d%s" % (servers.HOST, server.port, path_of(type_))
    rates = args.rates or LADDERS[type_]
    steps, wall = [], None
    # the JIT's warm-up: as fast as WARMUP_CONNS connections go, or (with
    # --warmup-rate) at a fixed rate on the ladder's connections, which
    # reach every nginx worker: 16 connections as fast as they go all land
    # on one, and the other meets the first step cold
    if getattr(args, "warmup_rate", None):
        run_oha(oha, url, args.warmup, args.conns, args.warmup_rate)
    else:
        run_oha(oha, url, args.warmup, WARMUP_CONNS)
    for rate in rates[:args.max_steps]:
        # a short step is at the mercy of one pause (a collection, the
        # machine's neighbours): one that breaks the bounds is run again
        # (--retries) before the ladder stops
        for attempt in range(1 + getattr(args, "retries", 0)):
            with CpuMeter(server, db) as cpu:
                r = run_oha(oha, url, args.step, args.conns, rate)
            r.update(rate=rate, ok=holds(r, rate),
                     server_cores=cpu.server_cores, db_cores=cpu.db_cores,
                     attempt=attempt)
            steps.append(r)
            log("%s %s %d/s%s: %.0f/s p99 %s ms p99.9 %s ms %s"
                % (server.name, type_, rate, " (again)" if attempt else "",
                   r["rps"] or 0, fmt(r["p99"]), fmt(r["p99.9"]),
                   "ok" if r["ok"] else "over the bounds"))
            if r["ok"]:
                break
        if not r["ok"]:
            break
        wall = rate
    # The ladder's short steps find the wall; a rate counts only once it
    # is held for --hold seconds, so a step that squeaked through is tried
    # again at length and, if it fails then, the rate below it is.
    held = []
    if args.hold and wall is not None:
        below = [x for x in rates[:args.max_steps] if x <= wall][::-1]
        for rate in below[:3]:
            with CpuMeter(server, db) as cpu:
                r = run_oha(oha, url, args.hold, args.conns, rate)
            r.update(rate=rate, ok=holds(r, rate),
                     server_cores=cpu.server_cores, db_cores=cpu.db_cores,
                     hold=args.hold)
            held.append(r)
            log("%s %s %d/s held %d s: %.0f/s p99 %s ms p99.9 %s ms %s"
                % (server.name, type_, rate, args.hold, r["rps"] or 0,
                   fmt(r["p99"]), fmt(r["p99.9"]),
                   "ok" if r["ok"] else "over the bounds"))
            if r["ok"]:
                break
        ok = [x["rate"] for x in held if x["ok"]]
        wall = ok[0] if ok else None
    return {"steps": steps, "held": held, "wall": wall}


def sweep(oha, server, db, type_, args):
    url = "http://%s:%d%s" % (servers.HOST, server.port, path_of(type_))
    out = []
    for conns in [int(c) for c in args.sweep.split(",") if c]:
        with CpuMeter(server, db) as cpu:
            r = run_oha(oha, url, args.sweep_step, conns)
        r.update(conns=conns, server_cores=cpu.server_cores,
                 db_cores=cpu.db_cores)
        out.append(r)
        log("%s %s %d connections: %.0f/s p99 %s ms, %d errors"
            % (server.name, type_, conns, r["rps"] or 0, fmt(r["p99"]),
               r["errors"] + r["non200"]))
    return out


def pipelined(server, db, args):
    """plaintext pipelined PIPELINE_DEPTH deep at each of --pipeline's
    connection counts, as fast as it goes."""
    url = "http://%s:%d%s" % (servers.HOST, server.port,
                              path_of("plaintext"))
    out = []
    for conns in [int(c) for c in args.pipeline.split(",") if c]:
        with CpuMeter(server, db) as cpu:
            r = run_wrk_pipelined(url, args.sweep_step, conns)
        r.update(conns=conns, server_cores=cpu.server_cores,
                 db_cores=cpu.db_cores)
        out.append(r)
        log("%s plaintext pipelined %d deep, %d connections: %.0f/s p99 %s "
            "ms, %d errors" % (server.name, PIPELINE_DEPTH, conns, r["rps"],
                               fmt(r["p99"]), r["errors"] + r["non200"]))
    return out


def measure(name, db, work, oha, args):
    result = {"server": name, "description": servers.SERVERS[name]}
    why = servers.unavailable(name)
    if why:
        log("%s skipped: %s" % (name, why))
        result["skipped"] = why
        return result
    types = servers.types_of(name, args.types)
    log("starting %s" % name)
    server = servers.start(name, work, db.jdbc_url())
    try:
        report = verify.verify(server.port, types, db)
        result["verify"] = {t: p for t, p in report.problems.items()}
        log("%s verification:\n%s" % (name, report.text()))
        result["ladders"], result["sweeps"] = {}, {}
        for t in types:
            if report.problems.get(t):
                continue
            result["ladders"][t] = ladder(oha, server, db, t, args)
        for t in SWEEP_TYPES:
            if t in types and not report.problems.get(t) and args.sweep:
                result["sweeps"][t] = sweep(oha, server, db, t, args)
        if ("plaintext" in types and not report.problems.get("plaintext")
                and args.pipeline):
            if shutil.which("wrk"):
                result["pipelined"] = pipelined(server, db, args)
            else:
                result["pipelined_skipped"] = "no wrk (apt-get install wrk)"
        if server.conf:
            result["conf"] = server.conf
    finally:
        server.stop()
    return result


# --- the report ---------------------------------------------------------------

def fmt(v, digits=2):
    if v is None:
        return "-"
    return ("%%.%df" % digits) % v


def render(results, meta, plots):
    out = []
    add = out.append
    add("# The realapp: TechEmpower's test types, fixed rates, the wall")
    add("")
    add("%s, %s. %s" % (meta["date"], meta["machine"], meta["note"]))
    add("")
    add("Command: `%s`. Load: `oha %s` (open model, fixed rate, latency "
        "from when each request was due), after a %d s warm-up %s; the sweep: `oha -c N -z %ds` (as fast as it "
        "goes). The wall: the highest rate held%s with p99 < %g ms, "
        "p99.9 < %g ms, no errors and %d%% of the rate served; the figures "
        "at the wall are those of that run. "
        "PostgreSQL %s, private, on loopback (fsync off). queries and "
        "updates: ?queries=%d."
        % (meta["command"], meta["oha"], meta["warmup"],
           "at %d req/s on the ladder's connections" % meta["warmup_rate"]
           if meta.get("warmup_rate") else
           "as fast as %d connections go" % WARMUP_CONNS,
           meta["sweep_step"],
           " for %d s (found by the ladder's steps, then run again at "
           "length)" % meta["hold"] if meta.get("hold") else "",
           P99_MS, P999_MS, SERVED * 100, meta["postgres"], QUERIES))
    add("")
    add("## The servers")
    add("")
    add("| server | what | settings |")
    add("|---|---|---|")
    for r in results:
        add("| %s | %s | %s |" % (r["server"], r["description"],
                                  r.get("skipped") and "not run: " +
                                  r["skipped"] or meta["settings"]))
    add("")
    add("## Verification")
    add("")
    types = meta["types"]
    add("| server | %s |" % " | ".join(types))
    add("|---|%s" % ("---|" * len(types)))
    for r in results:
        if "verify" not in r:
            continue
        cells = []
        for t in types:
            if t not in r["verify"]:
                cells.append("-")
            else:
                p = r["verify"][t]
                cells.append("ok" if not p else "FAIL: " + p[0][:60])
        add("| %s | %s |" % (r["server"], " | ".join(cells)))
    add("")
    add("## The wall, per test type")
    add("")
    for t in types:
        rows = [(r, r["ladders"][t]) for r in results
                if t in r.get("ladders", {})]
        if not rows:
            continue
        add("### %s (`%s`)" % (t, path_of(t)))
        add("")
        ranked = sorted((lad["wall"], r["server"]) for r, lad in rows
                        if lad["wall"])[::-1]
        if len(ranked) >= 2:
            add("Highest: %s at %d req/s, %.2f\u00d7 the next (%s, %d req/s)."
                % (ranked[0][1], ranked[0][0], ranked[0][0] / ranked[1][0],
                   ranked[1][1], ranked[1][0]))
            add("")
        elif ranked:
            add("Only %s held a rate: %d req/s." % (ranked[0][1],
                                                    ranked[0][0]))
            add("")
        add("| server | wall (req/s) | at the wall: p50 | p99 | p99.9 | "
            "p99.99 | max (ms) | server CPU | PostgreSQL CPU | the next "
            "rate: served, p99, server / PostgreSQL CPU |")
        add("|---|---|---|---|---|---|---|---|---|---|")
        for r, lad in sorted(rows, key=lambda x: -(x[1]["wall"] or 0)):
            at = [s for s in lad.get("held", []) + lad["steps"]
                  if s["rate"] == lad["wall"]]
            s = at[0] if at else {}
            past = [x for x in lad["steps"] if not x.get("ok")]
            nxt = ("%d/s: %.0f, %s ms, %s / %s"
                   % (past[0]["rate"], past[0]["rps"] or 0,
                      fmt(past[0]["p99"]), fmt(past[0]["server_cores"]),
                      fmt(past[0]["db_cores"])) if past
                   else "not reached")
            add("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                % (r["server"], lad["wall"] or "below %d" %
                   lad["steps"][0]["rate"],
                   *[fmt(s.get(k)) for k in ("p50", "p99", "p99.9",
                                             "p99.99", "max")],
                   fmt(s.get("server_cores")), fmt(s.get("db_cores")), nxt))
        add("")
        if t in plots:
            add("![%s](%s)" % (t, plots[t]))
            add("")
        add("<details><summary>every step</summary>")
        add("")
        add("| server | rate | served | p50 | p90 | p99 | p99.9 | p99.99 | "
            "max | errors | server CPU | PostgreSQL CPU |")
        add("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r, lad in rows:
            for s in lad["steps"] + lad.get("held", []):
                add("| %s | %s | %.0f | %s | %d | %s | %s |"
                    % (r["server"], "%d%s" % (s["rate"], " (held %d s)"
                                              % s["hold"] if s.get("hold")
                                              else " (again)"
                                              if s.get("attempt") else ""),
                       s["rps"] or 0,
                       " | ".join(fmt(s.get(k)) for k in PERCENTILES),
                       s["errors"] + s["non200"], fmt(s["server_cores"]),
                       fmt(s["db_cores"])))
        add("")
        add("</details>")
        add("")
    sweeps = [(r, t, r["sweeps"][t]) for r in results
              for t in SWEEP_TYPES if t in r.get("sweeps", {})]
    if sweeps:
        add("## Concurrency sweep")
        add("")
        add("| type | server | connections | req/s | p99 (ms) | errors | "
            "server CPU | PostgreSQL CPU |")
        add("|---|---|---|---|---|---|---|---|")
        for r, t, rows in sweeps:
            for s in rows:
                add("| %s | %s | %d | %.0f | %s | %d | %s | %s |"
                    % (t, r["server"], s["conns"], s["rps"] or 0,
                       fmt(s["p99"]), s["errors"] + s["non200"],
                       fmt(s["server_cores"]), fmt(s["db_cores"])))
        add("")
    out += pipelined_section(results)
    return "\n".join(out) + "\n"


def pipelined_section(results):
    """The report's pipelined plaintext table: each server's runs, with the
    sweep's unpipelined req/s at the same connections beside them."""
    rows = [r for r in results if r.get("pipelined")
            or r.get("pipelined_skipped")]
    if not rows:
        return []
    out = ["## plaintext pipelined %d deep (TechEmpower's way)" %
           PIPELINE_DEPTH, "",
           "`wrk -t1 -cN --latency -s bench/realapp/pipeline.lua URL -- %d`:"
           " %d requests per write, as fast as it goes; each response's "
           "latency from its batch's write. Unpipelined: the concurrency "
           "sweep's plaintext at the same connections (oha), where it ran."
           % (PIPELINE_DEPTH, PIPELINE_DEPTH), "",
           "| server | connections | req/s | unpipelined req/s | p50 | p90 | "
           "p99 | max (ms) | errors | server CPU |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("pipelined_skipped"):
            out.append("| %s | not run: %s |||||||||" % (
                r["server"], r["pipelined_skipped"]))
            continue
        flat = {s["conns"]: s for s in r.get("sweeps", {}).get(
            "plaintext", [])}
        for s in r["pipelined"]:
            u = flat.get(s["conns"])
            out.append("| %s | %d | %.0f | %s | %s | %s | %s | %s | %d | %s |"
                       % (r["server"], s["conns"], s["rps"] or 0,
                          "%.0f" % (u["rps"] or 0) if u else "-",
                          *[fmt(s.get(k)) for k in ("p50", "p90", "p99",
                                                    "max")],
                          s["errors"] + s["non200"], fmt(s["server_cores"])))
    out.append("")
    return out


def make_plots(data_file, out_dir, stem):
    """plot.py under Debian's python3 (python3-matplotlib); {type: png
    name}, empty (and said) without matplotlib."""
    py = "/usr/bin/python3"
    p = subprocess.run([py, str(HERE / "plot.py"), str(data_file),
                        str(out_dir), stem], capture_output=True, text=True)
    if p.returncode != 0:
        log("no plots: %s" % (p.stderr.strip().splitlines()[-1:] or
                              ["plot.py failed"])[0])
        return {}
    return json.loads(p.stdout)


def report_meta(args, now, command, postgres, planned):
    meta = {
        "date": now.strftime("%Y-%m-%d %H:%M"),
        "machine": "%d cores, %s %s" % (os.cpu_count(), platform.system(),
                                         platform.release()),
        "note": "The load generator, PostgreSQL and the server share the "
                "machine." + (" QUICK run: short steps, few rates; not a "
                              "measurement to quote." if args.quick else ""),
        "command": command,
        "oha": "-q RATE --latency-correction -c %d -z %ds" % (args.conns,
                                                              args.step),
        "hold": args.hold,
        "warmup": args.warmup, "sweep_step": args.sweep_step,
        "warmup_rate": args.warmup_rate,
        "postgres": postgres, "types": args.types, "planned": planned,
        "settings": "%d nginx workers; heap %d MB and %d database "
                    "connections in total over the JVMs; %d request threads "
                    "(thread-pool servers); collector: %s"
                    % (servers.WORKERS, servers.HEAP_MB, servers.POOL,
                       servers.THREADS, " ".join(servers.GCS[args.gc])
                       or "the JDK's default (G1)"),
    }
    return meta


def write_report(out, results, meta):
    """The report and its data (and plots) for the servers measured so
    far; a run that has not measured every planned server says so."""
    if len(results) < meta["planned"]:
        meta = dict(meta, note=meta["note"] + " Partial: %d of %d servers "
                    "measured so far." % (len(results), meta["planned"]))
    data_file = out.with_suffix(".json")
    data_file.write_text(json.dumps({"meta": meta, "results": results},
                                    indent=1))
    plots = make_plots(data_file, out.parent, out.stem)
    out.write_text(render(results, meta, plots))
    log("wrote %s (and %s)" % (out, data_file.name))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--servers")
    ap.add_argument("--types")
    ap.add_argument("--rates", help="the ladder's rates for every type")
    ap.add_argument("--step", type=int)
    ap.add_argument("--hold", type=int,
                    help="seconds the wall is held to count (60; 0: the "
                    "ladder's step decides)")
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--warmup-rate", type=int,
                    help="warm up at this fixed rate on the ladder's "
                    "connections (every worker) instead of as fast as 16 "
                    "connections go (one worker)")
    ap.add_argument("--sweep", help="connections of the sweep; '' for none")
    ap.add_argument("--sweep-step", type=int)
    ap.add_argument("--pipeline", help="connections of the pipelined "
                    "plaintext runs (256,1024; '' for none), --sweep-step "
                    "seconds each")
    ap.add_argument("--conns", type=int,
                    help="connections of the ladder's load (256)")
    ap.add_argument("--max-steps", type=int)
    ap.add_argument("--retries", type=int,
                    help="times a step that breaks the bounds is run again "
                    "before the ladder stops (1)")
    ap.add_argument("--gc", choices=sorted(servers.GCS), default="default",
                    help="the collector of every JVM (default: the JDK's)")
    ap.add_argument("--out", help="the report (default "
                    "bench/results/DATE-realapp.md)")
    args = ap.parse_args(argv)
    settings = dict(DEFAULTS, **(QUICK if args.quick else {}))
    for k, v in settings.items():
        if getattr(args, k, None) is None:
            setattr(args, k, v)
    args.servers = [s for s in args.servers.split(",") if s]
    args.types = [t for t in args.types.split(",") if t]
    args.rates = ([int(r) for r in args.rates.split(",")] if args.rates
                  else None)
    for s in args.servers:
        if s not in servers.SERVERS:
            ap.error("unknown server %s (%s)" % (s, ", ".join(servers.SERVERS)))
    for t in args.types:
        if t not in verify.TYPES:
            ap.error("unknown type %s (%s)" % (t, ", ".join(verify.TYPES)))
    servers.gc = args.gc
    oha = load.find_oha()
    if oha is None:
        oha, why = load.install_oha()
        if oha is None:
            ap.error(why)
    why = pg.missing_reason()
    if why:
        ap.error(why)

    now = datetime.datetime.now()
    out = Path(args.out) if args.out else RESULTS / (
        "%s-realapp.md" % now.strftime("%Y-%m-%d"))
    out.parent.mkdir(parents=True, exist_ok=True)
    command = " ".join(["bench/realapp/driver.py"] + (
        argv if argv is not None else sys.argv[1:]))
    work = Path(tempfile.mkdtemp(prefix="realapp-bench-"))
    results = []
    try:
        with pg.Postgres(max_connections=200) as db:
            log("PostgreSQL on port %d (%s)" % (db.port, db.dir))
            postgres = subprocess.run(
                [str(db.bin / "postgres"), "--version"], capture_output=True,
                text=True).stdout.strip()
            for name in args.servers:
                results.append(measure(name, db, work / name, oha, args))
                # after each server, so that a run cut short keeps what it
                # measured (a full run takes over an hour)
                write_report(out, results, report_meta(
                    args, now, command, postgres, len(args.servers)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
