"""Timers in the worker (nginx.jvm.Timers, nginx.jvm.timers): one-shot and
interval, on the event loop or a timer thread; cancel; an exception is
logged and an interval goes on; a quit or a reload does not wait."""

import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness import Nginx, accepted, alive, read_edn, wait_for

LOCATIONS = """
        location /timer { jvm_content testapp.TimerApp; }
        location /slow { jvm_mode pool; jvm_content testapp.TimerApp; }
        location /clj { jvm_content testapp.timers/handler; }
"""


def get(n, **params):
    r = n.get("/timer?" + "&".join("%s=%s" % kv for kv in params.items()))
    assert r.status == 200, r.text
    return r.text


def count(n, name):
    runs, _, threads = get(n, op="count", name=name).partition(" ")
    return int(runs), set(t for t in threads.split(",") if t)


def stands_still(read, window=0.3, timeout=60):
    """What read() answers once two reads `window` seconds apart agree (a
    timer that no longer runs), within `timeout`; else None."""
    def still():
        a = read()
        time.sleep(window)
        return (a,) if read() == a else None
    got = wait_for(still, timeout)
    return got[0] if got else None


def test_one_shot_on_the_loop(ng):
    loop_thread = get(ng, op="loop") if ng.mode == "loop" else None
    get(ng, op="start", name="once", kind="after", ms=100, on="loop")
    assert count(ng, "once")[0] == 0
    assert wait_for(lambda: count(ng, "once")[0] == 1, 60)
    time.sleep(0.3)
    runs, threads = count(ng, "once")
    assert runs == 1
    assert not any(t.startswith("nginx-jvm-timer") for t in threads)
    if loop_thread:
        assert threads == {loop_thread}, "the handlers' event loop thread"
    assert get(ng, op="cancel", name="once") == "false", "over already"


def test_interval_on_a_thread_until_cancelled(ng):
    get(ng, op="start", name="tick", kind="every", ms=50, on="thread")
    assert wait_for(lambda: count(ng, "tick")[0] >= 5, 60)
    assert get(ng, op="cancel", name="tick") == "true"
    # a run under way as it was cancelled may still end: then no more
    still = stands_still(lambda: count(ng, "tick"))
    assert still, "it still runs after its cancel"
    runs, threads = still
    assert all(t.startswith("nginx-jvm-timer") for t in threads), threads


def test_interval_on_the_loop(ng):
    get(ng, op="start", name="lt", kind="every", ms=30, on="loop")
    assert wait_for(lambda: count(ng, "lt")[0] >= 5, 60)
    get(ng, op="cancel", name="lt")


def test_cancel_before_it_runs(ng):
    get(ng, op="start", name="never", kind="after", ms=300, on="loop")
    assert get(ng, op="cancel", name="never") == "true"
    time.sleep(0.5)
    assert count(ng, "never")[0] == 0


@pytest.mark.log_allows(r"\[error\].*nginx\.jvm\.Timers: a timer's task threw")
def test_an_exception_is_logged_and_the_interval_goes_on(ng):
    get(ng, op="start", name="boom", kind="every", ms=40, on="loop", **{"throw": 1})
    assert wait_for(lambda: count(ng, "boom")[0] >= 3, 60)
    get(ng, op="cancel", name="boom")
    assert "timer-boom-marker" in ng.stderr_text() + ng.log_text()
    assert "the timer goes on" in ng.stderr_text() + ng.log_text()
    get(ng, op="start", name="boom1", kind="after", ms=10, on="thread", **{"throw": 1})
    assert wait_for(lambda: count(ng, "boom1")[0] >= 1, 60)
    time.sleep(0.3)                 # a window for a second run to show
    assert count(ng, "boom1")[0] == 1, "a one-shot timer is over"


@pytest.mark.log_allows(r"\[error\].*nginx\.jvm\.Timers: a timer's task threw")
def test_an_exception_that_cannot_be_printed_loses_no_wake_up(ng):
    """A loop timer throws an exception whose getMessage() throws: logging
    it threw in turn, out of Worker.wake() before it named the ready tasks,
    and their wake-up was lost with the loop still marked as woken (pool
    requests hung).  It is logged, class and stack trace, and the requests
    answered off the loop meanwhile are all answered."""
    since = ng.log_size()
    get(ng, op="start", name="hostile", kind="every", ms=5, on="loop",
        **{"throw": "hostile"})
    try:
        with ThreadPoolExecutor(8) as ex:
            replies = list(ex.map(
                lambda i: ng.get("/slow?op=sleep&ms=%d" % (i % 4), timeout=20),
                range(200)))
    finally:
        get(ng, op="cancel", name="hostile")
    assert [r.status for r in replies] == [200] * 200
    assert count(ng, "hostile")[0] >= 3
    log = ng.log_text(since)
    assert re.search(r"\[error\] .*nginx\.jvm\.Timers: a timer's task threw"
                     r" \(the timer goes on\): testapp\.TimerApp\$Hostile"
                     r" \(its message could not be read: testapp\.TimerApp\$Hostile\)"
                     r"\n\tat testapp\.TimerApp\.lambda", log), log[-3000:]
    assert "Worker.wake() failed" not in log


def test_clojure_wrapper(ng):
    assert ng.get("/clj?start").text == "started"
    assert wait_for(lambda: read_edn(ng.get("/clj?state").text).get(":cancelled"), 60)
    # it ran, and ran no more once cancelled (a run under way may end);
    # how often it ran before is the machine's business (a busy one delays
    # the cancel)
    s = stands_still(lambda: read_edn(ng.get("/clj?state").text))
    assert s, "it still runs after its cancel"
    assert s[":once"] == 1
    assert s[":every"] >= 1, s
    assert "not :moon" in ng.get("/clj?bad").text


def test_a_coloop_timer_without_coloop_runs_on_a_timer_thread(ng):
    """Without jvm_mode coloop a coloop timer runs on a timer thread; with
    it, on a virtual thread the loop carries."""
    assert ng.get("/clj?coloop").text == "started"
    thread = wait_for(
        lambda: read_edn(ng.get("/clj?state").text).get(":coloop"), 60)
    assert thread == ("nginx-jvm-coloop" if ng.mode == "coloop"
                      else "nginx-jvm-timer")


@pytest.mark.parametrize("how", ["quit", "reload"])
def test_quit_and_reload_do_not_wait_for_timers(mode, how):
    with Nginx(LOCATIONS, mode=mode, workers=2) as n:
        for _ in range(4):
            get(n, op="start", name="a", kind="every", ms=20, on="loop")
            get(n, op="start", name="b", kind="every", ms=20, on="thread")
            get(n, op="start", name="c", kind="after", ms=60000, on="loop")
        old = n.worker_pids()
        assert n.control(how).returncode == 0
        if how == "reload":
            # the old workers serve until the new ones are ready
            assert n.wait_ready(exclude=old)
        start = time.monotonic()
        assert wait_for(lambda: not any(alive(p) for p in old), 60)
        if how == "quit":
            assert wait_for(lambda: n.proc.poll() is not None, 60)
        assert time.monotonic() - start < 3


def test_timers_stop_when_a_graceful_quit_begins(mode):
    """A worker that drains a slow request after the quit runs no timers."""
    with Nginx(LOCATIONS, mode=mode) as n:
        runs = n.path("runs")
        get(n, op="start", name="w", kind="every", ms=20, on="thread", file=runs)
        get(n, op="start", name="l", kind="every", ms=20, on="loop", file=runs)
        assert wait_for(lambda: os.path.exists(runs)
                        and open(runs).read().count("run") > 4, 60)
        worker = n.worker_pids()[0]
        # 8 s: longer than the waits below take on a loaded machine
        slow = threading.Thread(target=lambda: n.get("/slow?op=sleep&ms=8000",
                                                     timeout=60))
        slow.start()
        # the worker holds the slow request, then takes the quit
        assert wait_for(lambda: accepted([worker], n.port) >= 1, 60)
        since = n.log_size()
        assert n.control("quit").returncode == 0
        assert n.wait_log(r"gracefully shutting down", since)
        # the count stands still while the slow request keeps the worker
        # (a run under way as the quit began may end)
        ran = stands_still(lambda: open(runs).read().count("run"), 0.5)
        assert ran is not None, "timers still run during the quit"
        assert slow.is_alive(), "the slow request ended: too slow to tell"
        assert alive(worker), "the slow request keeps the worker"
        slow.join(60)
        assert wait_for(lambda: n.proc.poll() is not None, 60)
