"""jvm_init: a Clojure init function runs once per worker before requests,
never for `nginx -t`; an init that throws is logged and handlers serve."""

import os

import pytest

from harness import Nginx, read_edn

LOCATIONS = """
        location /state { jvm_content testapp.init/handler; }
"""

TRACE = r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: |\s+Suppressed: )"
INIT_FAILED = r'jvm_init "testapp.init/throwing-init" failed'


@pytest.fixture(scope="module")
def ng(mode):
    n = Nginx(LOCATIONS, http="""
    jvm_init testapp.init/init;
    jvm_options -Dtestapp.marker=@PREFIX@/marker;
""", mode=mode)
    # `nginx -t` first: it must not start a JVM, so the init leaves no marker
    n.t_result = n.test_config()
    n.marker_after_t = os.path.exists(n.path("marker"))
    with n:
        yield n


@pytest.fixture(scope="module")
def failing(mode):
    with Nginx(LOCATIONS, http="    jvm_init testapp.init/throwing-init;\n",
               mode=mode, startup_allow=[INIT_FAILED, TRACE]) as n:
        yield n


def test_nginx_t_does_not_run_the_jvm(ng):
    assert ng.t_result.returncode == 0, ng.t_result.stderr
    assert "test is successful" in ng.t_result.stderr
    assert not ng.marker_after_t
    # ... while a real start does run the init (so the check above can fail)
    assert os.path.exists(ng.path("marker"))


def test_init_runs_once_per_worker_before_requests(ng):
    r = ng.get("/state")
    assert r.status == 200
    assert read_edn(r.text) == {":initialized": True, ":runs": 1}
    with open(ng.path("marker")) as f:
        lines = f.read().splitlines()
    assert lines == ["init ran in %d" % ng.worker_pids()[0]]


def test_init_that_throws_is_logged_once(failing):
    lines = failing.log_lines(r"\[error\] .*" + INIT_FAILED +
                              r": java.lang.IllegalStateException: "
                              r"init-boom-marker")
    assert len(lines) == 1, failing.log_text()
    # handlers still serve; the init's work is simply missing
    for _ in range(2):
        r = failing.get("/state")
        assert r.status == 200
        assert read_edn(r.text) == {":initialized": False, ":runs": 0}
    assert len(failing.log_lines(INIT_FAILED)) == 1
