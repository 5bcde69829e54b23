"""Handlers off the event loop: thread pool, virtual threads, Ring async,
response timeouts, clients that leave, and reload/quit with work in flight.
"""

import collections
import glob
import os
import re
import socket
import tempfile
import threading
import time

import pytest

from harness import (SANITIZED, Nginx, accepted, alive, dechunk, jdk21_libjvm,
                     parse_raw, request, sanitized_rss, wait_for)


JDK21 = jdk21_libjvm()
needs_jdk21 = pytest.mark.skipif(JDK21 is None, reason="no JDK 21+ installed")

LOCATIONS = """
        location /pool/slow { jvm_mode pool; jvm_content testapp.offloop/slow; }
        location /pool/seq { jvm_mode pool; jvm_content testapp.offloop/seq-body; }
        location /pool/big { jvm_mode pool; jvm_content testapp.offloop/big-stream; }
        location /pool/broken { jvm_mode pool; jvm_content testapp.offloop/broken-seq; }
        location /fast { jvm_content testapp.offloop/fast; }
        location /static { return 200 "static"; }
        location /async/ {
            jvm_async on;
            jvm_response_timeout 1s;
            location /async/later { jvm_content testapp.offloop/async-later; }
            location /async/now { jvm_content testapp.offloop/async-now; }
            location /async/raise { jvm_content testapp.offloop/async-raise; }
            location /async/throw { jvm_content testapp.offloop/async-throw; }
            location /async/twice { jvm_content testapp.offloop/async-twice; }
            location /async/never { jvm_content testapp.offloop/async-never; }
            location /async/late { jvm_response_timeout 10s;
                                   jvm_content testapp.offloop/async-late; }
            location /async/stream { jvm_content testapp.offloop/async-stream; }
            location /async/java { jvm_content testapp.AsyncJava; }
            location /async/pool { jvm_mode pool;
                                   jvm_content testapp.offloop/async-later; }
        }
        location /late-count { jvm_content testapp.offloop/late-count; }
        location /live-tasks { jvm_content testapp.offloop/live-tasks; }
        location /pid { jvm_content testapp.offloop/pid; }
"""


@pytest.fixture(scope="module")
def ng():
    with Nginx(LOCATIONS, http="    jvm_pool_size 64;") as n:
        yield n


def concurrent(port, path, count, timeout=60):
    """count requests at once; returns their replies (None for a failure)."""
    replies = [None] * count
    barrier = threading.Barrier(count)

    def one(i):
        barrier.wait()
        try:
            replies[i] = request(port, "GET", path, timeout=timeout)
        except OSError as e:
            replies[i] = e

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    return threads, replies


def check_not_serialised(n, path):
    """200 requests to a handler that sleeps 200 ms, while a fast route keeps
    answering; serialised they would take 40 s."""
    start = time.monotonic()
    threads, replies = concurrent(n.port, path, 200)
    time.sleep(0.3)
    fast = []
    for _ in range(5):
        t0 = time.monotonic()
        r = n.get("/fast")
        fast.append((r.status, time.monotonic() - t0))
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    assert [getattr(r, "status", r) for r in replies] == [200] * 200
    assert all(s == 200 for s, _ in fast)
    # generous bounds: correctness, not speed
    assert max(d for _, d in fast) < 2.0, fast
    assert elapsed < 15, "200 x 200 ms took %.1f s: serialised?" % elapsed
    return replies


def test_pool_runs_blocking_handlers_concurrently(ng):
    replies = check_not_serialised(ng, "/pool/slow")
    threads = {r.text.split(" on ")[1] for r in replies}
    assert all(t.startswith("nginx-jvm-pool-") for t in threads)
    assert 1 < len(threads) <= 64


SCHED_OTHER, SCHED_BATCH = 0, 3


def thread_policies(n):
    """(pid, tid, name, scheduling policy) of every thread of n's workers."""
    found = []
    for pid in n.worker_pids():
        for task in glob.glob("/proc/%d/task/*" % pid):
            try:
                with open(task + "/stat") as f:
                    stat = f.read()
            except OSError:
                continue                # gone meanwhile
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            # field 41, policy; the fields after the name start at 3
            policy = int(stat[stat.rindex(")") + 2:].split()[38])
            found.append((pid, int(os.path.basename(task)), name, policy))
    return found


def test_handler_threads_do_not_preempt_the_loop(ng):
    """Pool threads are SCHED_BATCH (woken by a hand-off they wait for the
    loop to block instead of preempting it); the loop itself is not."""
    assert ng.get("/pool/slow?ms=1").status == 200
    threads = thread_policies(ng)
    pool = [t for t in threads if t[2].startswith("nginx-jvm-pool")]
    assert pool and all(t[3] == SCHED_BATCH for t in pool), threads
    loops = [t for t in threads if t[0] == t[1]]
    assert loops and all(t[3] == SCHED_OTHER for t in loops), threads


def test_fast_route_stays_on_the_loop(ng):
    r = ng.get("/fast")
    assert r.status == 200
    assert "pool" not in r.text


@pytest.mark.log_allows(r"thread pool's queue is full")
def test_full_queue_answers_503():
    with Nginx("""
        location /slow { jvm_mode pool; jvm_content testapp.offloop/slow; }
    """, http="    jvm_pool_size 1; jvm_queue 1;") as n:
        threads, replies = concurrent(n.port, "/slow?ms=500", 6)
        for t in threads:
            t.join()
        statuses = sorted(r.status for r in replies)
        assert statuses.count(200) >= 2          # one running, one queued
        assert statuses.count(503) >= 1
        assert set(statuses) <= {200, 503}
        assert n.log_lines(r"\[error\].*thread pool's queue is full")


def test_streaming_bodies_in_pool_mode(ng):
    r = ng.get("/pool/seq")
    assert r.status == 200
    assert r.header("Transfer-Encoding") == "chunked"
    assert r.text == "".join("line %d\n" % i for i in range(100))

    r = ng.get("/pool/big")
    assert r.status == 200
    n = 5 * 1024 * 1024
    assert len(r.body) == n
    assert r.body == bytes(i % 251 for i in range(n))


@pytest.mark.log_allows(r"producer failed", r"the response body failed")
def test_pool_body_failing_half_way_is_cut_short(ng):
    data = ng.raw(b"GET /pool/broken HTTP/1.1\r\nHost: x\r\n\r\n", timeout=10)
    reply = parse_raw(data)
    assert reply.status == 200
    body, complete = dechunk(reply.body)
    assert not complete
    assert body.startswith(b"piece 0\n")
    assert ng.wait_log(r"producer failed")


def test_async_respond_from_another_thread(ng):
    r = ng.get("/async/later")
    assert r.status == 200
    assert r.text.startswith("later from ")
    r = ng.get("/async/now")
    assert (r.status, r.text) == (201, "at once")
    r = ng.get("/async/stream")
    assert r.text == "".join("%d\n" % i for i in range(50))
    r = ng.get("/async/pool")
    assert r.status == 200


@pytest.mark.log_allows(r"raised on purpose", r"thrown instead of raise",
                        r"the handler (raised|threw)", r"^\s+at ")
def test_async_raise_and_throw_answer_500(ng):
    since = ng.log_size()
    assert ng.get("/async/raise").status == 500
    assert ng.wait_log(r"\[error\].*raised on purpose", since)
    assert ng.get("/async/throw").status == 500
    assert ng.wait_log(r"\[error\].*thrown instead of raise", since)
    assert ng.get("/fast").status == 200


def test_async_second_answer_is_ignored(ng):
    r = ng.get("/async/twice")
    assert (r.status, r.text) == (200, "first")
    # the later respond and raise returned normally (no exception thrown
    # into the caller), and nothing was logged above debug level
    assert wait_for(lambda: ng.get("/fast").status == 200, 60)


@pytest.mark.log_allows(r"no response within jvm_response_timeout")
def test_async_timeout_answers_504(ng):
    since = ng.log_size()
    t0 = time.monotonic()
    r = ng.get("/async/never")
    assert r.status == 504
    assert 0.8 < time.monotonic() - t0 < 5
    assert ng.log_lines(r"\[error\].*no response within jvm_response_timeout",
                        since)


def test_java_async_handler(ng):
    r = ng.get("/async/java")
    assert (r.status, r.text) == (200, "async java /async/java")


@pytest.mark.log_allows(r"raised by AsyncJava", r"the handler raised",
                        r"^\s+at ")
def test_java_async_handler_raise(ng):
    assert ng.get("/async/java?raise").status == 500


def worker_rss_kb(n):
    (pid,) = n.worker_pids()
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def abandon(port, path, count):
    """Sends count requests and hangs up without reading the answers."""
    socks = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
        socks.append(s)
    time.sleep(0.05)
    for s in socks:
        s.close()


@pytest.mark.skipif(SANITIZED, reason=sanitized_rss)
def test_clients_that_leave_leak_nothing():
    """Requests abandoned while their handler runs: freed at once, a late
    respond is harmless, and the worker's memory does not grow with them.

    The heap is fixed and touched up front, so that what the JVM does with
    it does not show as growth; a request that leaked its nginx pool alone
    (4 KB or more) would add 12 MB over the 3,000 requests measured."""
    with Nginx(LOCATIONS, http="    jvm_pool_size 64;\n    jvm_options "
               "-Xms64m -Xmx64m -XX:+AlwaysPreTouch -XX:+UseSerialGC;") as n:
        def late():
            return int(n.get("/late-count").text)

        def round_of(count):
            # small rounds, so that the test's 256 worker_connections suffice
            start = late()
            abandon(n.port, "/async/late?ms=200", count)
            abandon(n.port, "/pool/slow?ms=50", count)
            assert wait_for(lambda: late() >= start + count, 60), \
                "late responses: %d of %d" % (late() - start, count)

        for _ in range(5):                             # warm-up
            round_of(100)
        rss0 = worker_rss_kb(n)
        for _ in range(15):
            round_of(100)
        # the runtime let go of every one of them, then RSS is read
        assert wait_for(lambda: n.get("/live-tasks").text == "0", 60), \
            n.get("/live-tasks").text
        rss1 = worker_rss_kb(n)
        assert rss1 - rss0 < 4096, \
            "worker RSS grew from %d to %d KB" % (rss0, rss1)
        assert n.get("/fast").status == 200


def in_flight(pids, port, replies):
    """Every request answered or accepted by one of pids (the answered
    counted first: one that ends meanwhile is missed, never counted
    twice)."""
    done = sum(1 for r in replies if r is not None)
    return done + accepted(pids, port) >= len(replies)


def test_reload_and_quit_with_work_in_flight():
    """Requests in flight on pool threads and async handlers get their whole
    response across a reload and a graceful quit; old workers then exit."""
    with Nginx(LOCATIONS, http="    jvm_pool_size 64;") as n:
        old = n.worker_pids()
        threads, replies = concurrent(n.port, "/pool/slow?ms=1500", 20)
        t2, r2 = concurrent(n.port, "/async/late?ms=1500", 20)
        # all of them in flight: the worker holds their connections
        assert wait_for(lambda: in_flight(old, n.port, replies + r2), 30)
        assert n.control("reload").returncode == 0
        for t in threads + t2:
            t.join()
        assert [getattr(r, "status", r) for r in replies + r2] == [200] * 40
        assert all(r.text.startswith("slept 1500") for r in replies)
        # the old workers serve until the new ones are ready, then drain
        assert n.wait_ready(exclude=old)
        assert wait_for(lambda: not any(alive(p) for p in old), 30)

        new = n.worker_pids()
        threads, replies = concurrent(n.port, "/pool/slow?ms=1500", 10)
        t2, r2 = concurrent(n.port, "/async/late?ms=1500", 10)
        assert wait_for(lambda: in_flight(new, n.port, replies + r2), 30)
        assert n.control("quit").returncode == 0
        for t in threads + t2:
            t.join()
        assert [getattr(r, "status", r) for r in replies + r2] == [200] * 20
        assert wait_for(lambda: n.proc.poll() is not None, 60)


@needs_jdk21
def test_virtual_threads():
    with Nginx("""
        location /v/slow { jvm_mode virtual; jvm_content testapp.offloop/slow; }
        location /v/is-virtual { jvm_mode virtual; jvm_content testapp.offloop/virtual?; }
        location /v/seq { jvm_mode virtual; jvm_content testapp.offloop/seq-body; }
        location /v/async { jvm_mode virtual; jvm_async on;
                            jvm_content testapp.offloop/async-later; }
        location /fast { jvm_content testapp.offloop/fast; }
    """, http="    jvm_path %s;" % JDK21) as n:
        assert n.get("/v/is-virtual").text == "true"
        check_not_serialised(n, "/v/slow")
        assert n.get("/v/seq").text == "".join("line %d\n" % i
                                               for i in range(100))
        assert n.get("/v/async").status == 200
        # the handlers ran on the worker's own carriers (jvm_pool_size of
        # them), not the JDK's scheduler's; they are SCHED_BATCH, the loop not
        threads = thread_policies(n)
        carriers = [t for t in threads if t[2].startswith("nginx-jvm-carri")]
        assert sorted(collections.Counter(t[0] for t in carriers).values()) \
            == [16] * len(n.worker_pids()), threads
        assert all(t[3] == SCHED_BATCH for t in carriers), threads
        assert not [t for t in threads if t[2].startswith("ForkJoinPool-")], \
            threads
        assert all(t[3] == SCHED_OTHER for t in threads if t[0] == t[1])


@needs_jdk21
def test_virtual_threads_leave_their_one_carrier_while_they_wait():
    """jvm_pool_size 1: one carrier. 200 handlers that sleep 200 ms each
    still run side by side (a sleeping virtual thread leaves its carrier),
    the handler and a virtual thread it starts run on that carrier, not on
    the JDK's scheduler."""
    with Nginx("""
        location /v/slow { jvm_mode virtual; jvm_content testapp.offloop/slow; }
        location /v/carriers { jvm_mode virtual;
                               jvm_content testapp.offloop/carriers; }
        location /fast { jvm_content testapp.offloop/fast; }
    """, http="    jvm_path %s;\n    jvm_pool_size 1;" % JDK21) as n:
        check_not_serialised(n, "/v/slow")
        lines = n.get("/v/carriers").text.splitlines()
        assert len(lines) == 2, lines
        assert all(re.search(r"^VirtualThread\[.*@nginx-jvm-carrier-1$", l)
                   for l in lines), lines
        carriers = [t for t in thread_policies(n)
                    if t[2].startswith("nginx-jvm-carri")]
        assert len(carriers) == len(n.worker_pids()), carriers


HELD = """
            location /v/read { jvm_mode virtual;
                               jvm_content testapp.offloop/read-file; }
            location /v/slow { jvm_mode virtual;
                               jvm_content testapp.offloop/slow; }
            location = /status { jvm_status; }
"""


def fifo_dir():
    fifo = os.path.join(tempfile.mkdtemp(prefix="nginx-jvm-fifo-"), "f")
    os.mkfifo(fifo)
    return fifo


def carrier_in_open(n):
    """A carrier of n's worker is blocked in open() (openat, x86_64: 257):
    the FIFO's reader holds it."""
    for pid, tid, name, _ in thread_policies(n):
        if name.startswith("nginx-jvm-carri"):
            try:
                with open("/proc/%d/task/%d/syscall" % (pid, tid)) as f:
                    if f.read().split()[0] in ("2", "257"):
                        return True
            except (OSError, IndexError):
                continue
    return False


def served_beside_a_held_carrier(n):
    """The next virtual request is served within 2 s by a second carrier."""
    t0 = time.monotonic()
    r = n.get("/v/slow?ms=1", timeout=10)
    assert r.status == 200 and r.text.startswith("slept 1 on"), r
    assert time.monotonic() - t0 < 2, time.monotonic() - t0
    assert n.wait_log(r"\[warn\].*every carrier of jvm_mode virtual"
                      r" stayed held.*one more started, 2 now")
    carriers = [t for t in thread_policies(n)
                if t[2].startswith("nginx-jvm-carri")]
    assert len(carriers) == 2, carriers


def status_figure(n, name):
    for line in n.get("/status").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no " + name)


@needs_jdk21
def test_a_handler_that_holds_its_carrier_does_not_stall_the_others():
    """jvm_pool_size 1: the one carrier is held by a handler blocked in a
    FIFO's open (native code: its virtual thread cannot leave the carrier).
    Within a second another carrier starts and the next virtual handler is
    served; the first answers once a writer comes."""
    fifo = fifo_dir()
    try:
        with Nginx(HELD, http="    jvm_path %s;\n    jvm_pool_size 1;"
                   % JDK21) as n:
            held = {}
            reader = threading.Thread(target=lambda: held.setdefault(
                "data", n.raw(("GET /v/read?path=%s HTTP/1.1\r\nHost: "
                               "localhost\r\nConnection: close\r\n\r\n"
                               % fifo).encode(), timeout=30)))
            reader.start()
            # its handler holds the carrier, blocked in the FIFO's open
            assert wait_for(lambda: carrier_in_open(n), 60)
            served_beside_a_held_carrier(n)
            with open(fifo, "w") as w:
                w.write("from the fifo")
            reader.join(30)
            r = parse_raw(held["data"])
            assert r.status == 200 and r.body == b"from the fifo", r
    finally:
        os.unlink(fifo)
        os.rmdir(os.path.dirname(fifo))


@needs_jdk21
def test_a_client_that_leaves_while_its_handler_holds_a_carrier():
    """The client of the handler blocked in the FIFO's open leaves: the
    abort cannot reach native code, so the carrier stays held until the open
    returns; meanwhile others are served on another carrier, and once a
    writer comes the task ends, counted as aborted, with nothing sent."""
    fifo = fifo_dir()
    try:
        with Nginx(HELD, http="    jvm_path %s;\n    jvm_pool_size 1;"
                   % JDK21) as n:
            before = status_figure(n, "nginx_jvm_aborted_total")
            s = socket.create_connection(("127.0.0.1", n.port), timeout=30)
            s.sendall(("GET /v/read?path=%s HTTP/1.1\r\nHost: localhost\r\n"
                       "\r\n" % fifo).encode())
            # its handler holds the carrier, blocked in the FIFO's open,
            # before the client leaves
            assert wait_for(lambda: carrier_in_open(n), 60)
            s.close()
            served_beside_a_held_carrier(n)
            with open(fifo, "w") as w:
                w.write("for nobody")
            # the task settles: only the status request is in flight
            assert wait_for(lambda: status_figure(
                n, "nginx_jvm_requests_in_flight") == 1, 60)
            assert wait_for(lambda: status_figure(
                n, "nginx_jvm_aborted_total") == before + 1, 60)
            assert n.get("/v/slow?ms=1").status == 200
    finally:
        os.unlink(fifo)
        os.rmdir(os.path.dirname(fifo))


@pytest.mark.log_allows(r"jvm_mode virtual needs a JDK 21")
def test_virtual_threads_on_jdk17_answer_503():
    with Nginx("""
        location /v { jvm_mode virtual; jvm_content testapp.offloop/fast; }
        location /fast { jvm_content testapp.offloop/fast; }
    """, http="    jvm_path /usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so;",
               startup_allow=[r"jvm_mode virtual needs a JDK 21"]) as n:
        assert len(n.log_lines(r"\[error\].*jvm_mode virtual needs a JDK 21")) == 1
        for _ in range(3):
            assert n.get("/v").status == 503
        assert n.get("/fast").status == 200
        # said once at start, not once per request
        assert len(n.log_lines(r"jvm_mode virtual needs a JDK 21")) == 1
