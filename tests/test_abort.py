"""A handler learns that its client left while it runs (Request.onAbort,
nginx.jvm.request/on-abort), and with jvm_abort_interrupt on its thread
is interrupted: a handler sleeping for 30 s ends within a second of its
client leaving.

Each request is named; the handlers (testapp.Abort, testapp.abort) note
in the worker's memory when they started, when their abort callback ran
and how often, when their thread saw InterruptedException and when they
ended, in System.currentTimeMillis(), which this test compares with the
time it closed its socket (the same clock). The time a test waits for
something is generous; what it asserts is the second.

Sync handlers that sleep run off the loop only (pool, virtual): on the
event loop a sleeping handler would stop the worker, and nothing can
abort a loop handler mid-call (onAbort answers false there). Async
handlers (jvm_async on) are tasks in every mode, the loop's included.
"""

import socket
import struct
import threading
import time

import pytest

from harness import Nginx, request, wait_for

LOCATIONS = """
        location /java/ { jvm_content testapp.Abort; }
        location /java-int/ { jvm_abort_interrupt on;
                              jvm_content testapp.Abort; }
        location /java-async/ { jvm_async on; jvm_abort_interrupt on;
                                jvm_content testapp.Abort; }
        location /ring/ { jvm_content testapp.abort/sleep; }
        location /ring-int/ { jvm_abort_interrupt on;
                              jvm_content testapp.abort/sleep; }
        location /ring-async/ { jvm_async on; jvm_content testapp.abort/wait; }
        location /state/java { jvm_mode loop; jvm_content testapp.Abort; }
        location /state/ring { jvm_mode loop;
                               jvm_content testapp.abort/state; }
        location /live-tasks { jvm_mode loop;
                               jvm_content testapp.offloop/live-tasks; }
        location = /status { jvm_mode loop; jvm_status; }
"""

# enough threads and places for the many clients below; h2c on PORT2
HTTP = """
    jvm_pool_size 40;
    jvm_queue 100;
    jvm_response_timeout 120s;
    server {
        listen 127.0.0.1:@PORT2@ http2;
        location /java/ { jvm_content testapp.Abort; }
        location /java-int/ { jvm_abort_interrupt on;
                              jvm_content testapp.Abort; }
    }
"""

# How soon after the client left the handler must have heard of it (ms),
# and how long the test waits for that before it fails (s).
WITHIN_MS = 1000
WAIT = 60

OFF_LOOP = ("pool", "virtual", "coloop")


def off_loop_only(ng):
    if ng.mode not in OFF_LOOP:
        pytest.skip("a sync handler that sleeps runs off the loop only")


_names = [0]


def fresh(ng, what):
    _names[0] += 1
    return "%s-%s-%d-%d" % (what, ng.mode, _names[0], time.monotonic_ns())


def state(ng, side, name):
    """What the handler noted for request `name`: {key: str}."""
    r = ng.get("/state/%s/state?name=%s" % (side, name))
    assert r.status == 200, r
    return dict(line.split("=", 1) for line in r.text.splitlines() if line)


def side_of(path):
    return "ring" if path.startswith("/ring") else "java"


def open_request(port, path):
    s = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    s.sendall(("GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n"
               % path).encode())
    return s


def started(ng, side, name):
    assert wait_for(lambda: "started" in state(ng, side, name), WAIT), \
        "the handler did not start: %r" % state(ng, side, name)


def leave(s):
    """Closes the client's socket; returns when (ms, the handlers' clock),
    read just before: the handler may hear of it within the millisecond."""
    at = time.time() * 1000
    s.close()
    return at


def live_tasks(ng):
    return ng.get("/live-tasks").text


def metric(ng, name):
    """A figure of jvm_status (each worker publishes them every second)."""
    for line in ng.get("/status").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no " + name)


def in_flight(ng):
    """Requests in flight; the status request counts itself."""
    return metric(ng, "nginx_jvm_requests_in_flight")


def aborted_total(ng):
    return metric(ng, "nginx_jvm_aborted_total")


def settled(ng):
    assert wait_for(lambda: live_tasks(ng) == "0", WAIT), live_tasks(ng)
    assert wait_for(lambda: in_flight(ng) == 1, WAIT), in_flight(ng)


# --- interrupt: a sleeping handler ends within a second ------------------

@pytest.mark.parametrize("path", ["/java-int/sleep", "/ring-int/sleep"])
def test_interrupt_ends_a_sleeping_handler_within_a_second(ng, path):
    off_loop_only(ng)
    side, name = side_of(path), fresh(ng, "int")
    s = open_request(ng.port, "%s?name=%s&ms=30000" % (path, name))
    started(ng, side, name)
    left = leave(s)
    st = wait_for(lambda: (lambda d: "ended" in d and d)(
        state(ng, side, name)), WAIT)
    assert st, "the handler still sleeps: %r" % state(ng, side, name)
    assert st["registered"] == "true"
    assert "slept" not in st
    # the handlers' times are whole milliseconds
    assert -1 < int(st["interruptedAt"]) - left < WITHIN_MS, st
    assert int(st["ended"]) - left < WITHIN_MS, st
    # the callback ran too, once, on an abort thread
    assert wait_for(lambda: state(ng, side, name).get("callbacks") == "1",
                    WAIT), state(ng, side, name)
    st = state(ng, side, name)
    assert int(st["callbackAt"]) - left < WITHIN_MS, st
    assert st["callbackThread"].startswith("nginx-jvm-abort"), st
    settled(ng)


# --- callbacks without interrupt: once, at once; late ones at once -------

@pytest.mark.parametrize("path", ["/java/sleep", "/ring/sleep"])
def test_callback_runs_once_and_the_handler_goes_on(ng, path):
    off_loop_only(ng)
    side, name = side_of(path), fresh(ng, "cb")
    s = open_request(ng.port, "%s?name=%s&ms=2000" % (path, name))
    started(ng, side, name)
    left = leave(s)
    assert wait_for(lambda: state(ng, side, name).get("callbacks") == "1",
                    WAIT), state(ng, side, name)
    st = state(ng, side, name)
    assert int(st["callbackAt"]) - left < WITHIN_MS, st
    assert "ended" not in st, "interrupted without jvm_abort_interrupt"
    # the handler sleeps its time, not interrupted, then sees the abort and
    # registers another callback: that one runs at once
    st = wait_for(lambda: (lambda d: "lateRan" in d and d)(
        state(ng, side, name)), WAIT)
    assert st, state(ng, side, name)
    assert "interruptedAt" not in st and "slept" in st
    assert st["abortedSeen"] == "true" and st["lateRegistered"] == "true"
    assert st["lateRan"] == "1"
    time.sleep(0.3)
    st = state(ng, side, name)
    assert st["callbacks"] == "1" and st["lateRan"] == "1", st
    settled(ng)


@pytest.mark.log_allows(r"an abort callback threw")
def test_a_callback_that_throws_is_logged_and_the_next_runs(ng):
    off_loop_only(ng)
    name = fresh(ng, "throw")
    since = ng.log_size()
    s = open_request(ng.port, "/java-int/throwing?name=%s&ms=30000" % name)
    started(ng, "java", name)
    leave(s)
    assert wait_for(lambda: state(ng, "java", name).get("callbacks") == "1",
                    WAIT), state(ng, "java", name)
    assert ng.wait_log(r"an abort callback threw", since=since, timeout=WAIT)
    log = ng.log_text(since)
    assert "abort-callback-boom" in log and "\tat " in log, log[-2000:]
    settled(ng)
    # the worker serves on
    assert state(ng, "java", name)["ended"]


# --- no callback once the response is complete ---------------------------

@pytest.mark.parametrize("keepalive", [False, True])
def test_a_client_leaving_after_the_response_triggers_nothing(ng, keepalive):
    off_loop_only(ng)
    name = fresh(ng, "after")
    settled(ng)
    before = aborted_total(ng)
    s = socket.create_connection(("127.0.0.1", ng.port), timeout=WAIT)
    s.sendall(("GET /java/quick?name=%s HTTP/1.1\r\nHost: localhost\r\n"
               "%s\r\n" % (name, "" if keepalive else "Connection: close\r\n")
               ).encode())
    got = b""
    while b"quick " + name.encode() not in got:
        b = s.recv(65536)
        assert b, got
        got += b
    assert got.startswith(b"HTTP/1.1 200")
    if keepalive:
        time.sleep(0.2)             # the connection waits for a next request
    s.close()
    time.sleep(0.5)
    st = state(ng, "java", name)
    assert st["registered"] == "true"
    assert "callbacks" not in st, st
    # the request is complete: a callback added now never runs
    assert st["registeredAfterEnd"] == "false"
    assert st["abortedAfterEnd"] == "false"
    time.sleep(0.3)
    assert "callbacks" not in state(ng, "java", name + "-after-end")
    settled(ng)
    time.sleep(1.1)                 # a publication of jvm_status
    assert aborted_total(ng) == before


def test_a_request_that_is_over_reaches_nothing_of_the_next(ng):
    """Requests one after another on one thread (jvm_mode coloop: its
    carried thread, and the task of the one that answered at once, kept
    for the next, Tasks.recycle): X's client leaves mid-request; A answers
    at once, its handler keeping its request and a callback registered;
    B, next, tries A's request (its onAbort, isAborted), then its client
    leaves. Each callback runs for its own request only: X's once, B's
    once, A's never, nor the one B tried to add to A's."""
    off_loop_only(ng)
    x, a, b = (fresh(ng, w) for w in ("x", "a", "b"))
    settled(ng)
    s = open_request(ng.port, "/java-int/sleep?name=%s&ms=30000" % x)
    started(ng, "java", x)
    leave(s)
    assert wait_for(lambda: "ended" in state(ng, "java", x), WAIT), \
        state(ng, "java", x)
    assert ng.get("/java/quick?name=%s" % a).text == "quick " + a
    s = open_request(ng.port, "/java-int/late?name=%s&kept=%s&ms=30000"
                     % (b, a))
    started(ng, "java", b)
    leave(s)
    assert wait_for(lambda: "ended" in state(ng, "java", b), WAIT), \
        state(ng, "java", b)
    time.sleep(0.5)                 # a wrong callback would have run
    sx, sb = state(ng, "java", x), state(ng, "java", b)
    assert sx["callbacks"] == "1", sx
    assert sb["registered"] == "true" and sb["callbacks"] == "1", sb
    assert sb["keptRegistered"] == "false", sb
    assert sb["keptAborted"] == "false", sb
    sa = state(ng, "java", a)
    assert sa["registered"] == "true" and "callbacks" not in sa, sa
    assert sa["registeredAfterEnd"] == "false", sa
    assert sa["abortedAfterEnd"] == "false", sa
    for late in (a + "-late", a + "-after-end"):
        assert "callbacks" not in state(ng, "java", late)
    if ng.mode == "coloop":
        # one carried thread served them all: the case the kept task is for
        assert sx["threadId"] == sa["threadId"] == sb["threadId"], (sx, sa, sb)
    settled(ng)


def test_a_loop_handler_cannot_be_aborted(ng):
    if ng.mode != "loop":
        pytest.skip("the event loop's handlers")
    name = fresh(ng, "loop")
    assert ng.get("/java/quick?name=%s" % name).text == "quick " + name
    st = state(ng, "java", name)
    assert st["registered"] == "false"


# --- asynchronous handlers, every mode -----------------------------------

@pytest.mark.parametrize("path", ["/java-async/wait", "/ring-async/wait"])
def test_an_async_handler_learns_its_client_left(ng, path):
    side, name = side_of(path), fresh(ng, "async")
    s = open_request(ng.port, "%s?name=%s" % (path, name))
    started(ng, side, name)
    assert state(ng, side, name)["registered"] == "true"
    time.sleep(0.2)
    assert "callbacks" not in state(ng, side, name)
    left = leave(s)
    assert wait_for(lambda: state(ng, side, name).get("callbacks") == "1",
                    WAIT), state(ng, side, name)
    assert int(state(ng, side, name)["callbackAt"]) - left < WITHIN_MS
    settled(ng)
    assert state(ng, side, name)["callbacks"] == "1"


def test_a_body_that_goes_on_after_the_handler_learns_it_too(ng):
    """An async writer (server-sent events' shape): the callback runs when
    the client leaves mid-body, and the writer stops."""
    name = fresh(ng, "writer")
    s = open_request(ng.port, "/java-async/writer?name=%s" % name)
    got = b""
    while got.count(b"tick ") < 3:
        b = s.recv(65536)
        assert b, got
        got += b
    assert "callbacks" not in state(ng, "java", name)
    left = leave(s)
    assert wait_for(lambda: state(ng, "java", name).get("callbacks") == "1",
                    WAIT), state(ng, "java", name)
    st = state(ng, "java", name)
    assert int(st["callbackAt"]) - left < WITHIN_MS, st
    assert wait_for(lambda: "writerStopped" in state(ng, "java", name), WAIT)
    settled(ng)


def test_a_streamed_body_on_the_handlers_thread(ng):
    off_loop_only(ng)
    name = fresh(ng, "stream")
    s = open_request(ng.port, "/java/stream?name=%s" % name)
    got = b""
    while got.count(b"line ") < 3:
        b = s.recv(65536)
        assert b, got
        got += b
    left = leave(s)
    assert wait_for(lambda: state(ng, "java", name).get("callbacks") == "1",
                    WAIT), state(ng, "java", name)
    assert int(state(ng, "java", name)["callbackAt"]) - left < WITHIN_MS
    settled(ng)


# --- many clients, and clients that vanish early ------------------------

def test_many_clients_leaving_at_once(ng):
    off_loop_only(ng)
    n = 30
    names = [fresh(ng, "many") for _ in range(n)]
    paths = ["/java-int/sleep", "/ring-int/sleep"]
    before = aborted_total(ng)
    socks = [open_request(ng.port, "%s?name=%s&ms=30000"
                          % (paths[i % 2], names[i]))
             for i in range(n)]
    for i in range(n):
        started(ng, side_of(paths[i % 2]), names[i])
    left = time.time() * 1000
    for s in socks:
        s.close()

    def all_ended():
        return all("ended" in state(ng, side_of(paths[i % 2]), names[i])
                   for i in range(n))

    assert wait_for(all_ended, WAIT)
    for i in range(n):
        side = side_of(paths[i % 2])
        assert wait_for(lambda: state(ng, side, names[i]).get("callbacks")
                        == "1", WAIT), state(ng, side, names[i])
        st = state(ng, side, names[i])
        assert "slept" not in st
        # a generous second for 30 at once on two cores
        assert int(st["interruptedAt"]) - left < 2 * WITHIN_MS, st
    settled(ng)
    # jvm_status counts them, once each
    assert wait_for(lambda: aborted_total(ng) - before == n, WAIT), \
        aborted_total(ng) - before


def test_a_client_that_half_closes_with_its_request(ng):
    """The FIN comes with the request: the task is aborted at once, before
    or while its handler runs, never left for 30 s."""
    off_loop_only(ng)
    name = fresh(ng, "halfclose")
    s = socket.create_connection(("127.0.0.1", ng.port), timeout=WAIT)
    s.sendall(("GET /java-int/sleep?name=%s&ms=30000 HTTP/1.1\r\n"
               "Host: localhost\r\n\r\n" % name).encode())
    s.shutdown(socket.SHUT_WR)
    sent = time.time() * 1000
    # nginx closes: a 499 has no response
    assert s.recv(65536) == b""
    s.close()
    settled(ng)
    st = state(ng, "java", name)
    if "started" in st:
        assert "slept" not in st, st
        assert int(st["ended"]) - sent < WAIT * 1000 / 3, st
        # the callback runs on an abort thread, beside the interrupt: the
        # handler can end (and its task settle) before the callback ran
        assert wait_for(lambda: state(ng, "java", name).get("callbacks")
                        == "1", WAIT), state(ng, "java", name)


def test_clients_that_vanish_at_each_step(ng):
    """Before the request line ends, mid-header, after the request, and
    with unexpected bytes after it (a pipelined half-request): every task
    ends, the worker serves on."""
    off_loop_only(ng)
    name = fresh(ng, "vanish")
    whole = ("GET /java-int/sleep?name=%s&ms=30000 HTTP/1.1\r\n"
             "Host: localhost\r\n\r\n" % name).encode()
    for cut in (10, len(whole) - 5):
        s = socket.create_connection(("127.0.0.1", ng.port), timeout=WAIT)
        s.sendall(whole[:cut])
        time.sleep(0.1)
        s.close()
    s = open_request(ng.port, "/java-int/sleep?name=%s&ms=30000" % name)
    started(ng, "java", name)
    s.sendall(b"GET /java/quick HTTP/1.1\r\nHost: loc")   # pipelined, cut
    time.sleep(0.3)
    assert "callbacks" not in state(ng, "java", name), \
        "pipelined bytes are not a leaving"
    left = leave(s)
    st = wait_for(lambda: (lambda d: "ended" in d and d)(
        state(ng, "java", name)), WAIT)
    assert st and int(st["interruptedAt"]) - left < WITHIN_MS, st
    settled(ng)
    assert ng.get("/java/quick?name=%s-2" % name).status == 200


# --- a thread of the pool takes no interrupt to its next request ----------

def test_the_interrupt_stays_with_its_request(mode):
    if mode != "pool":
        pytest.skip("a pool of one thread")
    locations = """
        location /java-int/ { jvm_abort_interrupt on;
                              jvm_content testapp.Abort; }
        location /state/java { jvm_mode loop; jvm_content testapp.Abort; }
    """
    with Nginx(locations, http="jvm_pool_size 1;", mode=mode) as n:
        name = fresh(n, "one")
        s = open_request(n.port, "/java-int/sleep?name=%s&ms=30000" % name)
        started(n, "java", name)
        leave(s)
        assert wait_for(lambda: "ended" in state(n, "java", name), WAIT)
        for i in range(3):
            # the same (only) thread sleeps 300 ms undisturbed
            r = request(n.port, "GET", "/java-int/sleep?name=%s-%d&ms=300"
                        % (name, i))
            assert r.status == 200
            st = state(n, "java", "%s-%d" % (name, i))
            assert "slept" in st and "interruptedAt" not in st, st
            assert st["thread"] == state(n, "java", name)["thread"]
        assert n.log_problems() == []


# --- HTTP/2: a reset stream is a client that left --------------------------

def h2_frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) \
        + struct.pack(">I", stream) + payload


def h2_get(stream, path):
    def literal(index, value):
        # literal without indexing, indexed name; no Huffman
        v = value.encode()
        assert len(v) < 127
        return bytes([index, len(v)]) + v
    block = b"\x82\x86" + literal(4, path) + literal(1, "localhost")
    return h2_frame(1, 0x05, stream, block)     # END_STREAM | END_HEADERS


def h2_read_until(s, pred, deadline):
    buf = b""
    frames = []
    while time.monotonic() < deadline:
        while len(buf) >= 9:
            length = struct.unpack(">I", b"\0" + buf[:3])[0]
            if len(buf) < 9 + length:
                break
            kind, flags = buf[3], buf[4]
            stream = struct.unpack(">I", buf[5:9])[0] & 0x7fffffff
            frames.append((kind, flags, stream, buf[9:9 + length]))
            buf = buf[9 + length:]
            if pred(frames[-1]):
                return frames
        b = s.recv(65536)
        if not b:
            break
        buf += b
    raise AssertionError("no such frame; got %r" % frames)


def test_an_http2_stream_reset_is_a_client_that_left(ng):
    off_loop_only(ng)
    name = fresh(ng, "h2")
    s = socket.create_connection(("127.0.0.1", ng.port2), timeout=WAIT)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(4, 0, 0))
    s.sendall(h2_get(1, "/java-int/sleep?name=%s&ms=30000" % name))
    started(ng, "java", name)
    s.sendall(h2_frame(4, 1, 0))                     # SETTINGS ACK
    left = time.time() * 1000
    s.sendall(h2_frame(3, 0, 1, struct.pack(">I", 8)))   # RST_STREAM CANCEL
    st = wait_for(lambda: (lambda d: "ended" in d and d)(
        state(ng, "java", name)), WAIT)
    assert st, state(ng, "java", name)
    assert int(st["interruptedAt"]) - left < WITHIN_MS, st
    assert wait_for(lambda: state(ng, "java", name).get("callbacks") == "1",
                    WAIT)
    # the connection itself is fine: its next stream is answered
    s.sendall(h2_get(3, "/java/quick?name=%s-next" % name))
    frames = h2_read_until(s, lambda f: f[0] == 1 and f[2] == 3,
                           time.monotonic() + WAIT)
    assert frames[-1][3][:1] == b"\x88", frames[-1]     # :status 200
    s.close()
    settled(ng)


# --- configuration ---------------------------------------------------------

def test_a_wrong_value_fails_nginx_t():
    n = Nginx("location / { jvm_abort_interrupt maybe;"
              " jvm_content testapp.Abort; }", classpath="java")
    r = n.test_config()
    n.cleanup()
    assert r.returncode != 0
    assert 'invalid value "maybe" in "jvm_abort_interrupt" directive' \
        in r.stderr, r.stderr
