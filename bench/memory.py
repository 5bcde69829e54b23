#!/usr/bin/env python3
"""Memory of the workers: proportional set size (PSS, from
/proc/PID/smaps_rollup: a page shared by k processes counts 1/k in each),
summed over all workers and divided by their number, after a warm-up.

For each app (tiny: clojure.core only; compojure: the example app) and
each worker count, starts `bin/nginx-jvm run`, waits for every worker,
warms up with wrk (-c50 for --warmup seconds, across all workers), waits
6 seconds (--settle), then reads every worker's PSS and RSS.

A file's pages (libjvm.so, the JDK's CDS archive) count 1/k in the PSS of
each of the k processes mapping them, other JVMs on the machine included:
on a machine running other JDK 17 JVMs, JDK 17's PSS is lower than alone.
"alone" estimates it as if only these workers mapped them: private pages
plus shared ones divided by the workers.

  bench/memory.py [--workers 2,8] [--apps tiny,compojure] [--warmup 5]
                  [--jvm-option OPT ...] [--no-cache] [--detail DIR]
                  [--settle 6]

--detail DIR attributes the memory: each worker's PSS by mapping, from
/proc/PID/smaps (the CDS archives, libjvm.so, [heap]; the Java heap,
metaspace, code cache, malloc arenas and threads' stacks are [anon]) in
DIR/APP-WORKERS-PID.smaps; with --jvm-option
-XX:NativeMemoryTracking=summary --jvm-option -XX:-DisableAttachMechanism
also the JVM's own account, `jcmd PID VM.native_memory summary`, in .nmt
(NMT costs memory itself: those runs' PSS is not the plain figure).
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from start import APPS, TOP, free_port  # noqa: E402


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(d))
        except OSError:
            pass
    return out


def workers_of(launcher):
    pids = []
    for master in children(launcher):
        for pid in children(master):
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    if f.read().startswith(b"nginx: worker process"):
                        pids.append(pid)
            except OSError:
                pass
    return pids


def rollup(pid):
    kb = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[2] == "kB":
                kb[parts[0].rstrip(":")] = int(parts[1])
    return kb


def smaps_by_mapping(pid):
    """PSS in kB by mapping: a file's path, or [heap], [stack], [anon]
    (the Java heap, metaspace, code cache, malloc arenas and threads'
    stacks are anonymous: NMT tells them apart), and the anonymous
    mappings of 512 kB PSS or more apart: (address, size, PSS) in kB."""
    out = {}
    anon = []
    name = None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and ":" not in parts[0]:
                name = parts[5] if len(parts) > 5 else "[anon]"
                address = parts[0]
            elif parts[0] == "Size:":
                size = int(parts[1])
            elif parts[0] == "Pss:":
                out[name] = out.get(name, 0) + int(parts[1])
                if name == "[anon]" and int(parts[1]) >= 512:
                    anon.append((address, size, int(parts[1])))
    return out, anon


def detail(dirname, app, workers, pids, env, nmt):
    os.makedirs(dirname, exist_ok=True)
    java_home = env.get("JAVA_HOME")
    jcmd = os.path.join(java_home, "bin/jcmd") if java_home else "jcmd"
    for pid in pids:
        base = os.path.join(dirname, "%s-%d-%d" % (app, workers, pid))
        with open(base + ".smaps", "w") as f:
            by_name, anon = smaps_by_mapping(pid)
            for name, kb in sorted(by_name.items(), key=lambda r: -r[1]):
                f.write("%8.1f MB  %s\n" % (kb / 1024, name))
            f.write("\nanonymous mappings of 0.5 MB PSS or more:\n")
            for address, size, kb in anon:
                f.write("%8.1f MB of %8.1f MB  %s\n"
                        % (kb / 1024, size / 1024, address))
        if not nmt:
            continue
        with open(base + ".nmt", "wb") as f:
            for what in (["VM.native_memory", "summary"], ["GC.heap_info"]):
                f.write(subprocess.run(
                    [jcmd, str(pid)] + what, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT).stdout)


def measure(app, workers, options, warmup, env, details=None, settle=6):
    handler, classpath, path = APPS[app]
    port = free_port()
    cmd = [os.path.join(TOP, "bin/nginx-jvm"), "run", "--handler", handler,
           "--classpath", classpath, "--port", str(port),
           "--workers", str(workers)]
    for o in options:
        cmd += ["--jvm-option", o]
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    try:
        url = "http://127.0.0.1:%d%s" % (port, path)
        # a cold class cache builds first: minutes on a loaded machine
        deadline = time.monotonic() + 300
        while True:
            try:
                urllib.request.urlopen(url, timeout=5).read()
                if len(workers_of(proc.pid)) == workers:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                log.seek(0)
                tail = log.read().decode(errors="replace").splitlines()[-15:]
                raise SystemExit("%s: not serving (exit status %s):\n%s"
                                 % (app, proc.poll(), "\n".join(tail)))
            time.sleep(0.1)
        # every worker ready: the last to start answers too
        time.sleep(1 + 0.5 * workers)
        if warmup:
            subprocess.run(["wrk", "-t2", "-c50", "-d%ds" % warmup, url],
                           stdout=subprocess.DEVNULL, check=True)
        # the JVM gives freed native memory back every 5 s; on a loaded
        # machine C2 may still be compiling (and holding arenas) for longer
        time.sleep(settle)
        pids = workers_of(proc.pid)
        stats = [rollup(p) for p in pids]
        if details:
            detail(details, app, workers, pids, env,
                   any("NativeMemoryTracking" in o for o in options))
        return {
            "workers": len(pids),
            "pss": sum(s["Pss"] for s in stats) / len(pids) / 1024,
            "rss": sum(s["Rss"] for s in stats) / len(pids) / 1024,
            "anon": sum(s.get("Pss_Anon", 0) for s in stats) / len(pids) / 1024,
            "file": sum(s.get("Pss_File", 0) for s in stats) / len(pids) / 1024,
            "alone": sum(s["Private_Clean"] + s["Private_Dirty"]
                         + (s["Shared_Clean"] + s["Shared_Dirty"]) / len(pids)
                         for s in stats) / len(pids) / 1024,
        }
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", default="2,8")
    ap.add_argument("--apps", default="tiny,compojure")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--jvm-option", action="append", default=[])
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--detail", metavar="DIR")
    ap.add_argument("--settle", type=int, default=6)
    args = ap.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is needed (scripts/install-deps.sh)")
    env = dict(os.environ)
    if args.no_cache:
        env["NGINX_JVM_CACHE"] = "off"
    print("per worker, after %d s of wrk -c50 (MB): %s, %s"
          % (args.warmup, os.environ.get("JAVA_HOME", "default JDK"),
             "no cache" if args.no_cache else "cache"))
    print("%-10s %7s %8s %8s %8s %8s %8s" % ("app", "workers", "PSS", "anon",
                                             "file", "RSS", "alone"))
    for app in args.apps.split(","):
        for n in [int(w) for w in args.workers.split(",")]:
            m = measure(app, n, args.jvm_option, args.warmup, env,
                        args.detail, args.settle)
            print("%-10s %7d %8.1f %8.1f %8.1f %8.1f %8.1f" % (
                app, m["workers"], m["pss"], m["anon"], m["file"], m["rss"],
                m["alone"]))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
