"""Reloads without a stall: the old workers serve until the new ones have
their JVMs ready (bounded by jvm_reload_timeout), so a reload under load
is not a pause, whatever the application's start costs."""

import http.client
import os
import threading
import time

import pytest

from harness import Nginx, alive, children, wait_for

LOCATIONS = """
        location /pid { jvm_content testapp.ring/pid; }
"""


def config(n, timeout="60s", drain=None):
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
    slow-start); returns the workers running now."""
    with open(n.path("start-ms"), "w") as f:
        f.write(str(ms))
    return set(n.worker_pids())


def gone(pids, seconds):
    """True once none of `pids` runs, within `seconds`."""
    return wait_for(lambda: not any(alive(p) for p in pids), seconds)


def assert_all_ok(results):
    assert results and all(ok for _, ok in results), \
        "%d of %d failed" % (sum(1 for _, ok in results if not ok),
                             len(results))


def load(port, seconds, results):
    """Requests on new connections for a while: (latency, ok) each."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.monotonic()
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            c.request("GET", "/pid")
            ok = c.getresponse().status == 200
            c.close()
        except OSError:
            ok = False
        results.append((time.monotonic() - start, ok))


def reload_under_load(n, start_ms, seconds=5):
    old = next_start(n, start_ms)
    results = []
    t = threading.Thread(target=load, args=(n.port, seconds, results))
    t.start()
    time.sleep(1)
    assert n.control("reload").returncode == 0
    t.join()
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
    worst = max(lat for lat, _ in results)
    assert worst < 1.0, "a request waited %.2f s: nobody accepted" % worst
    assert gone(old, 20), "old workers quit"
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
        assert gone(old, 15)
        took = time.monotonic() - start
        assert 0.8 < took < 10, took
        assert n.log_lines(r"\[warn\].*jvm: reload: 0 of 1 new workers ready "
                           r"after jvm_reload_timeout; quitting all the same")


def test_plain_quit_does_not_wait(ng):
    old = set(ng.worker_pids())
    start = time.monotonic()
    assert ng.control("quit").returncode == 0
    assert wait_for(lambda: ng.proc.poll() is not None, 15)
    assert time.monotonic() - start < 5
    assert not ng.log_lines(r"serving until the new workers")
    assert not any(alive(p) for p in old)


# jvm_reload_drain: once the new workers are ready, an old one stops
# accepting and closes its keep-alive connections one by one, each right
# after a response that says "Connection: close", spread over the drain.

def keepalive_clients(port, count, seconds, results):
    """`count` keep-alive connections, a request on each every 20 ms:
    per connection, (time, worker pid, Connection header) of each answer,
    or (time, None, error) for a request that failed."""
    conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=10)
             for _ in range(count)]
    for _ in conns:
        results.append([])
    end = time.monotonic() + seconds
    while time.monotonic() < end:
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
    with started(mode, drain="3s") as n:
        old = next_start(n, 0)
        results = []
        t = threading.Thread(target=keepalive_clients,
                             args=(n.port, 20, 9, results))
        t.start()
        time.sleep(1)
        assert n.control("reload").returncode == 0
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
        assert gone(old, 10)
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
        start = time.monotonic()
        assert n.control("reload").returncode == 0
        # each old worker stops accepting as it sees the new ones ready (a
        # poll of 50 ms), right after it says so: every one of them
        assert wait_for(lambda: len(n.log_lines(r"handing the connections "
                                                r"over")) >= len(old), 20)
        time.sleep(0.1)
        for _ in range(10):
            c = http.client.HTTPConnection("127.0.0.1", n.port, timeout=10)
            c.request("GET", "/pid")
            assert int(c.getresponse().read()) not in old
            c.close()
        # the worker with a client drains; one without may have quit
        assert alive(holder)
        assert gone(old, 15)
        took = time.monotonic() - start
        assert 2.5 < took < 12, took
        assert n.log_lines(r"connections handed over, 1 left")
        idle.close()


def test_drain_ends_at_once_without_clients(mode):
    with started(mode, drain="30s") as n:
        old = next_start(n, 0)
        start = time.monotonic()
        assert n.control("reload").returncode == 0
        assert gone(old, 20)
        assert time.monotonic() - start < 15
        assert n.log_lines(r"connections handed over, 0 left")


def test_drain_off_quits_as_nginx_does(mode):
    with started(mode, drain="0") as n:
        old = next_start(n, 0)
        idle = http.client.HTTPConnection("127.0.0.1", n.port, timeout=10)
        idle.request("GET", "/pid")
        idle.getresponse().read()
        assert n.control("reload").returncode == 0
        assert gone(old, 15)
        assert n.log_lines(r"jvm: reload: the new workers are ready")
        assert not n.log_lines(r"handing the connections over")
        idle.close()


def test_two_reloads_in_a_row_a_superseded_worker_starts_no_jvm(mode):
    """A reload while the last one's workers are still starting: a worker
    whose turn comes after the newer configuration starts no JVM and quits;
    the first workers serve throughout, until the newest are ready."""
    with started(mode) as n:
        first = next_start(n, 2000)
        results = []
        t = threading.Thread(target=load, args=(n.port, 12, results))
        t.start()
        time.sleep(0.5)
        assert n.control("reload").returncode == 0
        time.sleep(1.0)             # the second's first worker is starting
        assert n.control("reload").returncode == 0
        t.join()
        assert_all_ok(results)
        assert n.log_lines(r"jvm: reload: a newer configuration came before "
                           r"this worker's start: no JVM, quitting")
        assert gone(first, 20)
        now = set(n.worker_pids())
        c = http.client.HTTPConnection("127.0.0.1", n.port, timeout=10)
        for _ in range(6):
            c.request("GET", "/pid")
            assert int(c.getresponse().read()) in now
        c.close()


SCHED_BATCH, SCHED_IDLE = 3, 5


def threads(pid):
    """[(tid, name)] of a process."""
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
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


@pytest.mark.parametrize("nice", [None, "0"])
def test_a_reloads_jvm_starts_at_a_lower_priority(mode, nice):
    """jvm_reload_nice: a new worker that may lower a nice value again (these
    run as root) starts its JVM under SCHED_IDLE, every thread; once ready,
    all but its C1/C2 compiler threads return to nice 0 and SCHED_OTHER,
    and those to nice +10 (the default), where they stay; the first start's
    workers, and jvm_reload_nice 0, leave them alone."""
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
        # the new JVMs' start held in the application's loading for 8 s
        next_start(n, 8000)
        assert n.control("reload").returncode == 0
        want = 0 if nice == "0" else 10
        starting_want = 0 if nice == "0" else "idle"

        def starting():
            # titled "worker process" only once started: the master's others
            return set(children(n.master_pid)) - first

        # the first new worker starts its JVM while the second waits its turn
        assert wait_for(lambda: any("C2 Compiler" in thread_nice(p)
                                    for p in starting()), 10)
        for pid in starting():
            t = thread_nice(pid)
            t.pop("jvm-reload-", None)        # the thread that ends it, below
            if "C2 Compiler" in t:
                assert all(v == {starting_want} for v in t.values()), t
        # past 5 s a start still under way is no longer SCHED_IDLE (with no
        # idle CPU it would barely move): every thread at +10 till ready
        first_new = min(starting())

        def compilers(t):
            return {k: v for k, v in t.items()
                    if k.startswith(("C1 Compiler", "C2 Compiler"))}

        def others(t):
            return {k: v for k, v in t.items()
                    if not k.startswith(("C1 Compiler", "C2 Compiler"))}

        assert wait_for(lambda: all(v == {want} for v in
                                    thread_nice(first_new).values()), 7)
        assert gone(first, 30)
        assert wait_for(lambda: len(n.worker_pids()) == 2, 10)
        # the compilers once they sleep, or 10 s after ready at the most
        assert wait_for(lambda: all(
            v == {want} for pid in n.worker_pids()
            for v in compilers(thread_nice(pid)).values()), 12)
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
        # and the compilers stay there past the drain (5 s)
        time.sleep(6)
        for pid in n.worker_pids():
            assert thread_nice(pid)["C2 Compiler"] == {want}


def test_a_reloads_compilers_leave_sched_idle_once_ready(mode):
    """A start done within 5 s under SCHED_IDLE: once ready every thread but
    the compilers leaves it at once; the compilers each once it sleeps, all
    of them within 10 s (moved while busy, they stalled the old workers)."""
    n = started(mode)
    with n:
        first = next_start(n, 0)
        assert n.control("reload").returncode == 0
        assert gone(first, 30)
        assert wait_for(lambda: len(n.worker_pids()) == 2, 10)

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

        assert wait_for(settled, 12), {p: thread_nice(p)
                                       for p in n.worker_pids()}
