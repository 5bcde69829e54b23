"""The stop storm (issue 46): `bin/nginx-jvm run` started again and again,
each time stopped by a signal at a random moment of its life, on one core
beside a CPU hog of the test's own: as the launcher sets up, as the master
builds the class cache, as the workers' JVMs start, at the first request,
under load, during a reload.  Every cycle checks the time from the signal
to the end of every process of the launcher's session (at most 5 s for
INT and TERM; QUIT, the graceful stop, within the exit hooks' bound
jvm_exit_timeout on top), the launcher's status (0: a stop asked for is
a stop, in every phase), that nothing is left behind (processes, the
temporary prefix, a half-built cache entry), and that
every worker that was ready ran its exit hooks.

`make test` runs a short storm (STORM_CYCLES, default 8: one of each phase
and two at random, about 3 minutes); `make
stop-storm` runs 200 cycles and writes the distribution of stop times to
build/stop-storm/report.md (`python3 tests/test_stop_storm.py --cycles N`
does the same).
"""

import argparse
import os
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import CLJ_APPS, RING_JARS, ROOT, free_port  # noqa: E402

LAUNCHER = str(ROOT / "bin" / "nginx-jvm")
REPORT_DIR = ROOT / "build" / "stop-storm"
PHASES = ("launch", "cache", "jvm-start", "first-request", "load", "reload")
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT)
FAST_LIMIT = 5.0          # INT and TERM: everything ends within 5 s
EXIT_TIMEOUT = 5.0        # jvm_exit_timeout (docs/directives.md: default 5s)
QUIT_LIMIT = FAST_LIMIT + EXIT_TIMEOUT
READY = re.compile(rb"jvm: worker (\d+) ready")
WORKERS = 2


def session_pids(sid):
    """The processes of session `sid` (the launcher's: it leads its own)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        # fields[0] state, [1] ppid, [2] pgrp, [3] session
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(d))
    return pids


def default_signals():
    """The launcher starts as from a terminal or a service manager, with
    INT and QUIT at their default actions, even when the storm itself runs
    as a shell's background job (both ignored): a signal to a process that
    ignores it is lost, and the launcher's first milliseconds, before its
    "#!" line's env resets them, would lose the storm's earliest stops.
    test_launcher.py tests a launcher started with them ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def master_of(launcher):
    """nginx's master (the launcher's child once it runs nginx), or None."""
    try:
        with open("/proc/%d/task/%d/children" % (launcher, launcher)) as f:
            kids = f.read().split()
        for kid in kids:
            with open("/proc/%s/cmdline" % kid, "rb") as f:
                if f.read().startswith(b"nginx: master"):
                    return int(kid)
    except OSError:
        pass
    return None


class Hog:
    """A busy loop on `cpu`, the test's own process."""

    def __init__(self, cpu):
        # it ends with its parent, should the storm be killed
        self.proc = subprocess.Popen(
            ["taskset", "-c", str(cpu), sys.executable, "-c",
             "import os\np = os.getppid()\nwhile os.getppid() == p: pass"])

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class Load(threading.Thread):
    """Keep-alive clients asking for /x until told to stop."""

    def __init__(self, port, clients=4):
        super().__init__(daemon=True)
        self.port, self.clients, self.done = port, clients, threading.Event()
        self.answered = 0

    def run(self):
        socks = []
        for _ in range(self.clients):
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=2)
                socks.append(s)
            except OSError:
                pass
        req = b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n"
        while socks and not self.done.is_set():
            for s in list(socks):
                try:
                    s.sendall(req)
                    if s.recv(65536):
                        self.answered += 1
                    else:
                        socks.remove(s)
                except OSError:
                    socks.remove(s)
        for s in socks:
            s.close()


class Cycle:
    def __init__(self, phase, sig, to, cache, rnd, cpu):
        self.phase, self.sig, self.to, self.cache, self.rnd, self.cpu = \
            phase, sig, to, cache, rnd, cpu
        self.stderr = b""
        self.problems = []
        self.stop_time = None
        self.status = None
        self.ready_pids = set()

    def read_until(self, proc, pattern, count=1, timeout=180):
        """Reads the launcher's stderr until `pattern` matched `count` times."""
        end = time.monotonic() + timeout
        fd = proc.stderr.fileno()
        while len(re.findall(pattern, self.stderr)) < count:
            left = end - time.monotonic()
            if left <= 0:
                return False
            if select.select([fd], [], [], min(left, 0.5))[0]:
                data = os.read(fd, 65536)
                if not data:
                    return False
                self.stderr += data
        return True

    def run(self):
        port = free_port()
        hooks = tempfile.mktemp(prefix="hooks-", dir=str(self.cache.parent))
        cp = ":".join([str(CLJ_APPS)] + RING_JARS)
        # the launcher's temporary prefix in a directory of this cycle's
        tmp = Path(tempfile.mkdtemp(prefix="tmp-", dir=str(self.cache.parent)))
        tmp.chmod(0o755)
        env = dict(os.environ, TMPDIR=str(tmp))
        # every process of the launcher's on the hog's core
        proc = subprocess.Popen(
            ["taskset", "-c", str(self.cpu), LAUNCHER, "run", "--port", str(port),
             "--handler", "testapp.offloop/fast", "--classpath", cp,
             "--workers", str(WORKERS), "--cache", str(self.cache),
             "--http", "jvm_init testapp.leave/add-hook; "
                       "jvm_exit testapp.leave/leave;",
             "--jvm-option", "-Dtestapp.leave=" + hooks],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
            start_new_session=True, preexec_fn=default_signals)
        load = None
        try:
            reached = self.reach(proc, port)
            if self.phase == "load" and reached:
                load = Load(port)
                load.start()
                time.sleep(self.rnd.uniform(0.1, 1.0))
            # the workers ready when the signal goes (their hooks must run)
            self.ready_pids = set(int(p) for p in
                                  re.findall(rb"(\d+)#\d+: jvm: worker \d+ ready",
                                             self.stderr))
            target = proc.pid
            if self.to == "master":
                # as "nginx -s stop|quit" does: the master's pid file
                target = master_of(proc.pid) or proc.pid
            t0 = time.monotonic()
            os.kill(target, self.sig)
            limit = QUIT_LIMIT if self.sig == signal.SIGQUIT else FAST_LIMIT
            end = t0 + limit + 25
            while (proc.poll() is None or session_pids(proc.pid)) \
                    and time.monotonic() < end:
                time.sleep(0.01)
            self.stop_time = time.monotonic() - t0
            if proc.poll() is None or session_pids(proc.pid):
                self.problems.append(
                    "still running %.0f s after %s: %s" % (
                        self.stop_time, self.sig.name,
                        subprocess.run(["ps", "-o", "pid,ppid,stat,wchan:24,args",
                                        "-s", str(proc.pid)],
                                       stdout=subprocess.PIPE, text=True).stdout))
            elif self.stop_time > limit:
                self.problems.append("stopped in %.1f s, over %.0f s"
                                     % (self.stop_time, limit))
        finally:
            if load:
                load.done.set()
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            self.status = proc.wait()
            os.set_blocking(proc.stderr.fileno(), False)
            self.stderr += proc.stderr.read() or b""
            proc.stderr.close()
        self.check(tmp, hooks)
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            os.unlink(hooks)
        except FileNotFoundError:
            pass
        return self

    def reach(self, proc, port):
        """Waits for this cycle's phase, plus a random part of it."""
        r = self.rnd
        if self.phase == "launch":
            time.sleep(r.uniform(0, 1.5))
            return False
        if self.phase == "cache":
            # a new cache each time: the master's two build JVMs run
            self.read_until(proc, rb"building the class cache")
            time.sleep(r.uniform(0, 2.5))
            return False
        if self.phase == "jvm-start":
            self.read_until(proc, rb"start worker process")
            time.sleep(r.uniform(0, 1.0))
            return False
        ok = self.read_until(proc, READY, WORKERS)
        if not ok:
            self.problems.append("never ready")
            return False
        if self.phase == "first-request":
            t = threading.Thread(target=self.ask, args=(port,), daemon=True)
            t.start()
            time.sleep(r.uniform(0, 0.05))
        elif self.phase == "reload":
            os.kill(proc.pid, signal.SIGHUP)
            time.sleep(r.uniform(0, 3.0))
        return True

    @staticmethod
    def ask(port):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(b"GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                s.recv(65536)
        except OSError:
            pass

    def check(self, tmp, hooks):
        # a master signalled before its handlers are set (it still loads
        # its configuration) dies of the signal, as nginx does: the
        # launcher says so with nginx's status
        allowed = {0}
        if self.to == "master" and self.phase in ("launch", "cache"):
            allowed.add(128 + self.sig)
        if self.phase == "launch":
            # in its first milliseconds, before bash has set its traps, the
            # launcher dies of the signal: nothing of it exists yet (the
            # checks below say so), as for any program
            allowed.add(-self.sig)
        if self.status not in allowed:
            self.problems.append("launcher exit status %s, its stderr ends: %s" % (
                self.status, self.stderr[-600:].decode(errors="replace")))
        left = sorted(p.name for p in tmp.iterdir())
        if left:
            self.problems.append("left in $TMPDIR: %s" % left)
        if self.cache.is_dir():
            for entry in self.cache.iterdir():
                if entry.name != "jars" and entry.is_dir() \
                        and not (entry / "ok").exists():
                    self.problems.append("a half-built cache entry: %s"
                                         % sorted(x.name for x in entry.iterdir()))
        try:
            with open(hooks) as f:
                ran = set(f.read().splitlines())
        except FileNotFoundError:
            ran = set()
        for pid in sorted(self.ready_pids):
            for what in ("exit", "hook"):
                if "%s %d" % (what, pid) not in ran:
                    self.problems.append("worker %d did not run its %s" % (pid, what))
        bad = [l for l in self.stderr.decode(errors="replace").splitlines()
               if re.search(r"\[(alert|crit|error|emerg)\]", l)]
        if bad:
            self.problems.append("error log: %s" % bad[:5])


def storm(cycles, seed=None, cpu=0, progress=None):
    """Runs `cycles` cycles; returns them."""
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    seed = random.randrange(1 << 30) if seed is None else seed
    rnd = random.Random(seed)
    hog = Hog(cpu)
    done = []
    cache_root = Path(tempfile.mkdtemp(prefix="cache-", dir=str(REPORT_DIR)))
    # the workers' user (nobody, as root runs them) reads the cache and
    # writes the hooks' files
    cache_root.chmod(0o1777)
    warm = cache_root / "warm"
    try:
        for i in range(cycles):
            phase = PHASES[i % len(PHASES)] if i < len(PHASES) else rnd.choice(PHASES)
            sig = rnd.choice(SIGNALS)
            # the launcher (Ctrl-C, systemd, podman) or nginx's master
            # itself ("nginx -s stop", "nginx -s quit")
            to = rnd.choice(("launcher", "launcher", "master"))
            if phase == "cache":
                cache = cache_root / ("cold-%d" % i)
            else:
                cache = warm
            c = Cycle(phase, sig, to, cache, rnd, cpu).run()
            if phase == "cache":
                shutil.rmtree(cache, ignore_errors=True)
            done.append(c)
            if progress:
                progress(i, c)
    finally:
        hog.stop()
        shutil.rmtree(cache_root, ignore_errors=True)
    return seed, done


def report(seed, cycles):
    times = sorted(c.stop_time for c in cycles if c.stop_time is not None)

    def pct(p):
        return times[min(len(times) - 1, int(p * len(times)))] if times else 0

    lines = ["# Stop storm", "",
             "%d cycles (seed %d), every process on one core beside a busy "
             "loop; the time from the signal to the end of every process of "
             "the launcher's session." % (len(cycles), seed), "",
             "| phase | signal | cycles | median s | max s |",
             "| --- | --- | --- | --- | --- |"]
    for phase in PHASES:
        for sig in SIGNALS:
            t = sorted(c.stop_time for c in cycles
                       if c.phase == phase and c.sig == sig and c.stop_time is not None)
            if t:
                lines.append("| %s | %s | %d | %.2f | %.2f |"
                             % (phase, sig.name, len(t), t[len(t) // 2], t[-1]))
    lines += ["", "All: median %.2f s, p90 %.2f s, p99 %.2f s, max %.2f s."
              % (pct(0.5), pct(0.9), pct(0.99), times[-1] if times else 0), ""]
    bad = [c for c in cycles if c.problems]
    lines.append("Cycles with a problem: %d." % len(bad))
    for c in bad:
        lines.append("- %s %s to the %s: %s" % (c.phase, c.sig.name, c.to,
                                                "; ".join(c.problems)))
    return "\n".join(lines) + "\n"


def test_stop_storm():
    n = int(os.environ.get("STORM_CYCLES", "8"))
    seed, cycles = storm(n)
    text = report(seed, cycles)
    (REPORT_DIR / "report-short.md").write_text(text)
    assert len(cycles) == n
    assert all(c.stop_time is not None for c in cycles), text
    assert not [c for c in cycles if c.problems], text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--cpu", type=int, default=0)
    args = ap.parse_args()
    # a TERM (a time limit) ends the storm through its clean-up
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    def progress(i, c):
        print("%4d %-13s %-7s %-8s %6.2f s  %s" % (
            i, c.phase, c.sig.name, c.to, c.stop_time or -1,
            "; ".join(c.problems) or "ok"), flush=True)

    seed, cycles = storm(args.cycles, args.seed, args.cpu, progress)
    text = report(seed, cycles)
    (REPORT_DIR / "report.md").write_text(text)
    print(text)
    return 1 if any(c.problems for c in cycles) else 0


if __name__ == "__main__":
    sys.exit(main())
