"""Reloads without a stall: the old workers serve until the new ones have
their JVMs ready (bounded by jvm_reload_timeout), so a reload under load
is not a pause, whatever the application's start costs."""

import contextlib
import http.client
import os
import re
import threading
import time

import pytest

from harness import Nginx, alive, children, wait_for

LOCATIONS = """
        location /pid { jvm_content testapp.ring/pid; }
"""


# How long the old workers wait for the new ones (jvm_reload_timeout), and
# the tests with them: where the bound is not what a test is about, long
# enough for the slowest machine (two JVM starts one after the other took
# over 60 s on a machine held to a share of one busy core); a test waits
# for the state, not for this.
READY_WAIT = 600


def config(n, timeout="%ds" % READY_WAIT, drain=None):
    return ("    jvm_init testapp.init/slow-start;\n"
            "    jvm_reload_timeout %s;\n"
            "    jvm_options -Dtestapp.start-ms=%s/start-ms;\n" % (timeout, n)
            + ("    jvm_reload_drain %s;\n" % drain if drain else ""))


def add_to_http(n, directives):
    """Puts `directives` at the top of n's http block."""
    with open(n.conf) as f:
        text = f.read()
    with open(n.conf, "w") as f:
        f.write(text.replace("http {", "http {\n" + directives, 1))


def next_start(n, ms):
    """Makes the next workers' JVM start take `ms` (testapp.init's
    slow-start; "hold": until the file says otherwise); returns the
    workers running now."""
    with open(n.path("start-ms.tmp"), "w") as f:
        f.write(str(ms))
    os.replace(n.path("start-ms.tmp"), n.path("start-ms"))   # never empty
    return set(n.worker_pids())


def log_time(line):
    """An error log line's time, in whole seconds since the epoch."""
    return time.mktime(time.strptime(line[:19], "%Y/%m/%d %H:%M:%S"))


def gone(pids, seconds):
    """True once none of `pids` runs, within `seconds`."""
    return wait_for(lambda: not any(alive(p) for p in pids), seconds)


def listening_inodes(port):
    """The socket inodes listening on 127.0.0.1:port (/proc/net/tcp)."""
    out = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1].endswith(":%04X" % port) and fields[3] == "0A":
                out.add(fields[9])
    return out


def holds(pid, inodes):
    """True while the process has one of these sockets open."""
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            return True
    return False


def assert_all_ok(results):
    failed = [(i, r) for i, r in enumerate(results) if not r[1]]
    assert results and not failed, "%d of %d failed: %s" % (
        len(failed), len(results), failed[:5])


def load(port, stop, results):
    """Requests on new connections until `stop` is set, 5 ms apart: (latency,
    ok, what failed, when) each.  Back to back they would take a core; on a
    machine of one core the old workers would then leave the new ones'
    start no CPU, and it would run out jvm_reload_timeout (as documented at
    saturation)."""
    while not stop.is_set():
        time.sleep(0.005)
        start = time.monotonic()
        what = None
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            c.request("GET", "/pid")
            r = c.getresponse()
            ok = r.status == 200
            what = r.status
            c.close()
        except (OSError, http.client.HTTPException) as e:
            ok = False
            what = repr(e)
        results.append((time.monotonic() - start, ok, what, start))


@contextlib.contextmanager
def under_load(n):
    """Clients keep coming (load()) while the block runs, from when 20 have
    been answered: load()'s results, complete after the block."""
    results = []
    stop = threading.Event()
    t = threading.Thread(target=load, args=(n.port, stop, results))
    t.start()
    try:
        assert wait_for(lambda: len(results) >= 20, 60)
        yield results
    finally:
        stop.set()
        t.join()


def reload_under_load(n, start_ms):
    """A reload while clients keep coming, until the old workers have quit
    (the new ones ready): the old workers and load()'s results."""
    old = next_start(n, start_ms)
    with under_load(n) as results:
        assert n.control("reload").returncode == 0
        assert gone(old, READY_WAIT), n.log_text()
    return old, results


def started(mode, drain=None, workers=2):
    n = Nginx(LOCATIONS, workers=workers, mode=mode)
    add_to_http(n, config(n.prefix, drain=drain))
    return n


@pytest.fixture
def ng(tmp_path, mode):
    with started(mode) as n:
        yield n


def test_reload_keeps_serving_while_the_new_jvms_start(ng):
    """New workers take 2.5 s to start; the old ones serve meanwhile."""
    old, results = reload_under_load(ng, 2500)
    assert_all_ok(results)
    worst = max(r[0] for r in results)
    assert worst < 1.0, "a request waited %.2f s: nobody accepted: %s" % (
        worst, [r for r in results if r[0] >= 1.0][:5])
    assert ng.log_lines(r"jvm: reload: serving until the new workers are ready")
    assert ng.log_lines(r"jvm: reload: the new workers are ready")


def test_new_workers_never_ready_old_ones_quit_by_the_bound(tmp_path, mode):
    n = Nginx(LOCATIONS, workers=1, mode=mode,
              startup_allow=[])
    add_to_http(n, config(n.prefix, "1s"))
    with n:
        old = next_start(n, 30000)
        start = time.monotonic()
        assert n.control("reload").returncode == 0
        # the bound counts from the quit the old worker takes (once the
        # master's trial start is done), which it says
        assert n.wait_log(r"serving until the new workers are ready", 0,
                          READY_WAIT)
        waiting = time.monotonic()
        assert gone(old, 60)
        assert time.monotonic() - start > 0.8
        took = time.monotonic() - waiting
        assert took < 10, took
        assert n.log_lines(r"\[warn\].*jvm: reload: 0 of 1 new workers ready "
                           r"after jvm_reload_timeout; quitting all the same")


def test_quit_during_a_reload_does_not_wait_for_the_new_workers(tmp_path,
                                                              mode):
    """A QUIT while the old workers wait for new ones that take 5 s to
    start (jvm_reload_timeout 60s): the new workers leave (the first once
    its JVM is up: a start is not cut short, docs/internals.md), and the
    old ones leave with them, not at the timeout as they did (issue 46)."""
    n = Nginx(LOCATIONS, workers=2, mode=mode, startup_allow=[])
    add_to_http(n, config(n.prefix, "60s"))
    with n:
        old = next_start(n, 5000)
        assert n.control("reload").returncode == 0
        assert n.wait_log(r"serving until the new workers are ready", 0,
                          READY_WAIT)
        start = time.monotonic()
        assert n.control("quit").returncode == 0
        # the second new worker, waiting for its turn, leaves at once and
        # says so; the old ones, waiting for it, leave with it
        assert gone(old, 20)
        assert n.log_lines(r"jvm: reload: the new workers were told to "
                           r"leave: quitting"), n.log_text()
        assert wait_for(lambda: n.proc.poll() is not None, 60)
        took = time.monotonic() - start
        assert took < 40, took          # the timeout's 60 s, before


def test_plain_quit_does_not_wait(ng):
    old = set(ng.worker_pids())
    start = time.monotonic()
    assert ng.control("quit").returncode == 0
    assert wait_for(lambda: ng.proc.poll() is not None, 60)
    assert time.monotonic() - start < 5
    assert not ng.log_lines(r"serving until the new workers")
    assert not any(alive(p) for p in old)


# jvm_reload_drain: once the new workers are ready, an old one stops
# accepting and closes its keep-alive connections one by one, each right
# after a response that says "Connection: close", spread over the drain.

def keepalive_clients(port, count, stop, results):
    """`count` keep-alive connections, a request on each every 20 ms until
    `stop` is set: per connection, (time, worker pid, Connection header)
    of each answer, or (time, None, error) for a request that failed."""
    conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=10)
             for _ in range(count)]
    for _ in conns:
        results.append([])
    while not stop.is_set():
        for c, out in zip(conns, results):
            try:
                c.request("GET", "/pid")
                r = c.getresponse()
                body = r.read()
                out.append((time.monotonic(), int(body) if r.status == 200
                            else None, r.getheader("Connection")))
            except (OSError, http.client.HTTPException) as e:
                out.append((time.monotonic(), None, repr(e)))
                c.close()
        time.sleep(0.02)
    for c in conns:
        c.close()


def test_drain_hands_keepalive_connections_over_one_by_one(mode):
    n = started(mode, drain="3s")
    # the clients run until the new workers are ready, seconds on a slow
    # machine: nginx's own close after keepalive_requests is not the drain's
    add_to_http(n, "    keepalive_requests 1000000;\n")
    with n:
        old = next_start(n, 0)
        results = []
        stop = threading.Event()
        t = threading.Thread(target=keepalive_clients,
                             args=(n.port, 20, stop, results))
        t.start()
        try:
            # every connection served before the reload
            assert wait_for(lambda: len(results) == 20
                            and all(results), 30)
            assert n.control("reload").returncode == 0
            # the clients go on until the old workers have quit (the new
            # ones started, the drain over) and every connection has had
            # an answer from a new worker
            assert gone(old, READY_WAIT), n.log_text()
            assert wait_for(lambda: all(
                out[-1][1] is not None and out[-1][1] not in old
                for out in results), 30), [out[-3:] for out in results]
        finally:
            stop.set()
            t.join()
        failed = [a for out in results for a in out if a[1] is None]
        assert not failed, failed[:5]
        closes = []
        for out in results:
            pids = [pid for _, pid, _ in out]
            # old workers first, new ones after: each connection moves once
            first_new = next(i for i, p in enumerate(pids) if p not in old)
            assert all(p in old for p in pids[:first_new])
            assert not any(p in old for p in pids[first_new:])
            # and only right after an answer that said so
            last_old = out[first_new - 1]
            assert last_old[2] == "close", out[first_new - 2:first_new + 1]
            assert all(h != "close" for _, _, h in out[:first_new - 1])
            closes.append(last_old[0])
        # spread over the drain, not all at once
        assert max(closes) - min(closes) > 1.0, sorted(closes)
        assert max(closes) - min(closes) < 4.5, sorted(closes)
        assert n.log_lines(r"jvm: reload: handing the connections over to "
                           r"the new workers \(jvm_reload_drain 3000 ms\)")
        assert n.log_lines(r"jvm: reload: connections handed over, 0 left")


def test_drain_stops_accepting_and_ends_with_idle_connections(mode):
    """During the drain a new connection goes to a new worker; a
    connection idle all along is closed when the drain ends."""
    with started(mode, drain="3s") as n:
        old = next_start(n, 0)
        idle = http.client.HTTPConnection("127.0.0.1", n.port, timeout=10)
        idle.request("GET", "/pid")
        holder = int(idle.getresponse().read())
        assert holder in old
        assert n.control("reload").returncode == 0
        # each old worker stops accepting as it sees the new ones ready (a
        # poll of 50 ms), right after it says so: every one of them
        assert wait_for(lambda: len(n.log_lines(r"handing the connections "
                                                r"over")) >= len(old),
                        READY_WAIT)
        start = time.monotonic()                # the drain is under way
        listening = listening_inodes(n.port)
        assert listening
        assert wait_for(lambda: not any(holds(p, listening) for p in old),
                        60), "an old worker still has the listening socket"
        for _ in range(10):
            c = http.client.HTTPConnection("127.0.0.1", n.port, timeout=10)
            c.request("GET", "/pid")
            assert int(c.getresponse().read()) not in old
            c.close()
        # the worker with a client drains for the drain's 3 s (one without
        # may have quit at once), then quits with the client still there
        assert gone(old, 60)
        assert time.monotonic() - start < 12    # the drain's 3 s, and exit
        # The drain's length as the holder saw it, from its own log lines
        # (to the second): the test's clock cannot say when it began, as
        # on a slow machine the last old worker's line can come seconds
        # after the holder's.
        began = n.log_lines(r"%d#\d+: jvm: reload: handing the connections "
                            r"over" % holder)
        ended = n.log_lines(r"%d#\d+: jvm: reload: connections handed over, "
                            r"1 left" % holder)
        assert began and ended
        drained = log_time(ended[0]) - log_time(began[0])
        assert 2 <= drained <= 10, drained
        idle.close()


def test_drain_ends_at_once_without_clients(mode):
    with started(mode, drain="30s") as n:
        old = next_start(n, 0)
        assert n.control("reload").returncode == 0
        assert n.wait_log(r"handing the connections over", 0, READY_WAIT)
        start = time.monotonic()                # the drain is under way
        assert gone(old, 60)
        assert time.monotonic() - start < 15    # not the drain's 30 s
        assert n.log_lines(r"connections handed over, 0 left")


def test_drain_off_quits_as_nginx_does(mode):
    with started(mode, drain="0") as n:
        old = next_start(n, 0)
        idle = http.client.HTTPConnection("127.0.0.1", n.port, timeout=10)
        idle.request("GET", "/pid")
        idle.getresponse().read()
        assert n.control("reload").returncode == 0
        assert gone(old, READY_WAIT)
        assert n.log_lines(r"jvm: reload: the new workers are ready")
        assert not n.log_lines(r"handing the connections over")
        idle.close()


def test_two_reloads_in_a_row_a_superseded_worker_starts_no_jvm(mode):
    """A reload while the last one's workers are still starting: a worker
    whose turn comes after the newer configuration starts no JVM and quits;
    the first workers serve throughout, until the newest are ready."""
    with started(mode) as n:
        first = next_start(n, 2000)
        with under_load(n) as results:
            assert n.control("reload").returncode == 0
            # the first reload's first worker is starting (its 2 s hold
            # ahead of it), the second waits for its turn
            assert n.wait_log(r"jvm: reload: serving until the new workers",
                              0, READY_WAIT)
            assert n.control("reload").returncode == 0
            # the first workers serve until the newest are ready
            assert gone(first, READY_WAIT), n.log_text()
        assert_all_ok(results)
        assert n.log_lines(r"jvm: reload: a newer configuration came before "
                           r"this worker's start: no JVM, quitting")
        now = set(n.worker_pids())
        c = http.client.HTTPConnection("127.0.0.1", n.port, timeout=10)
        for _ in range(6):
            c.request("GET", "/pid")
            assert int(c.getresponse().read()) in now
        c.close()


SCHED_BATCH, SCHED_IDLE = 3, 5


def threads(pid):
    """[(tid, name)] of a process; none once it has ended (the master's
    trial start of a reload's JVM is a child too, and exits)."""
    out = []
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                out.append((tid, f.read().strip()))
        except OSError:
            pass
    return out


def thread_stat(pid, tid):
    """(nice, scheduling policy) of a thread (stat fields 19 and 41)."""
    with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
        stat = f.read().rsplit(")", 1)[1].split()
    return int(stat[16]), int(stat[38])


def policy(pid, tid):
    return thread_stat(pid, tid)[1]


def thread_nice(pid):
    """{thread name: set of nice values, "idle" for a SCHED_IDLE thread}
    of a process (comm: 15 characters, "C2 CompilerThre")."""
    out = {}
    for tid, name in threads(pid):
        try:
            nice, pol = thread_stat(pid, tid)
        except OSError:
            continue
        out.setdefault(name.rstrip("0123456789")[:11], set()).add(
            "idle" if pol == SCHED_IDLE else nice)
    return out


IDLE_START = (r"\[notice\] (\d+)#\d+: jvm: reload: the JVM starts under "
              r"SCHED_IDLE, for (\d+) ms at most \(the last start took "
              r"(\d+) ms\)")
IDLE_PASSED = r"\[notice\] %d#\d+: jvm: reload: the start under SCHED_IDLE " \
              r"passed %d ms: on at nice 10 until ready"


def compilers(t):
    return {k: v for k, v in t.items()
            if k.startswith(("C1 Compiler", "C2 Compiler"))}


def others(t):
    return {k: v for k, v in t.items()
            if not k.startswith(("C1 Compiler", "C2 Compiler"))}


def starting_policies(pid):
    """{(tid, name): policy} of a starting worker's threads but the one that
    ends its SCHED_IDLE (made before it) and those that make themselves
    SCHED_BATCH (test_offloop.py), checked below.

    Each thread's policy is read before its name.  A thread the JVM starts
    has its creator's name ("nginx", the main thread's) until it names
    itself, before it runs any Java code; a handler thread then makes
    itself SCHED_BATCH (Natives.batch(), the first thing its run() does):
    the two come soon after one another, in that order.  Read the other way
    round (every name, then every policy), a pool thread (pool) or an
    abort thread (every mode, prestarted by Worker.configure) that named
    itself in between showed as ('nginx', SCHED_BATCH): the
    `{('8536', 'nginx'): 3}` of issue 46, where the start under SCHED_IDLE
    reached Worker.configure within its limit.  A policy read first, the
    name read after it is the one the thread had when it chose it."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            pol = policy(pid, tid)
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                name = f.read().strip()
        except OSError:
            continue                        # ended meanwhile
        # (names as the kernel keeps them: 15 characters; the JDK's
        # VirtualThread-unparker is made by a carrier, and inherits its
        # SCHED_BATCH)
        if name.startswith(("jvm-reload-idle", "nginx-jvm-pool",
                            "nginx-jvm-abort", "nginx-jvm-carri",
                            "VirtualThread-u")):
            continue
        out[(tid, name)] = pol
    return out


@pytest.mark.parametrize("nice", [None, "0"])
def test_a_reloads_jvm_starts_at_a_lower_priority(mode, nice):
    """jvm_reload_nice: a new worker that may lower a nice value again (these
    run as root) starts its JVM under SCHED_IDLE, every thread; past its
    limit (twice the first start's time, at least 5 s), a start still
    under way goes on at nice +10, every thread; once ready, all but its
    C1/C2 compiler threads return to nice 0 and SCHED_OTHER, and those to
    nice +10 (the default), where they stay; the first start's workers,
    and jvm_reload_nice 0, leave them alone."""
    n = started(mode)
    if nice:
        add_to_http(n, "    jvm_reload_nice %s;\n" % nice)
    with n:
        assert "user root;" in open(n.conf).read()
        first = next_start(n, 0)
        for pid in first:
            t = thread_nice(pid)
            assert t["C2 Compiler"] == {0}, t
            assert all(v == {0} for v in t.values()), t
        # the new JVMs' start held in the application's loading until the
        # test has seen what it needs
        next_start(n, "hold")
        since = n.log_size()
        assert n.control("reload").returncode == 0
        want = 0 if nice == "0" else 10

        if nice == "0":
            def starting():
                # titled "worker process" once started; the master's trial
                # start, also a child, is at nice 0 too
                return set(children(n.master_pid)) - first

            assert wait_for(lambda: any("C2 Compiler" in thread_nice(p)
                                        for p in starting()), READY_WAIT)
            assert all(v == {0} for p in starting()
                       for v in thread_nice(p).values())
            assert not n.log_lines(r"SCHED_IDLE", since)
        else:
            # the first new worker says so, with its limit, as it starts
            line = n.wait_log(IDLE_START, since, READY_WAIT)
            assert line, n.log_text(since)
            pid, limit, last = map(int, re.search(IDLE_START,
                                                  line[0]).groups())
            assert limit == min(30000, max(5000, 2 * last)), line
            passed = IDLE_PASSED % (pid, limit)
            idle_seen = 0
            # until the limit passes (the log says so before the threads
            # move), every thread under SCHED_IDLE but the one that ends it
            deadline = time.monotonic() + limit / 1000 + 60
            while not n.log_lines(passed, since):
                t = starting_policies(pid)
                if n.log_lines(passed, since):
                    break
                assert all(v == SCHED_IDLE for v in t.values()), \
                    {k: v for k, v in t.items() if v != SCHED_IDLE}
                idle_seen += 1
                assert time.monotonic() < deadline, n.log_text(since)
                time.sleep(0.05)
            assert idle_seen, "it left SCHED_IDLE before the test saw it"
            # past its limit a start still under way is no longer SCHED_IDLE
            # (with no idle CPU it would barely move): every thread at +10
            assert wait_for(lambda: all(v == {want} for v in
                                        thread_nice(pid).values()), 60), \
                thread_nice(pid)
        next_start(n, 0)                        # the start goes on
        assert gone(first, READY_WAIT), n.log_text(since)
        assert wait_for(lambda: len(n.worker_pids()) == 2, 60)
        # the compilers once they sleep, or 10 s after ready at the most
        # (the worker's 100 ms timer: later on a loaded machine)
        assert wait_for(lambda: all(
            v == {want} for pid in n.worker_pids()
            for v in compilers(thread_nice(pid)).values()), 60)
        for pid in n.worker_pids():
            t = thread_nice(pid)
            assert t["C1 Compiler"] == {want}, t
            assert t["C2 Compiler"] == {want}, t
            assert all(v == {0} for v in others(t).values()), t
        assert n.get("/pid").status == 200
        # threads that made themselves SCHED_BATCH while the start was
        # SCHED_IDLE (test_offloop.py) stay so
        for pid in n.worker_pids():
            batch = [policy(pid, tid) for tid, name in threads(pid)
                     if name.startswith(("nginx-jvm-pool", "nginx-jvm-abort"))]
            assert batch and set(batch) == {SCHED_BATCH}, batch
        # and the compilers stay there past the drain (5 s): a window for
        # a wrong move to show, not a wait for a state
        time.sleep(6)
        for pid in n.worker_pids():
            assert thread_nice(pid)["C2 Compiler"] == {want}


def test_a_reloads_compilers_leave_sched_idle_once_ready(mode):
    """A start under SCHED_IDLE: once ready every thread but the compilers
    leaves it at once; the compilers each once it sleeps, all of them
    within 10 s (moved while busy, they stalled the old workers)."""
    n = started(mode)
    with n:
        first = next_start(n, 0)
        assert n.control("reload").returncode == 0
        assert gone(first, READY_WAIT)
        assert wait_for(lambda: len(n.worker_pids()) == 2, 60)

        def settled():
            for pid in n.worker_pids():
                t = thread_nice(pid)
                if t.get("C2 Compiler") != {10} or \
                        t.get("C1 Compiler") != {10}:
                    return False
                if any(v != {0} for k, v in t.items()
                       if not k.startswith(("C1 Compiler", "C2 Compiler"))):
                    return False
            return True

        assert wait_for(settled, 60), {p: thread_nice(p)
                                       for p in n.worker_pids()}
