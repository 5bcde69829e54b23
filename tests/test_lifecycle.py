"""Process lifecycle: reload, quit, signals to workers, single-process
mode, and a worker the JVM kills (OutOfMemoryError)."""

import http.client
import os
import signal
import socket
import threading
import time

import pytest

from harness import accepted, alive, dechunk, Nginx, wait_for

LOCATIONS = """
        location /pid { jvm_content testapp.ring/pid; }
        location /slow { jvm_content testapp.ring/slow; }
        location /oom { jvm_content testapp.ring/oom; }
        location /static { return 200 "static ok"; }
        location /slow-seq { jvm_content testapp.offloop/seq-body; }
"""


@pytest.fixture(scope="module")
def ng(mode):
    with Nginx(LOCATIONS, workers=2, mode=mode) as n:
        yield n


def pid_of(n, **kw):
    r = n.get("/pid", **kw)
    assert r.status == 200, r
    return int(r.body)


def wait_gone(pids, timeout=60):
    return wait_for(lambda: not any(alive(p) for p in pids), timeout)


def reload(n):
    old = set(n.worker_pids())
    assert len(old) == n.workers
    r = n.control("reload")
    assert r.returncode == 0, r.stdout
    assert n.wait_ready(exclude=old), n.log_text()[-3000:]
    return old


def test_reload_keeps_serving(ng):
    old = reload(ng)
    assert wait_gone(old), "old workers still alive after reload"
    new = set(ng.worker_pids())
    assert new and not new & old
    for _ in range(4):
        assert pid_of(ng) in new


def test_slow_request_completes_across_reload(ng):
    result = {}

    def slow():
        try:
            result["reply"] = ng.get("/slow?ms=1500", timeout=20)
        except Exception as e:          # reported below
            result["error"] = e

    before = set(ng.worker_pids())
    t = threading.Thread(target=slow)
    t.start()
    # an old worker holds it (its handler sleeps) before the reload
    assert wait_for(lambda: accepted(before, ng.port) >= 1, 60)
    reload(ng)
    t.join(30)
    assert not t.is_alive()
    assert "error" not in result, result
    assert result["reply"].status == 200
    assert int(result["reply"].body) in before
    assert wait_gone(before)
    assert pid_of(ng) in ng.worker_pids()


def test_sigquit_to_workers(ng):
    # each worker in turn: it quits, the master starts another one
    for victim in ng.worker_pids():
        os.kill(victim, signal.SIGQUIT)
        assert wait_gone([victim]), "worker ignored SIGQUIT"
        assert ng.wait_ready(exclude=[victim])
    new = ng.worker_pids()
    for _ in range(4):
        assert pid_of(ng) in new        # only new workers are left
    assert ng.get("/static").status == 200


def test_quit_exits_quickly(mode):
    with Nginx(LOCATIONS, mode=mode) as n:
        worker = n.worker_pids()[0]
        assert pid_of(n) == worker
        started = time.monotonic()
        assert n.control("quit").returncode == 0
        n.proc.wait(10)
        assert time.monotonic() - started < 10
        assert n.proc.returncode == 0
        assert wait_gone([worker], 2)


def test_quit_lets_bodies_in_flight_finish(mode):
    """A graceful quit waits for every request that has a timer; a body
    produced on a JVM thread, waiting for its next piece, must count as
    one, or the worker exits and cuts it short."""
    with Nginx(LOCATIONS, mode=mode) as n:
        got = []
        started = threading.Semaphore(0)

        def download():
            with socket.create_connection(("127.0.0.1", n.port), 30) as s:
                s.sendall(b"GET /slow-seq HTTP/1.1\r\nHost: x\r\n"
                          b"Connection: close\r\n\r\n")
                data = b""
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    if not data:
                        started.release()
                    data += b
            got.append(dechunk(data.partition(b"\r\n\r\n")[2]))
        download()                      # warm: the 4 below start at once
        got.clear()
        threads = [threading.Thread(target=download) for _ in range(4)]
        for t in threads:
            t.start()
        for _ in threads:
            # in flight (the 100 lines take 0.5 s): a connection the worker
            # has not accepted yet would be reset by the quit, as by nginx's
            assert started.acquire(timeout=10)
        assert n.control("quit").returncode == 0
        for t in threads:
            t.join(30)
        n.proc.wait(30)
        whole = b"".join(b"line %d\n" % i for i in range(100))
        assert got == [(whole, True)] * 4
        assert not n.log_lines(r"open socket .* left in connection")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGQUIT],
                         ids=["SIGTERM", "SIGQUIT"])
def test_single_process(mode, sig):
    with Nginx(LOCATIONS, main="master_process off;", mode=mode) as n:
        assert pid_of(n) == n.master_pid
        assert n.get("/static").status == 200
        n.proc.send_signal(sig)
        n.proc.wait(10)
        assert n.proc.returncode == 0


@pytest.mark.log_allows(r"worker process \d+ exited", r"OutOfMemoryError")
def test_worker_killed_by_the_jvm_is_replaced(mode):
    with Nginx(LOCATIONS, http="    jvm_options -Xmx64m "
               "-XX:+ExitOnOutOfMemoryError;\n", mode=mode) as n:
        before = pid_of(n)
        with pytest.raises((http.client.HTTPException, ConnectionError)):
            n.get("/oom", timeout=60)
        assert wait_gone([before])
        # the master starts another worker, whose JVM serves again
        assert n.wait_ready(exclude=[before]), n.log_text()[-3000:]
        new = pid_of(n)
        assert new != before and new in n.worker_pids()
        assert n.get("/static").status == 200
