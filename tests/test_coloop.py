"""jvm_mode coloop: virtual threads carried by the worker's event loop
(nginx.jvm.LoopScheduler), on the Temurin 25 JDK.

A handler parks (Thread.sleep, a socket's read, a subrequest's future) and
resumes on the event loop's own thread: /proc/thread-self, read by the
handler, names the kernel's thread, which for the loop is the worker's pid.
A handler that spins holds the loop: the watchdog names it in a [warn] with
its stack and counts it in jvm_status; one that yields lets static files
through. Without the JDK's internal builder (JDK 17) the location runs
as jvm_mode virtual after one [warn]; the builder, reached through JNI in
a worker, needs no --add-opens (a plain JVM's self-test, by reflection,
does).
"""

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from harness import JAR, Nginx, read_edn, request, wait_for

TEMURIN25 = Path("/usr/lib/jvm/temurin-25-jdk-amd64")
JDK17 = Path("/usr/lib/jvm/java-17-openjdk-amd64")
LIBJVM25 = TEMURIN25 / "lib/server/libjvm.so"
LIBJVM17 = JDK17 / "lib/server/libjvm.so"

pytestmark = pytest.mark.skipif(
    not LIBJVM25.exists(),
    reason="jvm_mode coloop is tested on the Temurin 25 JDK, not installed "
           "at %s" % TEMURIN25)

FALLBACK = r"jvm_mode coloop cannot be had in this JVM"
HELD = r"has held the event loop for \d+ ms"

LOCATIONS = """
        location /hello { jvm_content testapp.Coloop$Hello; }
        location /where { jvm_content testapp.Coloop$Where; }
        location /opens { jvm_content testapp.Coloop$Opens; }
        location /sleep { jvm_content testapp.Coloop$Sleep; }
        location /sock { jvm_content testapp.Coloop$Sock; }
        location /subreq { jvm_content testapp.Coloop$Sub; }
        location /sub/ { internal; return 200 "from-sub"; }
        location /spin { jvm_content testapp.Coloop$Spin; }
        location /yield { jvm_content testapp.Coloop$YieldSpin; }
        location /ring { jvm_content testapp.offloop/fast; }
        location /static { return 200 "static"; }
        location /ws { jvm_content testapp.Coloop$WsSleep; }
        location /timer { jvm_content testapp.Coloop$Timer; }
        location /clj-timers { jvm_content testapp.timers/handler; }
        location = /status { jvm_status; jvm_mode loop; }
"""

HTTP = """    jvm_mode coloop;
    jvm_path %s;
    jvm_options -Dnginx.jvm.watchdog=100;""" % LIBJVM25


@pytest.fixture(scope="module")
def ng():
    with Nginx(LOCATIONS, http=HTTP) as n:
        yield n


def body(reply):
    assert reply.status == 200, reply
    return reply.body.decode()


def test_no_fallback_and_the_option_only_for_coloop(ng):
    assert FALLBACK not in ng.log_text()
    assert body(ng.get("/where")) == "loop nginx-jvm-coloop"


def test_answers_at_once(ng):
    for _ in range(20):
        assert body(ng.get("/hello")) == "hello"


def test_sleep_parks_and_resumes_on_the_loop(ng):
    t = time.monotonic()
    assert body(ng.get("/sleep?ms=50")) == "loop loop"
    assert time.monotonic() - t >= 0.05


def test_many_sleepers_share_the_loop(ng):
    """100 handlers that sleep 200 ms each, at once, on one loop: about
    200 ms in all, not 20 s."""
    replies = [None] * 100

    def one(i):
        replies[i] = request(ng.port, "GET", "/sleep?ms=200", timeout=30)

    t = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(100)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    took = time.monotonic() - t
    assert all(body(r) == "loop loop" for r in replies)
    assert took < 5, took


def test_socket_io_parks_and_resumes_on_the_loop(ng):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    port = srv.getsockname()[1]

    def serve():
        c, _ = srv.accept()
        with c:
            c.recv(100)
            time.sleep(0.1)         # the handler parks on its read
            c.sendall(b"pong\n")

    th = threading.Thread(target=serve)
    th.start()
    try:
        assert body(ng.get("/sock?port=%d" % port)) == "loop loop pong"
    finally:
        th.join(10)
        srv.close()


def test_subrequest_future_on_the_loop(ng):
    """The future's get parks; the subrequest runs on the loop, which
    completes the future and resumes the handler; the variable after it is
    read directly (the handler runs on the loop)."""
    assert body(ng.get("/subreq")) == "loop loop 200 from-sub /subreq"


def static_while(ng, busy_for):
    """The slowest of the static answers fetched one after another for
    `busy_for` seconds (the worker's loop is carrying a parked thread)."""
    slowest, end = 0.0, time.monotonic() + busy_for
    while time.monotonic() < end:
        t = time.monotonic()
        assert body(ng.get("/static")) == "static"
        slowest = max(slowest, time.monotonic() - t)
    return slowest


def test_websocket_listener_parks_on_the_loop(ng):
    """A coloop location's WebSocket listener runs on a virtual thread the
    loop carries: its sleep parks it, the worker's one loop serves static
    files meanwhile, and it resumes on the loop."""
    connect = pytest.importorskip("websockets.sync.client").connect
    with connect("ws://127.0.0.1:%d/ws" % ng.port, open_timeout=10) as ws:
        t = time.monotonic()
        ws.send("400")
        slowest = static_while(ng, 0.3)
        assert ws.recv(timeout=10) == "loop loop nginx-jvm-coloop"
        assert time.monotonic() - t >= 0.4
        ws.send("0")
        assert ws.recv(timeout=10) == "loop loop nginx-jvm-coloop"
    assert slowest < 0.1, slowest


def test_coloop_timer_parks_on_the_loop(ng):
    assert body(ng.get("/timer?ms=400")) == "started"
    slowest = static_while(ng, 0.3)
    assert wait_for(lambda: "loop loop nginx-jvm-coloop" in body(ng.get("/timer?result")), 10)
    assert slowest < 0.1, slowest


def test_clojure_coloop_timer(ng):
    assert body(ng.get("/clj-timers?coloop")) == "started"
    assert wait_for(lambda: read_edn(body(ng.get("/clj-timers?state"))).get(
        ":coloop"), 5) == "nginx-jvm-coloop"


def test_coloop_interval_timer_runs_never_pile_up(ng):
    """Runs of 200 ms every 50 ms: one at a time, the ticks in between
    skipped."""
    assert body(ng.get("/timer?every=50&ms=200")) == "every 50"
    time.sleep(1.2)
    assert body(ng.get("/timer?cancel")) == "cancelled true"
    result = body(ng.get("/timer?result"))
    runs = int(result.split("runs=")[1].split()[0])
    assert "most=1" in result, result
    assert 3 <= runs <= 7, result


def test_ring_handler(ng):
    assert body(ng.get("/ring")) == "fast on nginx-jvm-coloop"


def status_value(ng, name):
    text = body(ng.get("/status"))
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError("no %s in:\n%s" % (name, text))


def static_times(ng, stop, out):
    while not stop.is_set():
        t = time.monotonic()
        r = request(ng.port, "GET", "/static", timeout=10)
        assert r.status == 200
        out.append(time.monotonic() - t)
        time.sleep(0.005)


def test_yielding_spinner_does_not_starve_static_files(ng):
    assert body(ng.get("/yield?ms=100")) == "yielded loop"     # compiled
    stop, times = threading.Event(), []
    th = threading.Thread(target=static_times, args=(ng, stop, times))
    th.start()
    try:
        time.sleep(0.05)
        assert body(ng.get("/yield?ms=500")) == "yielded loop"
    finally:
        stop.set()
        th.join()
    assert len(times) > 10, times
    # well under the spinner's 500 ms: the loop served them in between
    assert max(times) < 0.15, sorted(times)[-5:]


def test_spinner_is_named_by_the_watchdog(ng):
    """A handler that spins 400 ms holds the loop (nothing can take it back):
    a static file waits at most that long, and the watchdog names the
    handler with its stack, once, and counts it."""
    before = status_value(ng, "nginx_jvm_loop_held_total")
    since = ng.log_size()
    stop, times = threading.Event(), []
    th = threading.Thread(target=static_times, args=(ng, stop, times))
    th.start()
    try:
        time.sleep(0.05)
        assert body(ng.get("/spin?ms=400")).startswith("spun ")
        time.sleep(0.05)
    finally:
        stop.set()
        th.join()
    assert max(times) < 0.4 + 0.2, sorted(times)[-5:]
    log = ng.log_text(since)
    warns = [l for l in log.splitlines() if "has held the event loop" in l]
    assert len(warns) == 1, log
    assert "[warn]" in warns[0] and "testapp.Coloop$Spin" in warns[0], warns
    assert "at testapp.Coloop$Spin.handle" in log, log
    time.sleep(1.2)                 # published every second
    assert status_value(ng, "nginx_jvm_loop_held_total") == before + 1


def test_status_counts_coloop_responses(ng):
    ng.get("/hello")
    time.sleep(1.2)
    assert status_value(
        ng, 'nginx_jvm_requests_total{mode="coloop",status="2xx"}') > 0


# --- the fallback ---------------------------------------------------------


def self_test(java, *options):
    return subprocess.run([str(java)] + list(options)
                          + ["-cp", str(JAR), "nginx.jvm.LoopScheduler"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=60)


def test_self_test_in_a_plain_jvm():
    """The same self-test the worker runs, in a JVM started by `java`:
    with the option it passes; without it, it says which option is missing."""
    ok = self_test(TEMURIN25 / "bin/java",
                   "--add-opens=java.base/java.lang=ALL-UNNAMED")
    assert ok.returncode == 0 and ok.stdout.startswith("coloop: yes"), ok.stdout
    no = self_test(TEMURIN25 / "bin/java")
    assert no.returncode == 1, no.stdout
    assert "started without --add-opens=java.base/java.lang=ALL-UNNAMED" \
        in no.stdout, no.stdout


@pytest.mark.skipif(not LIBJVM17.exists(), reason="no JDK 17 at %s" % JDK17)
def test_self_test_on_jdk17():
    no = self_test(JDK17 / "bin/java",
                   "--add-opens=java.base/java.lang=ALL-UNNAMED")
    assert no.returncode == 1, no.stdout
    assert "has no virtual-thread builder" in no.stdout, no.stdout


@pytest.mark.skipif(not LIBJVM17.exists(), reason="no JDK 17 at %s" % JDK17)
def test_fallback_on_jdk17():
    """JDK 17: one [warn] that coloop cannot be had, then the locations run
    as jvm_mode virtual, which JDK 17 cannot have either: 503, as for a
    virtual location (said once at start)."""
    virtual_missing = r"jvm_mode virtual needs a JDK 21 or newer"
    with Nginx("location /where { jvm_content testapp.Coloop$Where; }",
               http="    jvm_mode coloop;\n    jvm_path %s;" % LIBJVM17,
               classpath="java", startup_allow=[virtual_missing]) as n:
        log = n.log_text()
        warns = [l for l in log.splitlines() if FALLBACK in l]
        assert len(warns) == 1 and "[warn]" in warns[0], log
        assert "runs as jvm_mode virtual" in warns[0] or \
            "run as jvm_mode virtual" in warns[0], warns
        assert n.get("/where").status == 503


def test_java_lang_stays_closed(ng):
    """The worker reaches the JDK's builder through JNI: no --add-opens,
    java.lang stays closed to the handlers, as in any nginx-jvm worker."""
    assert body(ng.get("/opens")) == "loop false"


def test_class_cache():
    """jvm_cache: the archive is built and mapped with coloop as without
    (an --add-opens would make the JVM refuse the archive's module graph,
    with [error] lines)."""
    cache = tempfile.mkdtemp(prefix="nginx-jvm-coloop-cache-")
    os.chmod(cache, 0o755)
    try:
        for _ in range(2):          # built, then used
            with Nginx("location /where { jvm_content testapp.Coloop$Where; }",
                       http=HTTP + "\n    jvm_cache %s;" % cache) as n:
                assert body(n.get("/where")) == "loop nginx-jvm-coloop"
                with open("/proc/%d/maps" % n.worker_pids()[0]) as f:
                    assert cache in f.read()      # its archive
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def test_reload_and_quit_with_sleepers_in_flight():
    """Handlers parked on the loop get their whole response across a
    reload and a graceful quit; the old workers then exit."""
    from harness import alive, wait_for
    with Nginx(LOCATIONS, http=HTTP) as n:
        for action in ("reload", "quit"):
            old = n.worker_pids()
            replies = [None] * 20

            def one(i):
                replies[i] = request(n.port, "GET", "/sleep?ms=1500",
                                     timeout=30)

            threads = [threading.Thread(target=one, args=(i,))
                       for i in range(20)]
            for th in threads:
                th.start()
            time.sleep(0.5)
            assert n.control(action).returncode == 0
            for th in threads:
                th.join()
            assert [body(r) for r in replies] == ["loop loop"] * 20
            if action == "reload":
                assert wait_for(lambda: not any(alive(p) for p in old), 15)
                assert n.wait_ready(timeout=30, exclude=old)
        assert wait_for(lambda: n.proc.poll() is not None, 15)
