"""WebSockets (RFC 6455) through real clients against a real nginx: the
handshake, messages both ways, fragments and control frames, protocol
errors and their close codes, the listener's events and threads, Ring's
and the Java API, back-pressure, timeouts, TLS, graceful quit, leaks."""

import base64
import hashlib
import os
import shutil
import socket
import ssl
import struct
import threading
import time

import pytest

websockets = pytest.importorskip("websockets")
from websockets.sync.client import connect  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402

from harness import (SANITIZED, Nginx, data_segments_in,  # noqa: E402
                     read_edn, read_ws_frame,
                     TLS_SERVER, sanitized_rss, server_cert, wait_for,
                     ws_close_code, ws_expect_close, ws_frame, ws_handshake)

LOCATIONS = """
        location /ws/echo { jvm_content testapp.ws/echo; }
        location /ws/small { jvm_websocket_max_message 1k;
                             jvm_content testapp.ws/echo; }
        location /ws/idle { jvm_websocket_idle_timeout 1s;
                            jvm_content testapp.ws/echo; }
        location /ws/ping { jvm_websocket_ping_interval 300ms;
                            jvm_content testapp.ws/echo; }
        location /ws/pings { jvm_content testapp.ws/pings; }
        location /ws/async { jvm_async on; jvm_content testapp.ws/async-echo; }
        location /ws/java { jvm_content testapp.WsEcho; }
        location /ws/events { jvm_content testapp.ws/events-of; }
        location /live-sockets { jvm_content testapp.ws/live-sockets; }
"""

HTTP = TLS_SERVER + """
        location /ws/echo { jvm_content testapp.ws/echo; }
    }
"""

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


@pytest.fixture(scope="module")
def ng(mode):
    n = Nginx(LOCATIONS, http=HTTP, mode=mode)
    server_cert(n.prefix)
    with n:
        yield n


def url(ng, path):
    return "ws://127.0.0.1:%d%s" % (ng.port, path)


def events(ng, name):
    def get():
        return read_edn(ng.get("/ws/events?name=" + name).text)
    return get


# --- a raw client, for frames the libraries will not send ---------------

def handshake(port, path="/ws/echo", **kwargs):
    return ws_handshake(port, path, **kwargs)


def read_frame(s):
    b0, payload = read_ws_frame(s)
    return b0 & 0x0F, bool(b0 & 0x80), payload


# frames, close codes and the close handshake: the harness's
frame, close_code, expect_close = ws_frame, ws_close_code, ws_expect_close


# --- the handshake --------------------------------------------------------

def test_handshake_answers_101_with_the_accept_key(ng):
    s, head = handshake(ng.port)
    with s:
        status, _, rest = head.partition(b"\r\n")
        assert status == b"HTTP/1.1 101 Switching Protocols", head
        accept = base64.b64encode(hashlib.sha1(b"dGhlIHNhbXBsZSBub25jZQ==" + GUID).digest())
        assert b"Sec-WebSocket-Accept: " + accept + b"\r\n" in head
        assert b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" == accept  # RFC 6455's example
        assert b"\r\nUpgrade: websocket\r\n" in head
        assert b"onnection: upgrade\r\n" in head.lower().replace(b"connection", b"onnection")
        assert b"Content-Length" not in head and b"chunked" not in head
        s.sendall(frame(1, b"hi"))
        assert read_frame(s) == (1, True, b"hi")


def test_wrong_version_answers_426_with_the_version(ng):
    s, head = handshake(ng.port, version=b"8")
    with s:
        assert head.startswith(b"HTTP/1.1 426"), head
        assert b"Sec-WebSocket-Version: 13\r\n" in head


@pytest.mark.parametrize("key", [b"short", b"dGhlIHNhbXBsZSBub25jZQ"])
def test_bad_key_answers_400(ng, key):
    s, head = handshake(ng.port, key=key)
    with s:
        assert head.startswith(b"HTTP/1.1 400"), head


def test_plain_request_reaches_the_handler(ng):
    r = ng.get("/ws/echo")
    assert r.status == 200
    assert r.text == "not a websocket request; websocket? false"


def test_subprotocol_negotiation(ng):
    with connect(url(ng, "/ws/echo"), subprotocols=["x-other", "chat"]) as c:
        assert c.subprotocol == "chat"
    with connect(url(ng, "/ws/echo")) as c:
        assert c.subprotocol is None


# --- messages -------------------------------------------------------------

def test_text_and_binary_echo(ng):
    with connect(url(ng, "/ws/echo")) as c:
        for text in ["hello", "", "é€😀" * 100, "x" * 70000]:
            c.send(text)
            assert c.recv(timeout=10) == text
        data = bytes(range(256)) * 300
        c.send(data)
        assert c.recv(timeout=10) == data


def test_java_listener(ng):
    with connect(url(ng, "/ws/java")) as c:
        c.send("shout")
        assert c.recv(timeout=10) == "SHOUT"
        c.send(b"\x00\x01\xff")
        assert c.recv(timeout=10) == b"\x00\x01\xff"


def test_async_handler_upgrades(ng):
    with connect(url(ng, "/ws/async")) as c:
        c.send("later")
        assert c.recv(timeout=10) == "later"


def test_fragments_with_a_ping_between(ng):
    s, head = handshake(ng.port)
    with s:
        assert b" 101 " in head
        s.sendall(frame(1, "frag".encode(), fin=False)
                  + frame(9, b"are you there")
                  + frame(0, "ment".encode(), fin=False)
                  + frame(0, "ed é".encode()))
        assert read_frame(s) == (10, True, b"are you there")
        assert read_frame(s) == (1, True, "fragmented é".encode())


def test_utf8_split_across_frames(ng):
    s, _ = handshake(ng.port)
    with s:
        e = "€".encode()
        s.sendall(frame(1, e[:1], fin=False))
        time.sleep(0.05)
        s.sendall(frame(0, e[1:]))
        assert read_frame(s) == (1, True, e)


def test_messages_from_another_thread_keep_their_order(ng):
    with connect(url(ng, "/ws/echo")) as c:
        c.send("burst 2000")
        got = [c.recv(timeout=20) for _ in range(2001)]
        assert got == ["m%d" % i for i in range(2000)] + ["done"]


def test_send_async_succeeds(ng):
    name = "async-%s" % ng.mode
    with connect(url(ng, "/ws/echo?name=" + name)) as c:
        c.send("async payload")
        assert c.recv(timeout=10) == "payload"
    assert wait_for(lambda: [":sent"] in [list(map(str, e)) for e in events(ng, name)()], 60)


def test_listener_thread_follows_the_mode(ng):
    with connect(url(ng, "/ws/echo")) as c:
        c.send("thread")
        name = c.recv(timeout=10)
    if ng.mode == "loop":
        assert name == "main", "the event loop's thread"
    else:
        assert name != "main"


# --- events and close -------------------------------------------------------

def test_client_close_events_in_order(ng):
    name = "client-close-%s" % ng.mode
    with connect(url(ng, "/ws/echo?name=" + name)) as c:
        c.send("one")
        c.recv(timeout=10)
        c.close(code=1000, reason="done")
    get = events(ng, name)
    assert wait_for(lambda: len(get()) == 3, 60), get()
    ev = get()
    assert [str(e[0]) for e in ev] == [":open", ":message", ":close"]
    assert ev[2][1:] == [1000, "done"]


def test_server_close_with_code_and_reason(ng):
    name = "server-close-%s" % ng.mode
    with connect(url(ng, "/ws/echo?name=" + name)) as c:
        c.send("close")
        with pytest.raises(ConnectionClosed):
            c.recv(timeout=10)
        assert c.close_code == 4000
        assert c.close_reason == "bye"
    get = events(ng, name)
    assert wait_for(lambda: get() and str(get()[-1][0]) == ":close", 60), get()
    assert get()[-1][1] == 4000


def test_abrupt_disconnect_is_1006(ng):
    name = "abrupt-%s" % ng.mode
    s, _ = handshake(ng.port, "/ws/echo?name=" + name)
    s.sendall(frame(1, b"x"))
    assert read_frame(s) == (1, True, b"x")
    s.close()
    get = events(ng, name)
    assert wait_for(lambda: get() and str(get()[-1][0]) == ":close", 60), get()
    closes = [e for e in get() if str(e[0]) == ":close"]
    assert len(closes) == 1 and closes[0][1] == 1006


@pytest.mark.log_allows(r"\[error\].*nginx\.jvm\.WebSockets: a websocket listener threw")
def test_listener_that_throws_closes_with_1011(ng):
    s, _ = handshake(ng.port)
    with s:
        s.sendall(frame(1, b"throw"))
        expect_close(s, 1011)


# --- protocol errors --------------------------------------------------------

@pytest.mark.parametrize("data, code", [
    (frame(1, b"x", mask=False), 1002),                  # unmasked
    (frame(1, b"x", rsv=4), 1002),                       # reserved bit
    (frame(3, b"x"), 1002),                              # reserved opcode
    (frame(9, b"x" * 126), 1002),                        # control frame > 125
    (frame(9, b"x", fin=False), 1002),                   # fragmented control
    (frame(0, b"x"), 1002),                              # continuation alone
    (frame(1, b"a", fin=False) + frame(1, b"b"), 1002),  # new message mid-way
    (frame(1, b"\xff\xfe"), 1007),                       # invalid UTF-8
    (frame(1, b"\xed\xa0\x80"), 1007),                   # a surrogate
    (frame(8, b"\x03\xe8\xff"), 1007),                   # bad close reason
    (frame(8, struct.pack("!H", 1005)), 1002),           # reserved close code
    (frame(8, b"\x03"), 1002),                           # one-byte close
], ids=["unmasked", "reserved-bit", "reserved-opcode", "long-control",
        "fragmented-control", "lone-continuation", "new-message-mid-way",
        "invalid-utf8", "surrogate", "bad-close-reason", "reserved-close-code",
        "one-byte-close"])     # names, not the frames' random masks: every
# pytest-xdist process must collect the same test ids
def test_protocol_errors(ng, data, code):
    s, _ = handshake(ng.port)
    with s:
        s.sendall(data)
        expect_close(s, code)


def test_message_too_big_is_refused_before_it_is_kept(ng):
    s, _ = handshake(ng.port, "/ws/small")
    with s:
        s.sendall(frame(2, b"x" * 1024))
        assert read_frame(s) == (2, True, b"x" * 1024)
        # only the header of a huge frame: refused before any payload
        s.sendall(struct.pack("!BBQ", 0x82, 0x80 | 127, 1 << 40) + b"mask")
        expect_close(s, 1009)


def test_fragments_over_the_limit_are_refused(ng):
    s, _ = handshake(ng.port, "/ws/small")
    with s:
        s.sendall(frame(2, b"x" * 1000, fin=False) + frame(0, b"x" * 100))
        expect_close(s, 1009)


def test_close_echoes_the_code(ng):
    s, _ = handshake(ng.port)
    with s:
        s.sendall(frame(8, struct.pack("!H", 3001) + b"why"))
        op, _, payload = read_frame(s)
        assert op == 8 and close_code(payload) == 3001
        s.settimeout(5)
        assert s.recv(10) == b""


# --- pings, timeouts ----------------------------------------------------------

def test_automatic_pong(ng):
    s, _ = handshake(ng.port)
    with s:
        s.sendall(frame(9, b"data"))
        assert read_frame(s) == (10, True, b"data")


def test_ping_listener_answers_itself(ng):
    s, _ = handshake(ng.port, "/ws/pings")
    with s:
        s.sendall(frame(9, b"hey"))
        assert read_frame(s) == (1, True, b"ping:hey"), "no automatic pong"


def test_idle_timeout_closes_with_1001(ng):
    s, _ = handshake(ng.port, "/ws/idle")
    with s:
        s.settimeout(5)
        start = time.monotonic()
        op, _, payload = read_frame(s)
        assert op == 8 and close_code(payload) == 1001
        assert time.monotonic() - start >= 0.8


def test_keepalive_pings(ng):
    name = "pings-%s" % ng.mode
    get = events(ng, name)

    def pongs():
        return [e for e in get() if str(e[0]) == ":pong"]

    with connect(url(ng, "/ws/ping?name=" + name)) as c:
        # pings every 300 ms, each answered by the client: two of them
        assert wait_for(lambda: len(pongs()) >= 2, 60), \
            "the client answered the server's pings: %r" % get()
        c.send("still here")
        assert c.recv(timeout=10) == "still here"


# --- TLS, back-pressure, lifecycle ---------------------------------------

def test_wss(ng):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with connect("wss://127.0.0.1:%d/ws/echo" % ng.port2, ssl=ctx) as c:
        c.send("over tls")
        assert c.recv(timeout=10) == "over tls"
        c.send("y" * 100000)
        assert c.recv(timeout=10) == "y" * 100000


def test_echoes_of_a_batch_leave_together(ng, mode):
    """16 messages in one write, echoed by the listener: the echoes come in
    order, and on the loop in at most 3 data segments (the first alone, the
    rest corked together; 12 of 16 without, measured), five times on one connection.  The
    other modes' listeners answer on their threads, each frame when it is
    made: echoed, not counted."""
    s, _ = handshake(ng.port)
    with s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.settimeout(10)
        for round in range(5):
            before = data_segments_in(s)
            texts = [b"r%dm%d" % (round, i) for i in range(16)]
            s.sendall(b"".join(frame(1, t) for t in texts))
            got = [read_frame(s) for _ in texts]
            segments = data_segments_in(s) - before
            assert got == [(1, True, t) for t in texts]
            print("round", round, segments)
            if mode == "loop":
                assert 1 <= segments <= 3, \
                    "16 echoes came in %d segments" % segments


# off the loop, the echo listener's send to a client already gone throws
# ("the WebSocket is closed"), and a listener that throws is logged
@pytest.mark.log_allows(r"\[error\].*nginx\.jvm\.WebSockets: a websocket listener "
                        r"threw: java\.io\.IOException: the WebSocket is closed")
def test_clients_that_leave_mid_batch(ng):
    """50 clients send 16 messages and reset the connection at once, 50
    more half-close it after sending: the cork of a connection gone by the
    push is skipped (its slot may serve another by then), and the worker
    echoes on."""
    batch = b"".join(frame(1, b"m%d" % i) for i in range(16))
    for _ in range(50):
        s, _ = handshake(ng.port)
        s.sendall(batch)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))
        s.close()
    for _ in range(50):
        s, _ = handshake(ng.port)
        with s:
            s.sendall(batch)
            s.shutdown(socket.SHUT_WR)
            s.settimeout(10)
            got = []
            try:
                while True:
                    op, _, payload = read_frame(s)
                    if op != 1:
                        break
                    got.append(payload)
            except (EOFError, OSError):
                pass
            # the echoes that came are the messages' first ones, in order
            assert got == [b"m%d" % i for i in range(len(got))]
    with connect(url(ng, "/ws/echo")) as c:
        c.send("still")
        assert c.recv(timeout=10) == "still"


def test_slow_reader_costs_no_unbounded_memory(ng):
    """A client that reads nothing while the server sends 200,000 messages:
    the burst blocks (or fails) on the bounded queue, the worker's memory
    stays bounded, and the connection still works once the client reads."""
    s, _ = handshake(ng.port)
    with s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(frame(1, b"burst 200000"))
        time.sleep(2)
        s.settimeout(30)
        got = 0
        while True:
            op, _, payload = read_frame(s)
            assert op == 1
            if payload == b"done":
                break
            got += 1
        assert got == 200000


def test_quit_sends_1001_to_open_sockets(mode):
    with Nginx(LOCATIONS, mode=mode) as n:
        s, head = handshake(n.port)
        assert b" 101 " in head
        s.sendall(frame(1, b"before quit"))
        assert read_frame(s)[2] == b"before quit"
        workers = n.worker_pids()
        n.control("quit")
        s.settimeout(10)
        op, _, payload = read_frame(s)
        assert op == 8 and close_code(payload) == 1001
        s.sendall(frame(8, struct.pack("!H", 1001)))
        assert s.recv(10) == b""
        s.close()
        assert wait_for(lambda: n.proc.poll() is not None, 60), "nginx quit"
        assert not any(os.path.exists("/proc/%d" % p) for p in workers)


def test_many_open_close_cycles_leak_nothing(ng):
    """Java forgets each closed socket: after 3,000 cycles its table is empty."""
    def cycle(n):
        for _ in range(n):
            s, head = handshake(ng.port)
            assert b" 101 " in head
            s.sendall(frame(8, struct.pack("!H", 1000)))
            read_frame(s)
            s.close()
    cycle(3000)
    assert wait_for(lambda: ng.get("/live-sockets").text == "0", 60), \
        ng.get("/live-sockets").text


# The leak check: LEAK_WARM cycles first, then LEAK_ROUNDS rounds of
# LEAK_ROUND cycles, the worker's RSS read after each; the median round may
# grow by less than LEAK_BOUND bytes a cycle.  The JVM interprets only
# (-Xint) and its heap is fixed and pre-touched: see the test's docstring.
LEAK_WARM, LEAK_ROUNDS, LEAK_ROUND, LEAK_BOUND = 2000, 10, 1000, 24
LEAK_JVM_OPTIONS = "-Xms64m -Xmx64m -XX:+AlwaysPreTouch -XX:+UseSerialGC -Xint"


@pytest.mark.skipif(SANITIZED, reason=sanitized_rss)
def test_10000_open_close_cycles_return_memory(mode):
    """Native memory (the connection's pool, frame buffers, whatever the
    Java side holds outside its heap) comes back: after 2,000 WebSockets
    opened, used and closed, 10 rounds of 1,000 more, the worker's resident
    memory read after each, grow by less than 24 bytes a cycle in the
    median round.

    A leak grows with the count, noise does not.  Measured with a library
    preloaded into nginx that leaks N bytes (malloc'd and written) at every
    accept: with N = 100 every round grew by 112 KB, 115 bytes a cycle (a
    112-byte chunk); N = 50 gave 66, N = 24 gave 33; without it the median
    round grew by 0 and the largest round by 12 KB (pages of 4 KB, the
    first round).  Noise comes at once, in a round or two: a step in a
    minority of the rounds leaves the median round's growth alone, where
    it moves a line fitted by least squares (reported too) or a single
    before-and-after difference, as the former check was (1,132 KB over
    10,000 cycles against 1 MB, once).

    Why -Xint: with the JIT, the compilers' memory, freed and taken again
    in the same malloc arenas as nginx's, moved RSS by up to 12 MB between
    rounds, both ways, and hid a leak (with N = 100 the median round grew
    by 0 and 72 bytes a cycle, the whole run by less than nothing; the
    former check would have passed it as well).  Interpreted, the run
    takes about as long (47 to 73 s against 38 to 65 s on a busy 2-core
    machine), and what grows is what leaks.  The Java heap
    is fixed and pre-touched, so it does not count: the sockets the Java
    side keeps are checked by /live-sockets (0 after each round), file
    descriptors by their count."""
    import re
    import statistics
    if mode != "loop":
        pytest.skip("once is enough: the C side is the same in every mode")
    http = "    jvm_options %s;\n" % LEAK_JVM_OPTIONS
    with Nginx(LOCATIONS, http=http, mode=mode) as n:
        (pid,) = n.worker_pids()

        def rss_kb():
            with open("/proc/%d/status" % pid) as f:
                return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))

        def cycles(count):
            for i in range(count):
                s, head = handshake(n.port)
                assert b" 101 " in head
                s.sendall(frame(1, b"m%d" % i) + frame(8, struct.pack("!H", 1000)))
                assert read_frame(s)[2] == b"m%d" % i
                read_frame(s)
                s.close()
            # every socket closed and forgotten before RSS is read
            assert wait_for(lambda: n.get("/live-sockets").text == "0", 60), \
                n.get("/live-sockets").text

        cycles(LEAK_WARM)
        readings = [rss_kb()]
        fds = len(os.listdir("/proc/%d/fd" % pid))
        for _ in range(LEAK_ROUNDS):
            cycles(LEAK_ROUND)
            readings.append(rss_kb())
        growths = [b - a for a, b in zip(readings, readings[1:])]
        slope = statistics.median(growths) * 1024 / LEAK_ROUND
        xs = range(len(readings))
        mx, my = statistics.mean(xs), statistics.mean(readings)
        least_squares = (sum((x - mx) * (y - my) for x, y in zip(xs, readings))
                         / sum((x - mx) ** 2 for x in xs)) * 1024 / LEAK_ROUND
        assert slope < LEAK_BOUND, (
            "worker RSS grew by %.0f bytes a cycle in the median round "
            "(least squares: %.0f; RSS after each round, KB: %s)"
            % (slope, least_squares, readings))
        assert len(os.listdir("/proc/%d/fd" % pid)) <= fds + 2
