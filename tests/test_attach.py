"""The JVM's attach mechanism: off in every worker unless jvm_options turn
it on, and no /tmp/.java_pid<pid> socket left behind either way."""

import os
import signal
import subprocess
from pathlib import Path

import pytest

from harness import Nginx, wait_for

LOCATIONS = """
        location /pid { jvm_content testapp.ring/pid; }
"""


def socket_of(pid):
    return Path("/tmp/.java_pid%d" % pid)


def jcmd(pid):
    """jcmd of the JDK the worker runs (virtual mode runs a newer one)."""
    with open("/proc/%d/maps" % pid) as f:
        libjvm = next(line.split()[-1] for line in f
                      if line.rstrip().endswith("/libjvm.so"))
    tool = Path(libjvm).parents[2] / "bin" / "jcmd"
    return subprocess.run([str(tool), str(pid), "VM.version"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=60)


def serve_reload_quit(n, attach_works, sig=signal.SIGQUIT):
    """Requests to both workers, jcmd on each, a reload, then a quit (or
    a fast stop); returns every worker pid seen."""
    seen = set()
    for generation in range(2):
        pids = n.worker_pids()
        assert len(pids) == 2
        for _ in range(20):
            assert n.get("/pid").status == 200
        for pid in pids:
            r = jcmd(pid)
            assert (r.returncode == 0) == attach_works, r.stdout
            if attach_works:
                assert "JDK" in r.stdout or "VM" in r.stdout, r.stdout
            else:
                assert not socket_of(pid).exists()
        seen.update(pids)
        if generation == 0:
            assert n.control("reload").returncode == 0
            assert n.wait_ready(exclude=pids)
            # the old workers are gone, and so are their sockets
            assert wait_for(lambda: not any(os.path.exists("/proc/%d" % p)
                                            for p in pids), 30)
            for pid in pids:
                assert not socket_of(pid).exists()
    n.stop(sig=sig, timeout=30)
    return seen


def test_attach_off_by_default(mode):
    n = Nginx(LOCATIONS, workers=2, mode=mode)
    with n:
        seen = serve_reload_quit(n, attach_works=False)
    left = [str(socket_of(p)) for p in seen if socket_of(p).exists()]
    assert not left, left


@pytest.mark.parametrize("sig", [signal.SIGQUIT, signal.SIGTERM],
                         ids=["quit", "stop"])
def test_attach_on_for_debugging(mode, sig):
    n = Nginx(LOCATIONS, http="    jvm_options -XX:-DisableAttachMechanism;",
              workers=2, mode=mode)
    with n:
        seen = serve_reload_quit(n, attach_works=True, sig=sig)
    left = [str(socket_of(p)) for p in seen if socket_of(p).exists()]
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
    with n:
        pid = n.worker_pids()[0]
        assert jcmd(pid).returncode == 0
        assert socket_of(pid).exists()
        since = n.log_size()
        try:
            n.get("/exit?" + how, timeout=10)
        except OSError:
            pass                        # the connection went with the worker
        assert n.wait_log(EXIT_LOG[1], since)
        assert not socket_of(pid).exists()
