"""The Markdown report: a pure function of the run's measurements.

`results` is the dict bench.py fills in (see its docstring there); every
section copes with parts left out by --no-latency, --no-memory or a subset
of --servers / --routes.
"""

import statistics

JVM_SERVERS = ("jvm-loop", "jvm-coloop", "jvm-pool", "jvm-virtual",
               "jvm-async", "jvm-java")
PEERS = ("nginx-clojure", "nginx-clojure-pool", "http-kit", "enso", "jetty")
# nginx-jvm over a peer within 1 +/- this is "level" rather than ahead or
# behind: about the spread of the rounds on a quiet machine
LEVEL = 0.03

# (route, servers, least ratio to plain nginx, why), from BASELINES.md
THROUGHPUT_TARGETS = [
    ("hello", ("jvm-loop", "jvm-java"), 0.92, "handler on the event loop"),
    ("file", ("jvm-loop", "jvm-java"), 0.98, "File body, sent by nginx"),
    ("hello", ("jvm-pool", "jvm-virtual", "jvm-async"), 0.75,
     "off the event loop / async path"),
]
# (route, server, least ratio to jvm-loop's rate in the same run), issue 37:
# the modes off the event loop against the loop, both through the launcher
LOOP_TARGETS = [("hello", "jvm-pool", 0.92), ("hello", "jvm-virtual", 0.85)]
# (routes, servers) that issue 37 wants ahead of every peer measured
LEAD_TARGETS = (("hello", "file"), ("jvm-loop", "jvm-coloop"))
P999_TARGET = 1.5           # times plain nginx's p99.9, at the same rate
IDLE_TARGET = 1024          # bytes per idle keep-alive connection
REST_TARGET_KB = 60 * 1024  # a worker's resident memory at rest


def median(values):
    return statistics.median(values) if values else None


def ratio(a, b):
    return a / b if a is not None and b else None


def rps_median(results, server, route):
    return median(results.get("throughput", {}).get(server, {}).get(route))


def fmt_rps(v):
    if v is None:
        return "n/a"
    return "%.1fk" % (v / 1000) if v >= 1000 else "%.0f" % v


def fmt_ratio(v):
    return "n/a" if v is None else "%.2f" % v


def fmt_ms(v):
    if v is None:
        return "n/a"
    return "%.2f ms" % v if v < 10 else "%.1f ms" % v


def fmt_kb(kb):
    return "n/a" if kb is None else "%.1f MB" % (kb / 1024)


def mark(ok):
    return "n/a" if ok is None else ("pass" if ok else "**FAIL**")


def evaluate_targets(results):
    """Rows (target, server, measured, pass: True/False/None) for each
    target of BASELINES.md that this run measured."""
    rows = []
    for route, servers, least, why in THROUGHPUT_TARGETS:
        base = rps_median(results, "nginx", route)
        for s in servers:
            r = ratio(rps_median(results, s, route), base)
            if r is not None:
                # three digits: 0.979 must not read as a passing 0.98
                rows.append(("/%s >= %.2f of nginx (%s)" % (route, least, why),
                             s, "%.3f" % r, r >= least))
    for route, s, least in LOOP_TARGETS:
        r = ratio(rps_median(results, s, route),
                  rps_median(results, "jvm-loop", route))
        if r is not None:
            rows.append(("/%s >= %.2f of jvm-loop's rate" % (route, least),
                         s, "%.3f" % r, r >= least))
    routes, mine = LEAD_TARGETS
    for route in routes:
        for s in mine:
            peers = [(p, ratio(rps_median(results, s, route),
                               rps_median(results, p, route)))
                     for p in PEERS]
            peers = [(p, r) for p, r in peers if r is not None]
            if peers:
                low, r = min(peers, key=lambda pr: pr[1])
                rows.append(("/%s ahead of every peer" % route, s,
                             "%.3f of %s (the closest)" % (r, low), r > 1))
    lat = results.get("latency", {})
    base = lat.get("nginx", {})
    for s in JVM_SERVERS:
        mine = lat.get(s)
        if not mine or "p99.9" not in mine:
            continue
        r = (ratio(mine["p99.9"], base.get("p99.9"))
             if base.get("rate") == mine.get("rate") else None)
        rows.append(("p99.9 <= %.1fx nginx's at %s req/s"
                     % (P999_TARGET, mine.get("rate")), s,
                     "n/a" if r is None else "%s (%.2fx)"
                     % (fmt_ms(mine["p99.9"]), r),
                     None if r is None else r <= P999_TARGET))
    mem = results.get("memory", {})
    for s in JVM_SERVERS:
        m = mem.get(s)
        if not m:
            continue
        idle = m.get("idle") or {}
        if idle.get("per_conn_bytes") is not None:
            per = idle["per_conn_bytes"]
            rows.append(("idle keep-alive connection <= 1 KB", s,
                         "%.0f bytes" % per, per <= IDLE_TARGET))
        if m.get("rest_worker_kb") is not None:
            measured = fmt_kb(m["rest_worker_kb"])
            if m.get("start_worker_kb") is not None:
                measured += " (%s before any load)" % fmt_kb(
                    m["start_worker_kb"])
            rows.append(("a worker (with its JVM) at rest after the warm-up "
                         "<= 60 MB resident", s, measured,
                         m["rest_worker_kb"] <= REST_TARGET_KB))
    return rows


def load_note(results):
    """A warning when the machine was busy with other work."""
    cores = results["machine"].get("cores") or 1
    before, after = results.get("load_before"), results.get("load_after")
    # our own load generator and servers keep about `cores` busy during the
    # run; before it, anything beyond half the cores is someone else's work
    if (before is not None and before > cores / 2) or \
            (after is not None and after > cores * 1.5):
        return ("**The machine was busy** (load average %s before the run, "
                "%s after, on %d cores): other work competed with the "
                "servers and the load generators, so absolute numbers are "
                "low and noisy. Ratios, taken with the servers interleaved, "
                "suffer less but are noisy too." % (before, after, cores))
    return None


def render(results):
    out = []
    add = out.append
    st = results["settings"]
    add("# nginx-jvm benchmark, %s" % results["started"])
    add("")
    add("`%s`, finished %s. Every server serves the same routes on "
        "127.0.0.1; the load generators run on the same machine."
        % (results.get("command", "bench/bench.py"), results["finished"]))
    add("")
    add("## Machine")
    add("")
    m = results["machine"]
    for key, label in (("cores", "cores"), ("memory", "memory"),
                       ("kernel", "kernel"), ("build", "nginx-jvm"),
                       ("nginx", "nginx"),
                       ("jdks", "JDKs"), ("wrk", "wrk"), ("oha", "oha")):
        value = m.get(key)
        if isinstance(value, list):
            value = "; ".join(value)
        add("- %s: %s" % (label, value if value not in (None, "") else "n/a"))
    add("- uptime before: `%s`" % results.get("uptime_before", "n/a"))
    add("- uptime after: `%s`" % results.get("uptime_after", "n/a"))
    add("")
    note = load_note(results)
    if note:
        add(note)
        add("")

    add("## Servers")
    add("")
    if st.get("jvm_options"):
        add("nginx-jvm's workers ran with `jvm_options %s` (not the JVM's "
            "defaults)." % st["jvm_options"])
        add("")
    for name, what in results["servers"].items():
        add("- `%s`: %s" % (name, what))
    for name, why in results.get("skipped", {}).items():
        add("- `%s`: not run: %s" % (name, why))
    for name, routes in results.get("restricted", {}).items():
        add("- `%s`: not measured on %s: it answers otherwise (Checks, "
            "below)" % (name, ", ".join("/" + r for r in routes)))
    add("")

    add("## Targets (BASELINES.md)")
    add("")
    rows = evaluate_targets(results)
    if rows:
        add("| target | server | measured | |")
        add("|---|---|---|---|")
        for target, server, measured, ok in rows:
            add("| %s | %s | %s | %s |" % (target, server, measured, mark(ok)))
    else:
        add("No target was measured in this run.")
    add("")

    if results.get("throughput"):
        render_throughput(results, add)
        render_peers(results, add)
    if results.get("cost"):
        render_cost(results, add)
    if "latency" in results or results.get("latency_note"):
        render_latency(results, add)
    if results.get("memory"):
        render_memory(results, add)

    add("## Checks")
    add("")
    checks = results.get("checks", [])
    add("Each server's answer to each route, compared with the expected bytes "
        "before the load: %s." % ("all as expected" if not checks
                                  else "**%d problems**" % len(checks)))
    for c in checks:
        add("- %s" % c)
    problems = results.get("wrk_problems", [])
    if problems:
        add("")
        add("Errors during the load (wrk):")
        for p in problems:
            add("- %s" % p)
    logs = results.get("log_problems", {})
    add("")
    if any(logs.values()):
        add("Problem lines in the servers' logs:")
        for server, lines in logs.items():
            for line in lines[:10]:
                add("- `%s`: `%s`" % (server, line.strip()[:300]))
            if len(lines) > 10:
                add("- `%s`: ... %d more" % (server, len(lines) - 10))
    else:
        add("No [alert], [crit], [error] or [emerg] line in the nginx logs, "
            "no WARN/ERROR/Exception in Jetty's or http-kit's.")
    add("")
    return "\n".join(out)


def render_throughput(results, add):
    st = results["settings"]
    add("## Throughput")
    add("")
    add("`wrk -t1 -c%d -d%ds` per server and route after a %d s warm-up, the "
        "servers interleaved round by round; median of %d rounds. POST /echo "
        "sends 4 KB (a wrk Lua script); /headers sends 10 extra headers and "
        "the handler answers the sum of their lengths (plain nginx answers "
        "a fixed string and cannot echo)."
        % (st["conns"], st["duration"], st["warmup"], st["rounds"]))
    add("")
    tp = results["throughput"]
    for route in results["routes"]:
        base = rps_median(results, "nginx", route)
        jetty = rps_median(results, "jetty", route)
        add("### /%s" % route)
        add("")
        add("| server | req/s | vs nginx | vs Jetty | rounds |")
        add("|---|---|---|---|---|")
        for server in results["servers"]:
            rounds = tp.get(server, {}).get(route)
            if not rounds:
                add("| %s | n/a | | | |" % server)
                continue
            med = median(rounds)
            add("| %s | %s | %s | %s | %s |"
                % (server, fmt_rps(med), fmt_ratio(ratio(med, base)),
                   fmt_ratio(ratio(med, jetty)),
                   " ".join(fmt_rps(r) for r in rounds)))
        add("")


def peer_comparison(results):
    """{(nginx-jvm server, peer): [(route, ratio, per-round ratios)]}:
    nginx-jvm's median req/s over the peer's, for every route both were
    measured on, and the ratio in each round (the servers take their turns
    within a round, so a round's pair saw the same machine); no per-round
    ratios if a round is missing on either side."""
    tp = results.get("throughput", {})
    found = {}
    for s in JVM_SERVERS:
        for peer in PEERS:
            for route in results["routes"]:
                r = ratio(rps_median(results, s, route),
                          rps_median(results, peer, route))
                if r is None:
                    continue
                mine = tp[s][route]
                theirs = tp[peer][route]
                rounds = ([ratio(a, b) for a, b in zip(mine, theirs)]
                          if len(mine) == len(theirs) else [])
                found.setdefault((s, peer), []).append((route, r, rounds))
    return found


def standing(r, rounds=()):
    """'ahead', 'behind' or 'level' for nginx-jvm's ratio to a peer;
    'unclear' when one round has it ahead and another behind."""
    def one(x):
        return "ahead" if x >= 1 + LEVEL else "behind" if x <= 1 - LEVEL \
            else "level"
    each = {one(x) for x in rounds if x is not None}
    if {"ahead", "behind"} <= each:
        return "unclear"
    return one(r)


def render_cost(results, add):
    """What a request cost each server, medians over the rounds: its
    processes' CPU time, and the bytes its JVMs' threads allocated (every
    thread, as ThreadMXBean counts them, read with jcmd Thread.print -e
    before and after each run; nginx-jvm and nginx-clojure summed over
    their workers)."""
    add("## Allocation and CPU per request")
    add("")
    add("Per request, medians of the throughput rounds: the server's CPU "
        "time (all its processes, /proc) and the bytes its JVMs allocated "
        "(the sum over every thread of ThreadMXBean's allocated bytes, "
        "read with `jcmd PID Thread.print -e` before and after each run; "
        "the nginx workers' JVMs summed; a thread that ended during a run "
        "is not counted). These move less than req/s on a shared machine.")
    add("")
    routes = results["routes"]
    add("| server | " + " | ".join("/%s bytes | /%s CPU µs" % (r, r)
                                  for r in routes) + " |")
    add("|---|" + "---|---|" * len(routes))
    for server, by_route in results["cost"].items():
        cells = []
        for r in routes:
            runs = by_route.get(r, [])
            alloc = [c["alloc_per_req"] for c in runs if "alloc_per_req" in c]
            cpu = [c["cpu_us_per_req"] for c in runs]
            cells.append("%.0f" % median(alloc) if alloc else "-")
            cells.append("%.1f" % median(cpu) if cpu else "-")
        add("| %s | %s |" % (server, " | ".join(cells)))
    add("")


def render_peers(results, add):
    found = peer_comparison(results)
    if not found:
        return
    peers = [p for p in PEERS if any(k[1] == p for k in found)]
    add("## Against the peers")
    add("")
    add("nginx-jvm's req/s over each peer's, same run: the ratio of the "
        "medians above, then in parentheses the ratio in each round (the "
        "servers take their turns within a round). Above 1.00 nginx-jvm is "
        "ahead; within %.2f of 1.00 it is called level; unclear when one "
        "round has it ahead and another behind." % LEVEL)
    add("")
    add("| route | server | %s |" % " | ".join("vs " + p for p in peers))
    add("|---|---|%s" % ("---|" * len(peers)))

    def cell(row):
        if row is None:
            return "n/a"
        _, r, rounds = row
        return fmt_ratio(r) + (" (%s)" % " ".join(map(fmt_ratio, rounds))
                               if len(rounds) > 1 else "")
    for route in results["routes"]:
        for s in JVM_SERVERS:
            rows = [{row[0]: row for row in found.get((s, p), [])}.get(route)
                    for p in peers]
            if any(rows):
                add("| /%s | %s | %s |" % (route, s, " | ".join(
                    cell(row) for row in rows)))
    add("")
    for (s, peer), rows in found.items():
        by = {}
        for route, r, rounds in rows:
            by.setdefault(standing(r, rounds), []).append(
                "/%s (%.2f)" % (route, r))
        add("- %s against %s: %s." % (s, peer, "; ".join(
            "%s on %s" % (k, ", ".join(by[k]))
            for k in ("ahead", "level", "behind", "unclear") if k in by)))
    add("")


def render_latency(results, add):
    st = results["settings"]
    add("## Latency")
    add("")
    if results.get("latency_note"):
        add(results["latency_note"])
        add("")
    lat = results.get("latency", {})
    if not lat:
        return
    add("`oha -q RATE --latency-correction -c %d -z %ds` on /hello: a fixed "
        "rate, open model (the wrk2 method), percentiles of the corrected "
        "latency. A server that could not hold the rate (achieved < 95%% of "
        "it) is marked." % (st["conns"], st["latency_duration"]))
    add("")
    add("| server | rate | achieved | p50 | p90 | p99 | p99.9 | p99.99 "
        "| p99.9 vs nginx | non-200 |")
    add("|---|---|---|---|---|---|---|---|---|---|")
    base = lat.get("nginx", {})
    for server in results["servers"]:
        r = lat.get(server)
        if r is None:
            continue
        if "error" in r:
            add("| %s | %s | %s | | | | | | | |" % (server, r.get("rate", ""),
                                                   r["error"]))
            continue
        held = r.get("rps") is not None and r["rps"] >= 0.95 * r["rate"]
        vs = (ratio(r.get("p99.9"), base.get("p99.9"))
              if base.get("rate") == r["rate"] else None)
        bad = sum(v for k, v in r.get("statuses", {}).items() if k != "200")
        bad += r.get("errors", 0)
        add("| %s | %s | %s%s | %s | %s | %s | %s | %s | %s | %s |"
            % (server, r["rate"], fmt_rps(r.get("rps")),
               "" if held else " (not held)",
               fmt_ms(r.get("p50")), fmt_ms(r.get("p90")),
               fmt_ms(r.get("p99")), fmt_ms(r.get("p99.9")),
               fmt_ms(r.get("p99.99")),
               "n/a" if vs is None else "%.2fx" % vs, bad))
    add("")


def render_memory(results, add):
    st = results["settings"]
    add("## Memory")
    add("")
    add("Resident memory (VmRSS) summed over all of a server's processes "
        "(nginx: master and 2 workers; nginx-jetty: nginx plus the Jetty "
        "behind it), and of its largest worker (with its JVM, for "
        "nginx-jvm): once started and answering (before any load), then at "
        "rest after the warm-up (%d s of wrk per route), before the "
        "throughput rounds. %s" % (st["warmup"], "nginx-jvm's JVMs ran with "
        "the jvm_options above." if st.get("jvm_options") else "JVMs run "
        "with default options: the heap is sized from the machine's memory."))
    add("")
    add("Idle connections, at the end of the run: %s keep-alive connections "
        "opened, one GET /hello each, then held open; (RSS with them - RSS "
        "before) / connections held, over the processes that hold them "
        "(nginx-jetty: nginx's own). A JVM server's idle connections are "
        "Java objects in a heap whose pages the load already made "
        "resident, so RSS shows little of them." % format(st["idle"], ","))
    add("")
    add("| server | started | largest worker | after warm-up | largest worker "
        "| idle conns held | resident before → with them "
        "| per idle connection |")
    add("|---|---|---|---|---|---|---|---|")
    for server in results["servers"]:
        m = results["memory"].get(server)
        if m is None:
            continue
        idle = m.get("idle") or {}
        per = idle.get("per_conn_bytes")
        held = ("n/a" if "held" not in idle else
                "%d%s" % (idle["held"], " (%d failed)" % idle["failed"]
                          if idle.get("failed") else ""))
        add("| %s | %s | %s | %s | %s | %s | %s | %s |"
            % (server, fmt_kb(m.get("start_kb")),
               fmt_kb(m.get("start_worker_kb")), fmt_kb(m.get("rest_kb")),
               fmt_kb(m.get("rest_worker_kb")), held,
               "n/a" if "after_kb" not in idle else "%s → %s" % (
                   fmt_kb(idle["before_kb"]), fmt_kb(idle["after_kb"])),
               "n/a" if per is None else "%.0f bytes" % per))
    add("")
