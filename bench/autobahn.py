#!/usr/bin/env python3
"""The whole Autobahn suite (kosoku's port of its fuzzing client: cases 1
to 7, 9, 10, 12 and 13; Autobahn has no 8 or 11) against nginx-jvm's echo
listener, in every mode, one nginx per mode.

    bench/autobahn.py [--modes loop,pool,virtual,coloop]
                      [--groups 1,2,3,4,5,6,7,9,10,12,13] [--resume]
                      [--parallel 4] [--out FILE]

Each group (the cases N.*) is one run of kosoku, its results kept in
build/autobahn/MODE-N.json; --resume takes the groups already kept
instead of running them again, so a long run can be done in parts (or
go on after it was stopped); --no-run only reports what is kept. The
report covers every mode and group asked for, and says which were not
run.

The listener is testapp.ws/pure-echo with the limits raised for the run:
jvm_websocket_max_message 32m (9.1.6 and 9.2.6 send 16 MB messages; the
default is 1m) and jvm_websocket_deflate on (12 and 13 negotiate
permessage-deflate; the other cases offer no extension, so they run
uncompressed as before).  make test runs part of this (tests/
test_autobahn.py: 1-10 in every mode, 12 and 13 in loop and pool).

Per mode the table counts each case's behaviour (OK, NON-STRICT,
INFORMATIONAL, UNIMPLEMENTED, FAILED) and, apart, the cases whose closing
handshake (behaviorClose) was not OK, NON-STRICT or INFORMATIONAL; the
cases not passing are listed.  A mode whose JDK is missing (virtual: 21+,
coloop: harness.COLOOP_LIBJVM) is reported as skipped.  The exit status
is 1 when any case failed or an nginx logged an error.
"""
import argparse
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOP = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TOP / "tests"))
from harness import COLOOP_LIBJVM, Nginx, jdk21_libjvm  # noqa: E402

KOSOKU = [sys.executable, "-c",
          "import sys; from kosoku._cli import main; sys.exit(main())"]

LOCATIONS = """
        jvm_websocket_max_message 32m;
        jvm_websocket_deflate on;
        location / { jvm_content testapp.ws/pure-echo; }
"""

PASSING = {"OK", "NON-STRICT", "INFORMATIONAL"}
KINDS = ("OK", "NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED", "FAILED")
KEPT = TOP / "build" / "autobahn"
BAD_LOG = re.compile(r"\[(alert|crit|error|emerg)\]")


def skipped(mode):
    if mode == "virtual" and jdk21_libjvm() is None:
        return "no JDK 21 or newer"
    if mode == "coloop" and not os.path.exists(COLOOP_LIBJVM):
        return "no " + COLOOP_LIBJVM
    return None


def run_group(ng, group, parallel):
    """({case: (behavior, behaviorClose)}, seconds) of the cases group.*."""
    with tempfile.TemporaryDirectory(prefix="autobahn-") as out:
        began = time.monotonic()
        run = subprocess.run(
            KOSOKU + ["127.0.0.1:%d" % ng.port, "-o", out, "-p", str(parallel),
                      "-i", "%s.*" % group],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=3600)
        seconds = time.monotonic() - began
        index = next(Path(out).rglob("index.json"), None)
        if index is None:
            raise SystemExit("%s.*: kosoku wrote no report:\n%s"
                             % (group, run.stdout[-3000:]))
        results = {}
        for agent in json.loads(index.read_text()).values():
            for case, r in agent.items():
                results[case] = (r.get("behavior"), r.get("behaviorClose"))
    return results, seconds


def run_mode(mode, groups, parallel, resume):
    """{group: {cases, seconds, bad}}: what was kept, and the rest run
    now, on one nginx (its error log's bad lines go with each group)."""
    kept = {g: KEPT / ("%s-%s.json" % (mode, g)) for g in groups}
    done = {g: json.loads(f.read_text()) for g, f in kept.items()
            if resume and f.exists()}
    todo = [g for g in groups if g not in done]
    if not todo:
        return done
    with Nginx(LOCATIONS, mode=mode) as ng:
        for g in todo:
            print("autobahn: %s, cases %s.* ..." % (mode, g), flush=True)
            since = os.path.getsize(ng.log)
            results, seconds = run_group(ng, g, parallel)
            with open(ng.log, errors="replace") as f:
                f.seek(since)
                bad = [line.rstrip() for line in f if BAD_LOG.search(line)]
            done[g] = {"results": results, "seconds": seconds, "bad": bad,
                       "parallel": parallel}
            kept[g].write_text(json.dumps(done[g]))
            print("autobahn: %s %s.*: %d cases, %.0f s" % (
                mode, g, len(results), seconds), flush=True)
    return done


def case_key(case):
    return tuple(int(p) for p in case.split("."))


def section(mode, results, seconds, bad):
    counts = {k: 0 for k in KINDS}
    for b, _ in results.values():
        counts[b if b in counts else "FAILED"] += 1
    close_bad = sorted((c for c, (_, bc) in results.items()
                        if bc not in PASSING), key=case_key)
    not_passing = sorted((c for c, (b, _) in results.items()
                          if b not in PASSING), key=case_key)
    row = "| %s | %d | %s | %d | %.0f s |" % (
        mode, len(results), " | ".join(str(counts[k]) for k in KINDS),
        len(close_bad), seconds)
    notes = []
    for c in not_passing:
        notes.append("- %s %s: %s (close: %s)"
                     % (mode, c, results[c][0], results[c][1]))
    for c in close_bad:
        if c not in not_passing:
            notes.append("- %s %s: closing handshake %s"
                         % (mode, c, results[c][1]))
    for kind in ("NON-STRICT", "INFORMATIONAL"):
        these = sorted((c for c, (b, _) in results.items() if b == kind),
                       key=case_key)
        if these:
            notes.append("- %s %s (passing): %s" % (mode, kind,
                                                   ", ".join(these)))
    for line in bad[:20]:
        notes.append("- %s error log: `%s`" % (mode, line))
    failed = bool(not_passing) or bool(close_bad) or bool(bad)
    return row, notes, failed


def main():
    # a stop (timeout, kill) still stops nginx: the with blocks unwind
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modes", default="loop,pool,virtual,coloop")
    ap.add_argument("--groups", default="1,2,3,4,5,6,7,9,10,12,13",
                    help="case groups, N for the cases N.* (default: all)")
    ap.add_argument("--resume", action="store_true",
                    help="take the groups kept by an earlier run")
    ap.add_argument("--no-run", action="store_true",
                    help="run nothing: report the groups kept")
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--out", default=str(
        TOP / "bench" / "results"
        / ("%s-autobahn.md" % datetime.date.today().isoformat())))
    args = ap.parse_args()
    groups = args.groups.split(",")
    KEPT.mkdir(parents=True, exist_ok=True)
    rows, notes, failed = [], [], False
    for mode in args.modes.split(","):
        why = skipped(mode)
        if why:
            rows.append("| %s | skipped: %s |%s" % (mode, why, " |" * 7))
            continue
        if args.no_run:
            done = {g: json.loads(f.read_text()) for g in groups
                    for f in [KEPT / ("%s-%s.json" % (mode, g))] if f.exists()}
        else:
            done = run_mode(mode, groups, args.parallel, args.resume)
        missing = [g for g in groups if g not in done]
        if missing:
            failed = True
            notes.append("- %s: groups not run: %s" % (mode, ", ".join(missing)))
        if not done:
            rows.append("| %s | not run |%s" % (mode, " |" * 7))
            continue
        results, seconds, bad = {}, 0.0, []
        for g in done:
            results.update({c: tuple(b) for c, b
                            in done[g]["results"].items()})
            seconds += done[g]["seconds"]
            bad += done[g]["bad"]
        row, more, bad_mode = section(mode, results, seconds, bad)
        print(row, flush=True)
        rows.append(row)
        notes += more
        failed |= bad_mode
    text = [
        "# Autobahn, the whole suite, every mode (%s)"
        % datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC"),
        "",
        "`make autobahn` (bench/autobahn.py): kosoku %s's fuzzing client, "
        "case groups %s (one kosoku run each, %d cases in parallel), "
        "against `testapp.ws/pure-echo` with `jvm_websocket_max_message "
        "32m` and `jvm_websocket_deflate on`; one worker, one nginx per "
        "mode; %d cores. Time: the sum of the groups' runs."
        % (kosoku_version(), ", ".join(groups), args.parallel,
           os.cpu_count()),
        "",
        "| mode | cases | " + " | ".join(KINDS)
        + " | close not clean | time |",
        "|---|---:|" + "---:|" * len(KINDS) + "---:|---:|",
    ] + rows + [""]
    text += (["Not OK (NON-STRICT and INFORMATIONAL pass: Autobahn's "
              "words for a behaviour the RFC allows, and a case that only "
              "records what happened), not run, an unclean close, error-log "
              "lines:", ""] + notes) if notes else [
        "Every case OK, every close clean, no error logged."]
    Path(args.out).write_text("\n".join(text) + "\n")
    print("autobahn: wrote %s%s" % (args.out, " (FAIL)" if failed else ""))
    return 1 if failed else 0


def kosoku_version():
    try:
        from importlib.metadata import version
        return version("kosoku")
    except Exception:  # noqa: BLE001 - a report without it is still a report
        return "?"


if __name__ == "__main__":
    sys.exit(main())
