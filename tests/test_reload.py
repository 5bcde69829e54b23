"""Reloads without a stall: the old workers serve until the new ones have
their JVMs ready (bounded by jvm_reload_timeout), so a reload under load
is not a pause, whatever the application's start costs."""

import http.client
import threading
import time

import pytest

from harness import Nginx, alive, wait_for

LOCATIONS = """
        location /pid { jvm_content testapp.ring/pid; }
"""


def config(n, timeout="60s"):
    return ("    jvm_init testapp.init/slow-start;\n"
            "    jvm_reload_timeout %s;\n"
            "    jvm_options -Dtestapp.start-ms=%s/start-ms;\n" % (timeout, n))


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
    with open(n.path("start-ms"), "w") as f:
        f.write(str(start_ms))
    results = []
    t = threading.Thread(target=load, args=(n.port, seconds, results))
    t.start()
    time.sleep(1)
    old = set(n.worker_pids())
    assert n.control("reload").returncode == 0
    t.join()
    return old, results


@pytest.fixture
def ng(tmp_path, mode):
    n = Nginx(LOCATIONS, workers=2, mode=mode)
    with open(n.conf) as f:
        text = f.read()
    with open(n.conf, "w") as f:
        f.write(text.replace("http {", "http {\n" + config(n.prefix), 1))
    with n:
        yield n


def test_reload_keeps_serving_while_the_new_jvms_start(ng):
    """New workers take 2.5 s to start; the old ones serve meanwhile."""
    old, results = reload_under_load(ng, 2500)
    assert results and all(ok for _, ok in results), \
        "%d of %d failed" % (sum(1 for _, ok in results if not ok), len(results))
    worst = max(lat for lat, _ in results)
    assert worst < 1.0, "a request waited %.2f s: nobody accepted" % worst
    assert wait_for(lambda: not any(alive(p) for p in old), 20), "old workers quit"
    assert ng.log_lines(r"jvm: reload: serving until the new workers are ready")
    assert ng.log_lines(r"jvm: reload: the new workers are ready")


def test_new_workers_never_ready_old_ones_quit_by_the_bound(tmp_path, mode):
    n = Nginx(LOCATIONS, workers=1, mode=mode,
              startup_allow=[])
    with open(n.conf) as f:
        text = f.read()
    with open(n.conf, "w") as f:
        f.write(text.replace("http {", "http {\n" + config(n.prefix, "1s"), 1))
    with n:
        with open(n.path("start-ms"), "w") as f:
            f.write("30000")
        old = set(n.worker_pids())
        start = time.monotonic()
        assert n.control("reload").returncode == 0
        assert wait_for(lambda: not any(alive(p) for p in old), 15)
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
