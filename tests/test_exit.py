"""jvm_exit and the application's shutdown hooks: run once as each worker
leaves (quit, reload), bounded by jvm_exit_timeout, logged when they throw
or overrun."""

import signal
import time

import pytest

from harness import Nginx, wait_for

LOCATIONS = """
        location /pid { jvm_content testapp.leave/pid; }
"""


def nginx(mode, exit_handler, timeout="5s", workers=2):
    n = Nginx(LOCATIONS, workers=workers, mode=mode, http="""
    jvm_init testapp.leave/add-hook;
    %s
    jvm_exit_timeout %s;
    jvm_options -Dtestapp.leave=@PREFIX@/leave.txt;
""" % ("jvm_exit %s;" % exit_handler if exit_handler else "", timeout))
    with open(n.conf) as f:
        text = f.read()
    with open(n.conf, "w") as f:
        f.write(text.replace("@PREFIX@", n.prefix))
    return n


def lines(n):
    try:
        with open(n.path("leave.txt")) as f:
            return sorted(f.read().split("\n")[:-1])
    except FileNotFoundError:
        return []


def expect(pids, exit_ran=True):
    return sorted((["exit %d" % p for p in pids] if exit_ran else [])
                  + ["hook %d" % p for p in pids])


@pytest.mark.parametrize("handler", ["testapp.leave/leave", "testapp.Leave"])
def test_exit_runs_on_reload_and_quit(mode, handler):
    n = nginx(mode, handler)
    with n:
        old = n.worker_pids()
        assert n.get("/pid").status == 200
        assert lines(n) == []
        assert n.control("reload").returncode == 0
        assert n.wait_ready(exclude=old)
        # the old workers each ran jvm_exit and the hook once
        assert wait_for(lambda: lines(n) == expect(old), 30), lines(n)
        new = n.worker_pids()
        n.stop(sig=signal.SIGQUIT, timeout=30)
        assert lines(n) == expect(old + new)


def test_shutdown_hooks_run_without_jvm_exit(mode):
    n = nginx(mode, None, workers=1)
    with n:
        pids = n.worker_pids()
        n.stop(sig=signal.SIGQUIT, timeout=30)
        assert lines(n) == expect(pids, exit_ran=False)


@pytest.mark.log_allows(r"\[error\] .*jvm_exit \"testapp.leave/throwing-leave\""
                        r" failed", r"exit-boom-marker", r"^\s+at ", r"^\s*\.\.\.")
def test_throwing_exit_is_logged_and_the_worker_leaves(mode):
    n = nginx(mode, "testapp.leave/throwing-leave", workers=1)
    with n:
        pids = n.worker_pids()
        since = n.log_size()
        n.stop(sig=signal.SIGQUIT, timeout=30)
        text = n.log_text(since)
        assert "exit-boom-marker" in text
        assert "at testapp.leave$throwing_leave" in text
        # the hooks still ran
        assert lines(n) == expect(pids)


@pytest.mark.log_allows(r"did not end within jvm_exit_timeout")
def test_hanging_exit_is_cut_at_the_bound(mode):
    n = nginx(mode, "testapp.leave/hanging-leave", timeout="1s", workers=1)
    with n:
        pids = n.worker_pids()
        since = n.log_size()
        start = time.monotonic()
        n.stop(sig=signal.SIGQUIT, timeout=30)
        took = time.monotonic() - start
        text = n.log_text(since)
        # the hooks never ran: the thread that runs them was still in jvm_exit
        assert lines(n) == ["exit %d" % p for p in pids]
    assert "[warn]" in text
    assert "did not end within jvm_exit_timeout (1000 ms)" in text
    assert took < 20, took


@pytest.mark.parametrize("conf, word", [
    ("jvm_exit 'not a name';", "jvm_exit"),
    ("jvm_exit_timeout soon;", "jvm_exit_timeout"),
    ("jvm_exit testapp.leave/leave; jvm_exit testapp.Leave;", "jvm_exit"),
])
def test_bad_arguments_fail_nginx_t(conf, word):
    n = Nginx(LOCATIONS, http="    %s\n" % conf)
    try:
        r = n.test_config()
        assert r.returncode != 0
        assert (word + ":" in r.stderr or "\"%s\"" % word in r.stderr), r.stderr
    finally:
        n.cleanup()
