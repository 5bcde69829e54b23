#!/usr/bin/env python3
"""Reloads in the open model: what users at a fixed rate feel.

The Compojure example behind `bin/nginx-jvm run` (2 workers, the class
cache warm), and plain nginx through the same sequence:

1. peak: wrk -c50 over both workers after a warm-up (nginx-jvm only); the
   rate of the runs below is half of it (--rate to give one);
2. oha at that rate (-q RATE --latency-correction, an open model: a request
   is due at its time whether or not the server kept up), --duration
   seconds each: a quiet run, one reload --reload-at seconds in, and five
   reloads in a row (--gap seconds apart, the last one given --duration
   seconds to settle); failed requests (and why, oha's words), p50, p99,
   p99.9, max, and the ratio of p99 to the quiet run's;
3. warm-up at saturation (nginx-jvm only, a server of its own that logs
   each request's worker and time): wrk -c50 with one reload; for each new
   worker, the CPU seconds (utime + stime from /proc/PID/stat, all its
   threads) from its fork until it first serves, over one second, 90 % of a
   warm worker's rate (the old workers' per-worker rate before the reload),
   and its rate second by second; with `jvm_reload_drain 0` unless --http
   sets it (a drain hands the clients over at its own pace: the new
   worker's rate would measure that, not its JIT).

Every server event is timed by polling /proc every 20 ms: a new worker's
fork (its start time), and the old workers' exit. --timeline records every
request of the one-reload run (oha --db-url) and prints p50/p99/max per
0.25 s beside them: where in a reload the latency is.

On a shared machine: the launcher, module, runtime jar and Clojure jars
are copied at the start (a `make` in the tree during the run would change
what a reload loads, and rebuild the class cache in the middle of it: seen,
9 s of stall); each oha run waits (up to 3 minutes) for the machine to be
quiet first, and reports the CPU seconds the server, oha and everything
else used during it ("others", within about 2 s: the accounting of
/proc/stat against /proc/PID/stat): a run with others' load measured them
too.

  bench/reload_open.py [--duration 10] [--reload-at 3] [--gap 2]
                       [--rate R] [--conns 50] [--servers nginx-jvm,nginx]
                       [--jvm-option OPT ...] [--java-home DIR]
                       [--http 'jvm_reload_drain 0;' ...] [--module SO]
                       [--no-cache] [--launcher-option=--user ...]
                       [--skip latency|warmup] [--warmup-seconds 14]
                       [--timeline]
                       [--json FILE]

Run it under `flock /tmp/nginx-jvm-bench.lock` on a shared machine.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from start import TOP, free_port  # noqa: E402
from memory import children  # noqa: E402
from benchsuite import load, servers  # noqa: E402
import reload  # noqa: E402

RUN_OPTIONS = servers.IDLE
TICK = os.sysconf("SC_CLK_TCK")
LOG_FORMAT = "log_format rl '$pid $msec';"
LOG_REAL = "map $http_user_agent $rl_real { nginx-jvm-warmup 0; default 1; }"


def boot_offset():
    """monotonic() - CLOCK_BOOTTIME: /proc/PID/stat's start times are on
    the latter."""
    return time.monotonic() - time.clock_gettime(time.CLOCK_BOOTTIME)


def stat(pid):
    """(cpu seconds, start time on the monotonic clock) of a process."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK
    return cpu, int(fields[19]) / TICK


def machine_cpu():
    """(busy, total) CPU seconds of the whole machine since boot."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / TICK, sum(v) / TICK


def wait_quiet(limit=0.2, patience=180):
    """Waits, up to `patience` seconds, until the machine's CPU is less
    than `limit` busy over one second (another session's build or tests
    on the 2 cores would be measured with the server); returns the share
    last seen."""
    deadline = time.monotonic() + patience
    while True:
        b1, t1 = machine_cpu()
        time.sleep(1)
        b2, t2 = machine_cpu()
        busy = (b2 - b1) / max(1e-9, t2 - t1)
        if busy < limit or time.monotonic() > deadline:
            return busy


def tree_cpu(pid):
    """CPU seconds of a process and of its children, live (their own) and
    reaped (its cutime + cstime)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    total = sum(int(x) for x in fields[11:15]) / TICK
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = [int(p) for p in f.read().split()]
    except OSError:
        kids = []
    for k in kids:
        try:
            total += stat(k)[0]
        except (OSError, IndexError, ValueError):
            pass
    return total


def is_worker(pid):
    """A worker, or a child of the master that has no title of its own yet
    (a worker starting: nginx names it once every module's init_process
    has returned, for us after the JVM's start)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            title = f.read()
        return (title.startswith(b"nginx: worker process")
                or not title.startswith(b"nginx: cache"))
    except OSError:
        return False


def snapshot(module=None):
    """The launcher, module, runtime jar and Clojure jars copied to a
    directory of their own, with a class cache of its own: a `make` in the
    tree meanwhile (a shared machine) would otherwise change what a reload
    loads and make the master rebuild its class cache during the run."""
    top = tempfile.mkdtemp(prefix="nginx-reload-open-top-")
    os.chmod(top, 0o755)
    for d in ("bin", "build", "cache"):
        os.mkdir(os.path.join(top, d))
        os.chmod(os.path.join(top, d), 0o755)
    shutil.copy(os.path.join(TOP, "bin/nginx-jvm"), os.path.join(top, "bin"))
    for f in ("ngx_http_jvm_module.so", "nginx-jvm.jar"):
        shutil.copy(os.path.join(TOP, "build", f), os.path.join(top, "build"))
    if module:
        shutil.copy(module, os.path.join(top, "build/ngx_http_jvm_module.so"))
    shutil.copytree(os.path.join(TOP, "build/lib"),
                    os.path.join(top, "build/lib"))
    return top


class Server(reload.Server):
    """reload.py's server, with a directory of its own for either kind (the
    error log, the launcher's stderr): nginx-jvm from the launcher of `top`
    (a snapshot()) or plain nginx; `log` adds an access log of each
    request's worker and time (for the warm-up)."""

    def __init__(self, kind, jvm_options=(), java_home=None, log=False,
                 top=TOP, http=(), launcher=(), cache=True):
        self.kind = kind
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="nginx-reload-open-")
        os.chmod(self.dir, 0o755)
        self.error_log = os.path.join(self.dir, "error.log")
        self.access_log = os.path.join(self.dir, "access.log") if log else None
        if kind == "nginx-jvm":
            cmd = self.run_command(top, ["--error-log", self.error_log]
                                   + RUN_OPTIONS)
            for o in jvm_options:
                cmd += ["--jvm-option", o]
            for h in http:
                cmd += ["--http", h]
            cmd += list(launcher)
            if java_home:
                cmd += ["--jvm-path", os.path.join(java_home,
                                                   "lib/server/libjvm.so")]
            if log:
                # jvm_warmup's requests (their User-Agent) are no clients'
                cmd += ["--http", LOG_FORMAT, "--http", LOG_REAL, "--server",
                        "access_log %s rl buffer=256k flush=1s if=$rl_real;"
                        % self.access_log]
            env = dict(os.environ)
            if not cache:
                env["NGINX_JVM_CACHE"] = "off"
            elif top != TOP:
                env["NGINX_JVM_CACHE"] = os.path.join(top, "cache")
            self.stderr = open(os.path.join(self.dir, "stderr"), "w")
            self.proc = subprocess.Popen(
                cmd, stdout=subprocess.DEVNULL, stderr=self.stderr,
                start_new_session=True, env=env)
            self.top = self.proc.pid
        else:
            self.start_plain(reload.plain_conf(self.port).replace(
                "logs/error.log warn", self.error_log + " notice"))
        self.wait_started(lambda: self.proc.poll() is not None)

    def jdk(self):
        """The launcher's words for the JDK it took."""
        try:
            with open(os.path.join(self.dir, "stderr")) as f:
                for line in f:
                    if "JDK" in line:
                        return line.strip().replace("nginx-jvm: ", "")
        except OSError:
            pass
        return None

    def worker_pids(self):
        try:
            return [p for p in children(self.master()) if is_worker(p)]
        except IndexError:
            return []

    def log_problems(self):
        """The error log's [alert], [crit] and [error] lines."""
        try:
            with open(self.error_log) as f:
                return [l.rstrip() for l in f
                        if re.search(r"\[(alert|crit|error|emerg)\]", l)]
        except OSError:
            return []


class Monitor(threading.Thread):
    """Polls the master's workers every 20 ms: each worker's fork time,
    exit time and CPU seconds over time."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server = server
        self.master = server.master()
        self.offset = boot_offset()
        self.workers = {}       # pid -> {fork, gone, cpu: [(t, s)]}
        self.stopped = threading.Event()

    def run(self):
        path = "/proc/%d/task/%d/children" % (self.master, self.master)
        known = set()
        while not self.stopped.is_set():
            now = time.monotonic()
            seen = set()
            try:
                with open(path) as f:
                    pids = [int(p) for p in f.read().split()]
            except OSError:
                pids = children(self.master)
            for pid in pids:
                if pid not in known:
                    if not is_worker(pid):
                        continue
                    known.add(pid)
                try:
                    cpu, start = stat(pid)
                except (OSError, IndexError, ValueError):
                    continue
                seen.add(pid)
                w = self.workers.setdefault(
                    pid, {"fork": start + self.offset, "gone": None,
                          "cpu": []})
                w["cpu"].append((now, cpu))
            for pid, w in self.workers.items():
                if pid not in seen and w["gone"] is None:
                    w["gone"] = now
            time.sleep(0.02)

    def stop(self):
        self.stopped.set()
        self.join()


def run_with_actions(cmd, actions, timeout):
    """Runs cmd, calling each (delay, fn) of actions meanwhile; returns
    (stdout, start time)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    for delay, fn in actions:
        time.sleep(max(0, start + delay - time.monotonic()))
        fn()
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (cmd[0], proc.returncode,
                                                   err.strip()[-300:]))
    return out, start


def oha(path, url, rate, seconds, conns, actions=(), server=None, db=None):
    """oha at a fixed rate, latency-corrected; returns a dict: errors (and
    oha's words for them), p50 .. p99.9 and max in ms, requests; with
    `server`, after waiting for a quiet machine: the machine's busy share
    before, and the CPU seconds neither the server nor oha used during the
    run (others' load, which a run at a fixed rate also measures)."""
    cmd = [path, "-q", str(rate), "--latency-correction", "-c", str(conns),
           "-z", "%ds" % seconds, "--no-tui", "--output-format", "json", url]
    if db:
        cmd[-1:-1] = ["--db-url", db]
    before = wait_quiet() if server else None
    m0 = machine_cpu()[0]
    s0 = tree_cpu(server.master()) if server else 0
    c0 = os.times()
    out, started = run_with_actions(cmd, actions, seconds + 120)
    c1 = os.times()
    s1 = tree_cpu(server.master()) if server else 0
    m1 = machine_cpu()[0]
    client = c1.children_user + c1.children_system - (
        c0.children_user + c0.children_system)
    data = json.loads(out)
    parsed = load.parse_oha_json(out)
    summary = data["summary"]
    dist = {e: n for e, n in (data.get("errorDistribution") or {}).items()
            if "aborted due to deadline" not in e}
    return {"errors": parsed["errors"], "why": dist,
            "statuses": parsed["statuses"],
            "p50": parsed["p50"], "p99": parsed["p99"],
            "p99.9": parsed["p99.9"],
            "max": (summary.get("slowest") or 0) * 1000.0,
            "rps": parsed["rps"],
            "busy_before": before, "started": started,
            "cpu": {"server": round(s1 - s0, 2), "oha": round(client, 2),
                    "others": round(m1 - m0 - (s1 - s0) - client, 2)}}


def wrk_rate(url, seconds, conns=50):
    out, _ = run_with_actions(["wrk", "-t2", "-c%d" % conns,
                               "-d%ds" % seconds, url], (), seconds + 60)
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def latency_runs(server, oha_path, rate, args):
    d, c = args.duration, args.conns
    results = {}
    oha(oha_path, server.url, rate, 3, c)               # warm the connections
    results["quiet"] = oha(oha_path, server.url, rate, d, c, server=server)
    time.sleep(2)
    mon = Monitor(server)
    mon.start()
    db = None
    if args.timeline:
        db = os.path.join(server.dir, "oha.db")
    results["one reload"] = oha(oha_path, server.url, rate, d, c,
                                [(args.reload_at, server.reload)], server, db)
    time.sleep(6)                                       # the old gone
    mon.stop()
    results["one reload"]["events"] = events(mon)
    if db:
        results["one reload"]["timeline"] = timeline(
            db, results["one reload"]["started"], mon)
    mon = Monitor(server)
    mon.start()
    five = [(args.reload_at + i * args.gap, server.reload) for i in range(5)]
    results["five reloads"] = oha(oha_path, server.url, rate,
                                  int(args.reload_at + 4 * args.gap + d), c,
                                  five, server)
    time.sleep(6)
    mon.stop()
    results["five reloads"]["events"] = events(mon)
    return results


def timeline(db, started, mon, step=0.25):
    """oha's record of every answered request (--db-url: start and
    duration, seconds from its start), bucketed by `step`: [t, answers,
    p50, p99, max (ms)], with the workers' forks and exits on the same
    clock (seconds from oha's start)."""
    import sqlite3
    con = sqlite3.connect(db)
    rows = con.execute("select start, duration from oha").fetchall()
    con.close()
    buckets = {}
    for st, du in rows:
        buckets.setdefault(int(st / step), []).append(du * 1000.0)
    out = {"buckets": [], "workers": []}
    for k in sorted(buckets):
        v = sorted(buckets[k])
        out["buckets"].append([round(k * step, 2), len(v),
                               round(v[len(v) // 2], 2),
                               round(v[int(len(v) * 0.99)], 2),
                               round(v[-1], 2)])
    for pid, w in sorted(mon.workers.items(), key=lambda x: x[1]["fork"]):
        out["workers"].append({
            "pid": pid, "fork": round(w["fork"] - started, 2),
            "gone": None if w["gone"] is None
            else round(w["gone"] - started, 2)})
    return out


def events(mon):
    """The workers forked and gone during a run, in seconds from the
    monitor's start, with the CPU seconds they used."""
    t0 = min(w["cpu"][0][0] for w in mon.workers.values())
    out = []
    for pid, w in sorted(mon.workers.items(), key=lambda x: x[1]["fork"]):
        out.append({"pid": pid, "fork": round(w["fork"] - t0, 3),
                    "gone": None if w["gone"] is None
                    else round(w["gone"] - t0, 3),
                    "cpu": w["cpu"][-1][1]})
    return out


def warmup_run(server, args):
    """wrk at saturation with one reload; per new worker: the CPU seconds
    from fork until it serves at 90 % of a warm worker's rate."""
    seconds = args.warmup_seconds
    reload_at = 4.0
    wrk_rate(server.url, 5)                             # warm-up
    busy = wait_quiet()
    old = server.worker_pids()
    wall = time.time() - time.monotonic()
    mon = Monitor(server)
    mon.start()
    run_with_actions(["wrk", "-t2", "-c%d" % args.conns, "-d%ds" % seconds,
                      server.url], [(reload_at, server.reload)], seconds + 60)
    time.sleep(1.5)                                     # the log's flush
    mon.stop()
    per_pid = {}
    with open(server.access_log) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                per_pid.setdefault(int(parts[0]), []).append(
                    float(parts[1]) - wall)
    t0 = min(w["cpu"][0][0] for w in mon.workers.values())
    reload_t = t0 + reload_at
    # a warm worker's rate: the old workers' in the 2 s before the reload
    warm = [sum(1 for t in per_pid.get(p, ()) if reload_t - 2.5 <= t
                < reload_t - 0.5) / 2.0 for p in old]
    warm_rate = statistics.mean(warm) if warm else 0
    out = {"warm_rate": warm_rate, "new": [], "busy_before": busy,
           "others": []}
    for pid, w in sorted(mon.workers.items(), key=lambda x: x[1]["fork"]):
        if pid in old:
            continue
        times = sorted(per_pid.get(pid, ()))
        if not times and w["gone"] is not None:
            # a child of the master that never served: the trial start
            # (without a class cache) or a cache build
            out["others"].append({"pid": pid, "cpu": w["cpu"][-1][1],
                                  "seconds": round(w["gone"] - w["fork"], 2)})
            continue
        first = times[0] if times else None
        reached, j = None, 0
        # sliding one-second windows, 50 ms apart
        t = first
        while t is not None and t + 1 <= times[-1]:
            while times[j] < t:
                j += 1
            k = j
            n = 0
            while k < len(times) and times[k] < t + 1:
                k += 1
            n = k - j
            if n >= 0.9 * warm_rate:
                reached = t + 1
                break
            t += 0.05
        cpu_at = None
        if reached is not None:
            cpu_at = next((s for (tt, s) in w["cpu"] if tt >= reached),
                          w["cpu"][-1][1])
        seconds_rate = []
        if first is not None:
            s = w["fork"]
            while s < times[-1]:
                seconds_rate.append(sum(1 for x in times if s <= x < s + 1))
                s += 1
        cpu_first = None
        if first is not None:
            cpu_first = next((s for (tt, s) in w["cpu"] if tt >= first),
                             w["cpu"][-1][1])
        out["new"].append({
            "pid": pid, "fork": round(w["fork"] - t0, 3),
            "first_request": None if first is None else round(first - t0, 3),
            "cpu_to_first_request": cpu_first,
            "at_90": None if reached is None else round(reached - t0, 3),
            "cpu_to_90": cpu_at,
            "per_second_from_fork": seconds_rate})
    return out


def fmt(ms):
    return "-" if ms is None else ("%.1f" % ms if ms >= 10 else "%.2f" % ms)


def report(rate, peak, all_results, warm):
    lines = []
    if peak:
        lines.append("Compojure example's peak: %.0f req/s (wrk -c50); "
                     "oha at %d req/s" % (peak, rate))
    lines.append("")
    lines.append("| server | run | failed | p50 ms | p99 ms | p99.9 ms | "
                 "max ms | p99 / quiet | CPU s: server, oha, others |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for kind, results in all_results.items():
        quiet = results["quiet"]["p99"]
        for run, r in results.items():
            lines.append("| %s | %s | %d | %s | %s | %s | %s | %.1f | %s |"
                         % (kind, run, r["errors"], fmt(r["p50"]),
                            fmt(r["p99"]), fmt(r["p99.9"]), fmt(r["max"]),
                            r["p99"] / quiet if quiet else 0,
                            "%.1f, %.1f, %.1f" % (r["cpu"]["server"],
                                                  r["cpu"]["oha"],
                                                  r["cpu"]["others"])))
    for kind, results in all_results.items():
        for run, r in results.items():
            if r["why"] or set(r["statuses"]) - {"200"}:
                lines.append("- %s, %s: %s %s" % (kind, run, r["why"],
                                                  r["statuses"]))
            if r.get("events"):
                lines.append("- %s, %s: workers %s" % (
                    kind, run, ", ".join(
                        "%d fork %.2f gone %s cpu %.2f" % (
                            e["pid"], e["fork"],
                            "-" if e["gone"] is None else "%.2f" % e["gone"],
                            e["cpu"]) for e in r["events"])))
    for kind, results in all_results.items():
        tl = results.get("one reload", {}).get("timeline")
        if not tl:
            continue
        lines.append("")
        lines.append("%s, one reload, per 0.25 s (seconds from oha's start; "
                     "workers: %s):" % (kind, ", ".join(
                         "%d fork %s gone %s" % (w["pid"], w["fork"],
                                                 w["gone"])
                         for w in tl["workers"])))
        lines.append("")
        lines.append("| s | answers | p50 ms | p99 ms | max ms |")
        lines.append("|---|---|---|---|---|")
        for b in tl["buckets"]:
            lines.append("| %.2f | %d | %s | %s | %s |" % (
                b[0], b[1], fmt(b[2]), fmt(b[3]), fmt(b[4])))
    if warm:
        lines.append("")
        lines.append("Warm-up at saturation (wrk -c50, one reload 4 s in): "
                     "a warm worker serves %.0f req/s" % warm["warm_rate"])
        lines.append("")
        lines.append("| new worker | fork s | first request s | CPU s to "
                     "first | 90 % at s | CPU s to 90 % | req/s per "
                     "second from fork |")
        lines.append("|---|---|---|---|---|---|---|")
        for n in warm["new"]:
            lines.append("| %d | %.2f | %s | %s | %s | %s | %s |" % (
                n["pid"], n["fork"],
                "-" if n["first_request"] is None else "%.2f"
                % n["first_request"],
                "-" if n["cpu_to_first_request"] is None else "%.2f"
                % n["cpu_to_first_request"],
                "-" if n["at_90"] is None else "%.2f" % n["at_90"],
                "-" if n["cpu_to_90"] is None else "%.2f" % n["cpu_to_90"],
                " ".join(str(x) for x in n["per_second_from_fork"])))
        for o in warm.get("others", ()):
            lines.append("")
            lines.append("Another child of the master (the trial start, or "
                         "a cache build): %.2f CPU s over %.2f s"
                         % (o["cpu"], o["seconds"]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--reload-at", type=float, default=3)
    ap.add_argument("--gap", type=float, default=2)
    ap.add_argument("--rate", type=int, help="oha's rate (default: half "
                    "the measured peak)")
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--servers", default="nginx-jvm,nginx")
    ap.add_argument("--jvm-option", action="append", default=[])
    ap.add_argument("--java-home", help="the JDK of the workers")
    ap.add_argument("--http", action="append", default=[],
                    help="nginx.conf directives for nginx-jvm's http block "
                    "(the launcher's --http), e.g. 'jvm_reload_drain 0;'")
    ap.add_argument("--no-cache", action="store_true",
                    help="no class cache (jvm_cache off): what it buys")
    ap.add_argument("--module", help="another build of the module (an "
                    "older commit's, for a before and after)")
    ap.add_argument("--launcher-option", action="append", default=[],
                    help="one more argument of bin/nginx-jvm run (repeat: "
                    "--launcher-option=--user --launcher-option=root)")
    ap.add_argument("--timeline", action="store_true",
                    help="record every request of the one-reload run (oha "
                    "--db-url) and print p50/p99/max per 0.25 s beside the "
                    "workers' forks and exits")
    ap.add_argument("--skip", action="append", default=[],
                    choices=["latency", "warmup"])
    ap.add_argument("--warmup-seconds", type=int, default=14)
    ap.add_argument("--json", help="write the measurements here")
    args = ap.parse_args()

    oha_path = load.find_oha()
    if oha_path is None and "latency" not in args.skip:
        oha_path, why = load.install_oha()
        if oha_path is None:
            raise SystemExit("reload_open: " + why)
    kinds = args.servers.split(",")
    top = snapshot(args.module)
    try:
        run(args, oha_path, kinds, top)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def run(args, oha_path, kinds, top):
    rate, peak = args.rate, None
    all_results, warm, jdk = {}, None, None
    for kind in kinds:
        if "latency" in args.skip:
            break
        s = Server(kind, args.jvm_option, args.java_home, top=top,
                   http=args.http, launcher=args.launcher_option,
                   cache=not args.no_cache)
        try:
            if rate is None:
                wrk_rate(s.url, 5)                      # JIT warm-up
                peak = max(wrk_rate(s.url, 5) for _ in range(2))
                rate = int(peak / 2)
                print("peak %.0f req/s: oha at %d" % (peak, rate), flush=True)
            else:
                wrk_rate(s.url, 5)
            all_results[kind] = latency_runs(s, oha_path, rate, args)
            all_results[kind]["log"] = s.log_problems()
            jdk = s.jdk() or jdk
        finally:
            s.stop()
        print(json.dumps({kind: all_results[kind]}, indent=1), flush=True)
    if "warmup" not in args.skip and "nginx-jvm" in kinds:
        # the JVM's warm-up, not the hand-over's pace: no drain, unless
        # asked for
        http = list(args.http)
        if not any("jvm_reload_drain" in h for h in http):
            http.append("jvm_reload_drain 0;")
        s = Server("nginx-jvm", args.jvm_option, args.java_home, log=True,
                   top=top, http=http,
                   launcher=args.launcher_option, cache=not args.no_cache)
        try:
            warm = warmup_run(s, args)
            warm["log"] = s.log_problems()
            jdk = s.jdk()
        finally:
            s.stop()
        print(json.dumps(warm, indent=1), flush=True)
    logs = {k: v.pop("log") for k, v in all_results.items()}
    print()
    print("nginx-jvm's JDK: %s" % jdk)
    print(report(rate, peak, all_results, warm))
    for k, v in logs.items():
        if v:
            print("%s error log: %s" % (k, v[:5]))
    if warm and warm.get("log"):
        print("warm-up error log: %s" % warm["log"][:5])
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rate": rate, "peak": peak, "latency": all_results,
                       "warmup": warm, "logs": logs,
                       "jvm_options": args.jvm_option,
                       "java_home": args.java_home, "jdk": jdk,
                       "http": args.http, "no_cache": args.no_cache},
                      f, indent=1)


if __name__ == "__main__":
    main()
