"""Fixtures shared by the integration tests.

Each test module starts its own nginx (module-scoped fixture) because a
worker's JVM takes a second or more to start.  Every module fixture depends
on `mode`, so the whole suite runs once per execution mode listed in
NGINX_JVM_MODES (comma-separated: loop,pool,virtual; default "loop").
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from harness import (MODES, MODULE, JAR, COLOOP_LIBJVM, SERVLET_MODES,  # noqa: E402
                     Nginx, alive, jdk21_libjvm, wait_for)

# Test::Nginx's HUP mode: every running nginx reloads before each test, so
# that what a reload loses or leaks shows between two requests.
RELOAD = os.environ.get("NGINX_JVM_RELOAD") == "1"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "log_allows(*regexes): [error]-or-worse error log lines "
        "this test expects (any nginx it talks to)")
    config.addinivalue_line(
        "markers", "no_reload: skipped under NGINX_JVM_RELOAD=1 (the test "
        "counts what the workers' starts log)")


# make test runs the suite on two pytest-xdist processes (`-n 2`, the
# Makefile's TEST_JOBS). Each runs whole files: a file's module-scoped
# nginx then starts once a mode, as in a run of one process. The files
# that build the same things under build/ (the Maven examples the servlet
# suites share, build/projects/m2, the API jar and the package) are one
# unit, run one after another by one process. (pytest-xdist's own
# `--dist loadgroup` marks did not group anything under pytest 9: the
# scheduler below is told the units itself.)
SHARED_BUILDS = ("test_servlet_", "test_projects.py", "test_deb.py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):
        """Units of whole files (the largest first, xdist's default
        order), the shared builders' files one unit."""

        def _split_scope(self, nodeid):
            path = nodeid.split("::", 1)[0]
            name = path.rsplit("/", 1)[-1]
            return "builds" if name.startswith(SHARED_BUILDS) else path

    return ByFile(config, log)


def pytest_sessionstart(session):
    for f in (MODULE, JAR):
        if not f.exists():
            pytest.exit("%s is missing: run `make all` first" % f, 2)


def skip_unless_runnable(mode):
    if mode == "virtual" and jdk21_libjvm() is None:
        pytest.skip("jvm_mode virtual needs a JDK 21 or newer")
    if mode == "coloop" and not os.path.exists(COLOOP_LIBJVM):
        pytest.skip("jvm_mode coloop is tested on " + COLOOP_LIBJVM
                    + ", not installed")


@pytest.fixture(scope="session", params=MODES)
def mode(request):
    skip_unless_runnable(request.param)
    return request.param


@pytest.fixture(scope="session", params=SERVLET_MODES)
def servlet_mode(request):
    """The mode of a servlet suite's shared server: each of the suite's
    modes but loop (make test: pool and virtual; make test-coloop: coloop)."""
    skip_unless_runnable(request.param)
    return request.param


@pytest.fixture(scope="module")
def ng(request, mode):
    """The test module's nginx, in `mode`: its LOCATIONS (the server's
    locations), HTTP (the http block's, if it has one) and NGINX_ARGS (more
    arguments of Nginx, if any).  A module whose nginx needs more (files,
    certificates, an upstream) defines its own `ng`, which wins."""
    m = request.module
    with Nginx(m.LOCATIONS, http=getattr(m, "HTTP", ""), mode=mode,
               **getattr(m, "NGINX_ARGS", {})) as n:
        yield n


@pytest.fixture(autouse=True)
def _reload_each(request):
    """NGINX_JVM_RELOAD=1: `nginx -s reload` of every nginx the tests run,
    then a wait until the new workers serve, before each test."""
    if not RELOAD:
        return
    if request.node.get_closest_marker("no_reload"):
        pytest.skip("it counts what every worker start logs (NGINX_JVM_RELOAD)")
    for n in list(Nginx.instances):
        if type(n) is not Nginx or n.single or n.proc is None \
                or n.proc.poll() is not None:
            continue
        old = n.worker_pids()
        r = n.control("reload")
        assert r.returncode == 0, r.stdout
        assert n.wait_ready(exclude=old), \
            "no new workers after a reload:\n" + n.log_text()
        # the old workers accept until the new JVMs are ready
        # (jvm_reload_timeout): the test talks to the new ones only
        assert wait_for(lambda: not any(accepting(p) for p in old), 60), \
            "the old workers still accept after a reload"


def accepting(pid):
    """A worker that has not begun to shut down."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return b"shutting down" not in f.read() and alive(pid)
    except OSError:
        return False


@pytest.fixture(autouse=True)
def _error_log_check(request, _reload_each):
    """Fails a test when any nginx wrote an unexpected [alert], [crit],
    [error] or [emerg] line while it ran."""
    allowed = []
    for marker in request.node.iter_markers("log_allows"):
        allowed.extend(marker.args)
    since = {id(n): n.log_size() for n in Nginx.instances}
    yield
    problems = []
    for n in list(Nginx.instances):
        if id(n) in since:
            lines = n.log_problems(since[id(n)], allowed)
        else:                       # started by this test: its start too
            lines = n.log_problems(0, allowed + n.startup_allow)
        for line in lines:
            problems.append("%s: %s" % (n.prefix, line))
    assert not problems, "unexpected error log lines:\n" + "\n".join(problems)
