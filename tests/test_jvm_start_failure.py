"""A JVM that cannot start: nginx keeps serving what does not need it,
jvm locations answer 500, and the error is logged once per worker start
(no respawn loop)."""

import time

import pytest

from harness import START_WAIT, Nginx, wait_for

LOCATIONS = """
        location /jvm { jvm_content testapp.ring/pid; }
        location /static { return 200 "static ok"; }
"""

FAILED = r'\[emerg\] .*jvm: the JVM .*failed to start'
MASTER = r"\[emerg\] .*jvm: the master's trial start of the JVM .* ended with"
WORKERS = 2


# HotSpot rejects -XX:+NoSuchOption by returning from JNI_CreateJavaVM, but
# exits the process for -Xmx1k ("Too small maximum heap"): the master's trial
# start in a child process, once per configuration, keeps that from becoming
# a respawn loop; the workers then do not try.


@pytest.fixture(scope="module", params=[
    "-XX:+NoSuchOption", "-Xmx1k"])
def ng(request, mode):
    n = Nginx(LOCATIONS, http="    jvm_options %s;\n" % request.param,
              workers=WORKERS, mode=mode, startup_allow=[FAILED, MASTER])
    n.start(wait=False)
    # ready: every worker logged its failure and waits for requests; stop
    # waiting early when the master keeps starting workers (a respawn loop)
    n.ready = wait_for(lambda: len(n.log_lines(FAILED)) >= WORKERS
                       and n.wait_ready(timeout=0)
                       or len(n.log_lines("start worker process")) > 10,
                       START_WAIT)
    yield n
    n.stop()
    n.cleanup()


def test_failure_logged_once_per_worker_start(ng):
    assert ng.ready, "workers did not start:\n" + ng.log_text()[-3000:]
    time.sleep(2)               # a window for a respawn to show
    # no respawn loop: the same workers, one message each
    assert len(ng.log_lines(r"start worker process \d+")) == WORKERS
    assert len(ng.log_lines(FAILED)) == WORKERS
    assert len(ng.log_lines(MASTER)) == 1, "one trial, by the master"
    assert len(ng.worker_pids()) == WORKERS
    assert not ng.log_lines(r"exited with code"), ng.log_text()[-3000:]
    assert not ng.log_problems(0, [FAILED, MASTER])


def test_static_location_still_serves(ng):
    for _ in range(3):
        r = ng.get("/static", timeout=30)
        assert r.status == 200
        assert r.body == b"static ok"


def test_jvm_location_answers_500(ng):
    for _ in range(3):
        assert ng.get("/jvm", timeout=30).status == 500
    # and it is not logged again per request
    assert len(ng.log_lines(FAILED)) == WORKERS


# A runtime jar of another version: a class path whose nginx.jvm.Wire says
# another protocol version is refused when the worker binds the runtime.

MISMATCH = r"\[emerg\] .*jvm: nginx-jvm.jar speaks wire protocol 999, this module \d+"


def test_wire_protocol_mismatch_is_refused(tmp_path, mode):
    import subprocess
    from harness import JAVA_HOME, java_classpath
    src = tmp_path / "src" / "nginx" / "jvm"
    src.mkdir(parents=True)
    (src / "Wire.java").write_text(
        "package nginx.jvm; final class Wire { static final int PROTOCOL = 999; }")
    out = tmp_path / "classes"
    subprocess.run([JAVA_HOME + "/bin/javac", "--release", "17", "-d", str(out),
                    str(src / "Wire.java")], check=True)
    n = Nginx(LOCATIONS, classpath=[str(out)] + java_classpath(), mode=mode,
              startup_allow=[MISMATCH])
    with n:
        assert wait_for(lambda: n.log_lines(MISMATCH), 60), n.log_text()[-2000:]
        assert n.get("/static", timeout=30).body == b"static ok"
        assert n.get("/jvm", timeout=30).status == 500
        assert len(n.log_lines(MISMATCH)) == 1
