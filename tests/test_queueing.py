"""The queue between the event loop and the threads that run handlers off
it (issue 21), in each mode that has one: pool (runtime/.../Pool.java: a
queue the loop never waits on, threads woken only when none is looking),
virtual and coloop (a count of requests in flight).  Through real HTTP:
back-pressure (a full queue answers 503 at once and its places come back),
order (pool: first in, first out), cancellation (a queued request whose
client left never runs and frees its place), jvm_response_timeout for a
request still queued (504, and it never runs), and blocking handlers that
run side by side.
"""

import os
import socket
import threading
import time

import pytest

from harness import Nginx, jdk21_libjvm, request, wait_for

QUEUE = 3
MODES = ["pool", "virtual", "coloop"]

FULL = (r"thread pool's queue is full|too many requests in flight"
        r"|gave no response within jvm_response_timeout")


def locations(mode):
    return """
        location /q/ { jvm_mode %s; jvm_content testapp.Queueing; }
        location /t/ { jvm_mode %s; jvm_response_timeout 1s;
                       jvm_content testapp.Queueing; }
        location /ctl/ { jvm_mode loop; jvm_content testapp.Queueing; }
        location = /status { jvm_mode loop; jvm_status; }
""" % (mode, mode)


@pytest.fixture(scope="module", params=MODES)
def ng(request):
    http = "    jvm_pool_size 1;\n    jvm_queue %d;\n" % QUEUE
    with Nginx(locations(request.param), http=http, mode=request.param) as n:
        n.qmode = request.param
        yield n


def text(ng, path):
    r = request(ng.port, "GET", path, timeout=30)
    assert r.status == 200, (path, r)
    return r.text


def background(ng, paths, reached=None):
    """Sends each path from a thread of its own, in order, each once the
    one before has reached its place (reached(i) waits until request i has:
    so that they reach the queue in that order); returns the threads and
    the list their replies go to."""
    replies = [None] * len(paths)

    def one(i, path):
        try:
            replies[i] = request(ng.port, "GET", path, timeout=60)
        except OSError as e:
            replies[i] = e

    threads = []
    for i, p in enumerate(paths):
        t = threading.Thread(target=one, args=(i, p))
        t.start()
        threads.append(t)
        if reached:
            reached(i)
    return threads, replies


def held(ng, n):
    assert wait_for(lambda: text(ng, "/ctl/held") == str(n), 60), \
        "held: %s, not %d" % (text(ng, "/ctl/held"), n)


def depth(ng):
    """Requests waiting for a pool thread (jvm_status: the one worker
    publishes its own figures as it answers)."""
    for line in text(ng, "/status").splitlines():
        if line.startswith("nginx_jvm_queue_depth "):
            return int(float(line.split()[1]))
    raise AssertionError("no nginx_jvm_queue_depth")


def queued(ng, n):
    assert wait_for(lambda: depth(ng) == n, 60), \
        "queued: %d, not %d" % (depth(ng), n)


def release(ng, threads):
    text(ng, "/ctl/release")
    for t in threads:
        t.join(30)
        assert not t.is_alive()


def fill(ng):
    """What fills the mode's jvm_queue: for pool, the one thread held and
    QUEUE requests waiting for it; for virtual and coloop, QUEUE requests
    in flight, held. Returns the threads, their replies, and the tags of
    the requests that wait."""
    if ng.qmode == "pool":
        tags = ["w%d" % i for i in range(QUEUE)]
        threads, replies = background(
            ng, ["/q/block?ms=20000"] + ["/q/run?tag=%s" % t for t in tags],
            lambda i: held(ng, 1) if i == 0 else queued(ng, i))
        return threads, replies, tags
    threads, replies = background(ng, ["/q/block?ms=20000"] * QUEUE,
                                  lambda i: held(ng, i + 1))
    return threads, replies, []


@pytest.mark.log_allows(FULL)
def test_a_full_queue_answers_503_at_once_and_its_places_come_back(ng):
    text(ng, "/ctl/ran")
    for _ in range(2):
        threads, replies, tags = fill(ng)
        start = time.monotonic()
        r = request(ng.port, "GET", "/q/run?tag=refused", timeout=30)
        assert r.status == 503, r
        assert time.monotonic() - start < 2.0
        release(ng, threads)
        assert all(x.status == 200 for x in replies), replies
        # the refused one never ran; the queued ones did, in order for pool
        assert text(ng, "/ctl/ran") == ",".join(tags)
        held(ng, 0)
    assert ng.log_lines(r"\[error\].*(queue is full|too many requests in flight)")


def test_queued_requests_run_first_in_first_out(ng):
    if ng.qmode != "pool":
        pytest.skip("virtual and coloop start every request at once: no order to keep")
    text(ng, "/ctl/ran")
    threads, replies, tags = fill(ng)
    release(ng, threads)
    assert [x.text for x in replies] == ["released"] + tags
    assert text(ng, "/ctl/ran") == ",".join(tags)


def test_a_queued_request_whose_client_left_never_runs_and_frees_its_place(ng):
    text(ng, "/ctl/ran")
    if ng.qmode != "pool":
        # in flight, not queued: its handler runs on; its place comes back
        # when the handler ends, and nothing is left over
        socks = []
        for _ in range(QUEUE):
            s = socket.create_connection(("127.0.0.1", ng.port))
            s.sendall(b"GET /q/block?ms=20000 HTTP/1.1\r\nHost: x\r\n\r\n")
            socks.append(s)
        held(ng, QUEUE)
        for s in socks:
            s.close()
        text(ng, "/ctl/release")
        held(ng, 0)
        threads, replies, _ = fill(ng)
        release(ng, threads)
        assert all(x.status == 200 for x in replies), replies
        return
    threads, replies = background(ng, ["/q/block?ms=20000"])
    held(ng, 1)
    gone = socket.create_connection(("127.0.0.1", ng.port))
    gone.sendall(b"GET /q/run?tag=gone HTTP/1.1\r\nHost: x\r\n\r\n")
    queued(ng, 1)
    gone.close()
    queued(ng, 0)
    # all QUEUE places are free again: none is refused
    more, more_replies = background(
        ng, ["/q/run?tag=a", "/q/run?tag=b", "/q/run?tag=c"][:QUEUE],
        lambda i: queued(ng, i + 1))
    release(ng, threads + more)
    assert [x.status for x in more_replies] == [200] * QUEUE, more_replies
    assert text(ng, "/ctl/ran") == "a,b,c"


@pytest.mark.log_allows(FULL)
def test_a_request_still_waiting_at_jvm_response_timeout_answers_504(ng):
    text(ng, "/ctl/ran")
    if ng.qmode == "pool":
        # the only thread is held: /t/run waits in the queue past its 1 s
        threads, replies = background(ng, ["/q/block?ms=20000"])
        held(ng, 1)
        path = "/t/run?tag=late"
    else:
        threads, replies = [], []
        path = "/t/block?ms=3000"
    start = time.monotonic()
    r = request(ng.port, "GET", path, timeout=30)
    took = time.monotonic() - start
    assert r.status == 504, r
    assert 0.8 < took < 5, took
    release(ng, threads)
    held(ng, 0)
    # a task timed out in the queue is taken out of it: it never runs
    assert text(ng, "/ctl/ran") == ""
    assert ng.log_lines(r"\[error\].*jvm_response_timeout")
    # and its place is free
    assert text(ng, "/q/run?tag=after") == "after"


def test_blocking_pool_handlers_run_side_by_side():
    """Four blocked handlers on four pool threads: each submission finds no
    thread looking and wakes one, or a woken one wakes the next."""
    http = "    jvm_pool_size 4;\n    jvm_queue 16;\n"
    with Nginx(locations("pool"), http=http) as n:
        n.qmode = "pool"
        for _ in range(3):
            threads, replies = background(n, ["/q/block?ms=20000"] * 4)
            held(n, 4)
            release(n, threads)
            assert [x.text for x in replies] == ["released"] * 4
            held(n, 0)


@pytest.mark.parametrize("workers,option", [(1, None), (2, None), (2, 3)])
def test_virtual_carriers_are_a_workers_share_of_the_cores(workers, option):
    """jvm_mode virtual: a JVM per worker, so each gets its share of the
    cores as carrier threads (not the JDK's one per core), unless
    jvm_options says otherwise."""
    if jdk21_libjvm() is None:
        pytest.skip("jvm_mode virtual needs a JDK 21 or newer")
    http = ("    jvm_options -Djdk.virtualThreadScheduler.parallelism=%d;\n"
            % option) if option else ""
    with Nginx(locations("virtual"), http=http, mode="virtual",
               workers=workers) as n:
        expected = option or max(1, os.cpu_count() // workers)
        assert text(n, "/q/carriers") == str(expected)
    with Nginx(locations("pool"), mode="pool") as n:
        # no virtual location: the JDK's default stays
        assert text(n, "/q/carriers") == "unset"
