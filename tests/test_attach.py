"""The JVM's attach mechanism: off in every worker unless jvm_options turn
it on, and no /tmp/.java_pid<pid> socket left behind either way."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness import Nginx, wait_for

LOCATIONS = """
        location /pid { jvm_content testapp.ring/pid; }
"""


def socket_of(pid):
    return Path("/tmp/.java_pid%d" % pid)


class Sockets:
    """The attach sockets this test's workers made: a file left in /tmp by
    an earlier process that had the same pid (a JVM killed before it could
    remove it, anywhere on the machine) is older than the test, and not
    ours to judge."""

    def __init__(self):
        # file times come from the kernel's coarse clock, a tick behind
        self.since = time.time() - 0.05

    def made(self, pid):
        try:
            return socket_of(pid).stat().st_mtime >= self.since
        except FileNotFoundError:
            return False

    def clear_stale(self, pid):
        """jcmd would try a stale socket and fail instead of asking the
        JVM to open its own; the file's owner is long gone (its pid is now
        one of our workers')."""
        if socket_of(pid).exists() and not self.made(pid):
            socket_of(pid).unlink()


def jcmd(pid):
    """jcmd of the JDK the worker runs (virtual mode runs a newer one)."""
    with open("/proc/%d/maps" % pid) as f:
        libjvm = next(line.split()[-1] for line in f
                      if line.rstrip().endswith("/libjvm.so"))
    tool = Path(libjvm).parents[2] / "bin" / "jcmd"
    return subprocess.run([str(tool), str(pid), "VM.version"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=60)


def pids_since(first, seen):
    """Every pid the system gave out from `first` to the last one seen:
    the master forks its trial JVMs (ngx_http_jvm_child.c) between its
    workers, and they have an attach socket to remove too."""
    last = max(seen)
    if last >= first:
        return set(range(first, last + 1))
    with open("/proc/sys/kernel/pid_max") as f:        # wrapped round
        return set(range(first, int(f.read()))) | set(range(1, last + 1))


def serve_reload_quit(n, sockets, attach_works, sig=signal.SIGQUIT):
    """Requests to both workers, jcmd on each, a reload, then a quit (or
    a fast stop); returns every pid from the master's to the last
    worker's."""
    master = n.master_pid
    seen = set()
    for generation in range(2):
        pids = n.worker_pids()
        assert len(pids) == 2
        for pid in pids:
            sockets.clear_stale(pid)
        for _ in range(20):
            assert n.get("/pid").status == 200
        for pid in pids:
            r = jcmd(pid)
            assert (r.returncode == 0) == attach_works, r.stdout
            if attach_works:
                assert "JDK" in r.stdout or "VM" in r.stdout, r.stdout
            else:
                assert not sockets.made(pid)
        seen.update(pids)
        if generation == 0:
            assert n.control("reload").returncode == 0
            assert n.wait_ready(exclude=pids)
            # the old workers are gone, and so are their sockets
            assert wait_for(lambda: not any(os.path.exists("/proc/%d" % p)
                                            for p in pids), 30)
            for pid in pids:
                assert not sockets.made(pid)
    n.stop(sig=sig, timeout=30)
    return pids_since(master, seen)


def test_attach_off_by_default(mode):
    sockets = Sockets()
    n = Nginx(LOCATIONS, workers=2, mode=mode)
    with n:
        seen = serve_reload_quit(n, sockets, attach_works=False)
    left = [str(socket_of(p)) for p in seen if sockets.made(p)]
    assert not left, left


@pytest.mark.parametrize("sig", [signal.SIGQUIT, signal.SIGTERM],
                         ids=["quit", "stop"])
def test_attach_on_for_debugging(mode, sig):
    sockets = Sockets()
    n = Nginx(LOCATIONS, http="    jvm_options -XX:-DisableAttachMechanism;",
              workers=2, mode=mode)
    with n:
        seen = serve_reload_quit(n, sockets, attach_works=True, sig=sig)
    left = [str(socket_of(p)) for p in seen if sockets.made(p)]
    assert not left, left


EXIT_LOG = [r"\[alert\] .*jvm: handler code ended the JVM with status 2",
            r"worker process \d+ exited with code 1",
            r"System.exit\(\) called on thread", r"^\s+at "]


@pytest.mark.log_allows(*EXIT_LOG)
@pytest.mark.parametrize("how", ["exit", "halt"])
def test_attach_socket_gone_when_a_handler_ends_the_worker(mode, how):
    """System.exit or Runtime.halt in a handler: the worker leaves through
    the JVM's exit hook, not nginx's exit; its socket goes too."""
    locations = LOCATIONS + \
        "        location /exit { jvm_content testapp.errors/exit; }\n"
    n = Nginx(locations, http="    jvm_options -XX:-DisableAttachMechanism;",
              mode=mode)
    sockets = Sockets()
    with n:
        pid = n.worker_pids()[0]
        sockets.clear_stale(pid)
        assert jcmd(pid).returncode == 0
        assert sockets.made(pid)
        since = n.log_size()
        try:
            n.get("/exit?" + how, timeout=10)
        except OSError:
            pass                        # the connection went with the worker
        assert n.wait_log(EXIT_LOG[1], since)
        assert not socket_of(pid).exists()
