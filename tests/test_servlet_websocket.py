"""Jakarta WebSocket (JSR-356) in a servlet application (issue 47, item 3):
Tomcat's own WebSocket stack over nginx-jvm's byte tunnel
(Response.tunnel; nginx.jvm.servlet.tomcat.NginxTunnel). The WAR example's
annotated endpoints (examples/servlet-war: EchoEndpoint, PushEndpoint)
through real HTTP, with a raw-socket client: frames are Tomcat's, nginx
only carries the bytes. A Spring Boot jar (examples/servlet-boot-ws: STOMP,
and Jakarta endpoints) on both of Boot's starters: Tomcat's stack as
above, and Jetty's own WebSocket over the same tunnel
(nginx.jvm.servlet.jetty.NginxEndPoint), Boot 4 (Jetty 12.1) and 3.5
(Jetty 12.0).

The WAR is built once per run (build/servlet-war-ws); one server with two
workers serves the tests that only talk to it."""

import json
import os
import resource
import shutil
import signal
import socket
import struct
import tempfile
import threading
import time
from pathlib import Path

import pytest

from harness import (ROOT, Launcher, maven_package, read_ws_frame,
                     tcp_socket, wait_for, ws_close_code, ws_frame,
                     ws_handshake)

EXAMPLE = ROOT / "examples" / "servlet-war"
BUILD = ROOT / "build" / "servlet-war-ws"
SERVLET = ROOT / "build" / "servlet" / "nginx-jvm-servlet.jar"

TEXT, BINARY, CLOSE, PING, PONG = 1, 2, 8, 9, 10


@pytest.fixture(scope="module")
def war():
    assert SERVLET.exists(), "the servlet engine is not built: make all"
    return maven_package(EXAMPLE, BUILD, "servlet-war.war", timeout=600)


@pytest.fixture(scope="module")
def shared():
    """Reachable and writable by the workers' user (nobody)."""
    d = Path(tempfile.mkdtemp(prefix="nginx-jvm-servlet-ws-"))
    d.chmod(0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def events(shared):
    """The file the endpoints append how their sessions ended to."""
    f = shared / "wsevents.txt"
    f.touch()
    f.chmod(0o666)
    return f


def launcher(war, shared, events, *args, workers=2, mode="pool"):
    return Launcher(["--war", str(war), "--context-path", "/app",
                     "--jvm-option", "-Dexample.wsevents=%s" % events]
                    + list(args), mode=mode, workers=workers,
                    env={"NGINX_JVM_CACHE": str(shared / "cache")})


@pytest.fixture(scope="module")
def app(war, shared, events, servlet_mode):
    """The example at /app, two workers, in each mode of the suite."""
    with launcher(war, shared, events, mode=servlet_mode) as n:
        yield n


def connect(app, path, extra=b""):
    """A WebSocket to the example: (socket, head of the 101)."""
    s, head = ws_handshake(app.port, "/app" + path, extra)
    assert head.startswith(b"HTTP/1.1 101 "), head
    s.settimeout(30)                    # a machine busy with other builds
    return s, head


def header(head, name):
    for line in head.decode("latin-1").split("\r\n")[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == name.lower():
            return v.strip()
    return None


def message(s):
    """The next data message (fragments joined), its opcode and payload;
    a pong is returned as it is."""
    opcode, data = None, b""
    while True:
        b0, payload = read_ws_frame(s)
        op = b0 & 0x0F
        if op in (PONG, CLOSE):
            return op, payload
        if op != 0:
            opcode = op
        data += payload
        if b0 & 0x80:
            return opcode, data


def echo(s, text):
    s.sendall(ws_frame(TEXT, text.encode()))
    assert message(s) == (TEXT, text.encode())


def close_handshake(s, code=1000):
    """The client closes: the server answers with the same code, then the
    connection ends."""
    s.sendall(ws_frame(CLOSE, struct.pack("!H", code) + b"bye"))
    op, payload = message(s)
    assert op == CLOSE and ws_close_code(payload) == code, payload
    s.settimeout(10)
    assert s.recv(10) == b"", "the server closes the connection"
    s.close()


def lines(events, prefix):
    return [x for x in events.read_text().splitlines() if x.startswith(prefix)]


# -- the handshake --------------------------------------------------------------

def test_the_101_is_tomcats(app):
    s, head = connect(app, "/ws/echo/lobby")
    try:
        # RFC 6455's example key, answered by Tomcat's handshake
        assert header(head, "Sec-WebSocket-Accept") == \
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", head
        assert header(head, "Upgrade").lower() == "websocket", head
        assert header(head, "Connection").lower() == "upgrade", head
        # the example's filter ran for the upgrade request as for any
        assert header(head, "X-Example-Filter") is not None, head
        s.sendall(ws_frame(TEXT, b"who"))
        op, data = message(s)
        assert op == TEXT and data.startswith(b"room lobby, "), data
        close_handshake(s)
    finally:
        s.close()


def test_subprotocol_negotiated_by_tomcat(app):
    s, head = connect(app, "/ws/echo/p",
                      b"Sec-WebSocket-Protocol: other, echo.v1\r\n")
    try:
        assert header(head, "Sec-WebSocket-Protocol") == "echo.v1", head
        s.sendall(ws_frame(TEXT, b"who"))
        assert b"subprotocol echo.v1," in message(s)[1]
        close_handshake(s)
    finally:
        s.close()


def test_a_plain_get_of_an_endpoint_is_not_upgraded(app):
    r = app.get("/app/ws/echo/x")
    # Tomcat's WsFilter lets it through to no servlet
    assert r.status == 404, r.status


def test_http10_upgrade_is_refused(app):
    s = socket.create_connection(("127.0.0.1", app.port), timeout=10)
    try:
        s.sendall(b"GET /app/ws/echo/x HTTP/1.0\r\nHost: localhost\r\n"
                  b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                  b"Sec-WebSocket-Version: 13\r\n\r\n")
        head = s.recv(4096)
        # Tomcat upgraded; nginx, which cannot switch an HTTP/1.0
        # connection, answers 400 in place of the 101
        assert head.startswith(b"HTTP/1.1 400 "), head
    finally:
        s.close()


# -- messages -------------------------------------------------------------------

def test_text_and_binary_echo(app):
    s, _ = connect(app, "/ws/echo/a")
    try:
        echo(s, "hello")
        echo(s, "h\u00e9llo \u2603 \U0001F600")
        data = bytes(range(256)) * 3
        s.sendall(ws_frame(BINARY, data))
        assert message(s) == (BINARY, data)
        # a message in fragments, as a client may send it
        s.sendall(ws_frame(TEXT, b"frag", fin=False)
                  + ws_frame(0, b"men", fin=False) + ws_frame(0, b"ted"))
        assert message(s) == (TEXT, b"fragmented")
        close_handshake(s)
    finally:
        s.close()


def test_a_large_message_beyond_one_read(app):
    s, _ = connect(app, "/ws/echo/big")
    try:
        text = ("0123456789abcdef" * 65536)[:1000003]   # 1 MB, odd length
        s.sendall(ws_frame(TEXT, text.encode()))
        assert message(s) == (TEXT, text.encode())
        data = os.urandom(3 * 1024 * 1024)
        s.sendall(ws_frame(BINARY, data))
        assert message(s) == (BINARY, data)
        close_handshake(s)
    finally:
        s.close()


def test_ping_is_answered_with_its_payload(app):
    s, _ = connect(app, "/ws/echo/ping")
    try:
        s.sendall(ws_frame(PING, b"are you there"))
        assert message(s) == (PONG, b"are you there")
        echo(s, "after the ping")
        close_handshake(s)
    finally:
        s.close()


def test_messages_sent_with_the_handshake(app):
    """Frames in the same packet as the upgrade request reach Tomcat."""
    s = socket.create_connection(("127.0.0.1", app.port), timeout=10)
    try:
        s.sendall(b"GET /app/ws/echo/early HTTP/1.1\r\nHost: localhost\r\n"
                  b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                  b"Sec-WebSocket-Version: 13\r\n\r\n"
                  + ws_frame(TEXT, b"eager"))
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1)
        assert head.startswith(b"HTTP/1.1 101 "), head
        assert message(s) == (TEXT, b"eager")
        close_handshake(s)
    finally:
        s.close()


def test_an_endpoint_that_pauses_its_reading(app):
    """Tomcat's WsSession.suspend: what the client sends meanwhile waits
    (in the worker, then in the client's socket once nginx stops reading),
    and is all answered, in order, after its resume."""
    s, _ = connect(app, "/ws/echo/pause")
    try:
        s.sendall(ws_frame(TEXT, b"pause 1500"))
        assert message(s) == (TEXT, b"paused")
        started = time.monotonic()
        sent = [os.urandom(3000).hex() for _ in range(400)]   # 2.4 MB
        for text in sent:
            s.sendall(ws_frame(TEXT, text.encode()))
        for text in sent:
            assert message(s) == (TEXT, text.encode())
        assert time.monotonic() - started >= 1.4
        close_handshake(s)
    finally:
        s.close()


def test_a_client_that_leaves_a_paused_endpoint(app, events):
    s, _ = connect(app, "/ws/echo/pause-gone")
    s.sendall(ws_frame(TEXT, b"pause 3000"))
    assert message(s) == (TEXT, b"paused")
    s.sendall(ws_frame(TEXT, b"never read"))
    s.close()
    assert wait_for(lambda: [x for x in lines(events, "close pause-gone ")], 10)


# -- closing --------------------------------------------------------------------

def test_the_server_closes_with_code_and_reason(app, events):
    s, _ = connect(app, "/ws/echo/closer")
    try:
        s.sendall(ws_frame(TEXT, b"close 4001 done here"))
        op, payload = message(s)
        assert op == CLOSE, payload
        assert ws_close_code(payload) == 4001 and payload[2:] == b"done here"
        s.sendall(ws_frame(CLOSE, payload[:2]))
        s.settimeout(10)
        assert s.recv(10) == b""
    finally:
        s.close()
    assert wait_for(lambda: "close closer 4001" in lines(events, "close "), 10)


def test_the_client_closes(app, events):
    s, _ = connect(app, "/ws/echo/leaver")
    close_handshake(s, 1001)
    assert wait_for(lambda: "close leaver 1001" in lines(events, "close "), 10)


def test_an_unmasked_frame_is_a_protocol_error(app, events):
    s, _ = connect(app, "/ws/echo/unmasked")
    try:
        s.sendall(ws_frame(TEXT, b"naked", mask=False))
        op, payload = message(s)
        assert op == CLOSE and ws_close_code(payload) == 1002, payload
        s.settimeout(10)
        # the server may wait for the client's close frame, or not
        try:
            s.sendall(ws_frame(CLOSE, payload[:2]))
            assert s.recv(10) == b""
        except (BrokenPipeError, ConnectionResetError):
            pass
    finally:
        s.close()
    assert wait_for(lambda: "close unmasked 1002" in lines(events, "close "), 10)


@pytest.mark.parametrize("garbage, code", [
    (b"\x8f\x80\x00\x00\x00\x00", 1002),                  # a reserved opcode
    (b"\xf1\x85" + b"\x00" * 4 + b"hello", 1002),         # RSV bits set
    (b"\x09\xfe\x00\x80" + b"\x00" * 4 + b"x" * 128, 1002),  # a long, fragmented ping
    (ws_frame(TEXT, b"caf\xc3"), 1007),                  # not UTF-8
    (ws_frame(TEXT, b"x" * 20000), 1009),                # beyond Tomcat's 8 KiB
], ids=["reserved-opcode", "rsv-bits", "long-fragmented-ping", "not-utf8",
        "too-big"])     # not the random masks (pytest-xdist)
def test_garbage_closes_with_its_code(app, garbage, code):
    s, _ = connect(app, "/ws/echo/garbage")      # not a "big" room
    try:
        try:
            s.sendall(garbage)
        except (BrokenPipeError, ConnectionResetError):
            pass                        # closed before all of it was sent
        op, payload = message(s)
        assert op == CLOSE and ws_close_code(payload) == code, payload
    finally:
        s.close()


def test_clients_that_leave_during_the_handshake(app):
    """Upgrade requests whose client is gone before the 101 (or reads
    none of it): no session is left, the workers serve on."""
    for i in range(20):
        s = socket.create_connection(("127.0.0.1", app.port), timeout=10)
        s.sendall(b"GET /app/ws/echo/gone%d HTTP/1.1\r\nHost: localhost\r\n"
                  b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                  b"Sec-WebSocket-Version: 13\r\n\r\n"[:40 + i * 7])
        if i % 2:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                         struct.pack("ii", 1, 0))   # a reset, not a FIN
        s.close()
    s, _ = connect(app, "/ws/echo/after-gone")
    try:
        echo(s, "fine")
        close_handshake(s)
    finally:
        s.close()


def test_a_client_that_vanishes_mid_message(app, events):
    s, _ = connect(app, "/ws/echo/big-vanish")
    echo(s, "first")
    frame = ws_frame(BINARY, os.urandom(200000))
    s.sendall(frame[:70000])            # the message's first part only
    s.close()
    assert wait_for(lambda: "close big-vanish 1006" in lines(events, "close "), 10)
    # the workers serve on
    s, _ = connect(app, "/ws/echo/after")
    try:
        echo(s, "still here")
        close_handshake(s)
    finally:
        s.close()


# -- a server that speaks first -------------------------------------------------

def pushed(s, n, size):
    for i in range(n):
        op, data = message(s)
        assert op == BINARY and len(data) == size, (i, op, len(data))
        assert struct.unpack("!i", data[:4])[0] == i
    op, payload = message(s)
    assert op == CLOSE and ws_close_code(payload) == 1000, payload
    assert payload[2:] == b"pushed %d" % n
    s.sendall(ws_frame(CLOSE, payload[:2]))
    s.settimeout(10)
    assert s.recv(10) == b"", "the server closes the connection"


def test_push(app):
    s, _ = connect(app, "/ws/push?n=50&size=100")
    try:
        pushed(s, 50, 100)
    finally:
        s.close()


def worker_rss(app):
    total = 0
    for pid in app.worker_pids():
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
    return total


def test_a_client_that_does_not_read(app, events):
    """256 MB pushed at a client that reads nothing for a while: the
    sender waits (the tunnel's queue is bounded), the workers' memory does
    not grow by what was sent, and everything arrives once it reads."""
    n, size = 1024, 256 * 1024
    before = worker_rss(app)
    s, _ = connect(app, "/ws/push?n=%d&size=%d" % (n, size))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    try:
        # the pushes reached a client that does not read: nginx's socket
        # to it holds what it has not taken (its window is shut)
        mine = s.getsockname()[1]
        assert wait_for(lambda: tcp_socket(app.port, mine)["tx"] >= 65536, 30), \
            tcp_socket(app.port, mine)
        # the point: time in which a sender that did not wait would queue
        # most of the 256 MB in the worker
        time.sleep(2)
        grown = worker_rss(app) - before
        assert grown < 128 * 1024 * 1024, grown
        s.settimeout(60)
        pushed(s, n, size)
    finally:
        s.close()
    assert wait_for(lambda: "push-close 1000" in lines(events, "push-close"), 10)


# -- many at once, both workers ---------------------------------------------------

def test_many_connections_at_once(app):
    pids, errors = set(), []
    lock = threading.Lock()

    def one(i):
        try:
            s, _ = connect(app, "/ws/echo/many%d" % i)
            try:
                for k in range(5):
                    echo(s, "m%d-%d" % (i, k))
                s.sendall(ws_frame(TEXT, b"who"))
                who = message(s)[1].decode()
                with lock:
                    pids.add(who.rsplit(" ", 1)[1])
                close_handshake(s)
            finally:
                s.close()
        except Exception as e:          # noqa: BLE001 -- reported below
            with lock:
                errors.append(repr(e))

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    count = min(200, soft // 4)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[:5]
    assert len(pids) == 2, pids


# -- Spring's STOMP over WebSocket (examples/servlet-boot-ws) ------------------

BOOT_WS = ROOT / "examples" / "servlet-boot-ws"
M2 = ROOT / "build" / "projects" / "m2"      # the Spring examples' repository


def jetty_profile(d):
    """The example built with its jetty profile (Boot's Jetty starter)."""
    pom = d / "pom.xml"
    pom.write_text(pom.read_text().replace(
        "<id>jetty</id>", "<id>jetty</id><activation><activeByDefault>true"
        "</activeByDefault></activation>", 1))


@pytest.fixture(scope="module", params=["tomcat", "jetty"])
def stomp_app(request, shared, events):
    """The unmodified Spring Boot jar beneath nginx, two workers, in pool
    mode only: Spring's start is most of this file's time, and the tunnel
    under it is the WAR's, which every mode runs (the app fixture). Built
    on both of Boot's starters: Tomcat's WebSocket over the tunnel
    (NginxTunnel), and Jetty's (nginx.jvm.servlet.jetty.NginxEndPoint)."""
    if request.param == "jetty":
        jar = maven_package(BOOT_WS, ROOT / "build" / "servlet-boot-ws-jetty",
                            "servlet-boot-ws-jetty.jar", m2=M2,
                            edit=jetty_profile, timeout=900)
    else:
        jar = maven_package(BOOT_WS, ROOT / "build" / "servlet-boot-ws",
                            "servlet-boot-ws.jar", m2=M2, timeout=900)
    with Launcher(["--jar", str(jar),
                   "--jvm-option", "-Dexample.wsevents=%s" % events],
                  mode="pool", workers=2,
                  env={"NGINX_JVM_CACHE": str(shared / "cache")}) as n:
        n.engine = request.param
        yield n


def stomp_text(command, headers=(), body=b""):
    """A STOMP 1.2 frame."""
    head = command + "\n" + "".join("%s:%s\n" % h for h in headers) + "\n"
    return head.encode() + body + b"\0"


def stomp(command, headers=(), body=b""):
    """A STOMP 1.2 frame, as the text of a WebSocket message."""
    return ws_frame(TEXT, stomp_text(command, headers, body))


def stomp_read(s):
    """The next STOMP frame from the server: (command, headers, body)."""
    while True:
        op, data = message(s)
        assert op == TEXT, (op, data)
        if data.strip(b"\r\n"):         # not a heart-beat
            break
    assert data.endswith(b"\0"), data
    head, _, body = data[:-1].partition(b"\n\n")
    lines = head.decode().split("\n")
    headers = dict(x.split(":", 1) for x in lines[1:])
    return lines[0], headers, body


class Stomp:
    """A STOMP client over the raw WebSocket client, connected. Spring's
    simple broker sends no RECEIPT for a SUBSCRIBE: a subscription is known
    to be in place once a message sent after it on the same connection
    came back (the example keeps each connection's frames in order)."""

    count = 0

    def __init__(self, app):
        self.s, head = connect_at(app, "/stomp",
                                  b"Sec-WebSocket-Protocol: v12.stomp\r\n")
        assert header(head, "Sec-WebSocket-Protocol") == "v12.stomp", head
        self.s.sendall(stomp("CONNECT", [("accept-version", "1.2"),
                                         ("host", "localhost"),
                                         ("heart-beat", "0,0")]))
        command, headers, _ = stomp_read(self.s)
        assert command == "CONNECTED" and headers["version"] == "1.2", headers
        self.subs, self.waiting = 0, []
        Stomp.count += 1
        self.me = "/topic/chat/self-%d-%d" % (os.getpid(), Stomp.count)
        self.pid = self.subscribe(self.me)

    def subscribe(self, destination):
        """Subscribes; the pid of the connection's worker."""
        self.subs += 1
        self.s.sendall(stomp("SUBSCRIBE", [("id", "sub-%d" % self.subs),
                                           ("destination", destination)]))
        self.send(self.me.replace("/topic/", "/app/"),
                  {"from": "me", "text": "sync"})
        while True:
            headers, body = self.next()
            if headers["destination"] == self.me:
                return body["pid"]
            self.waiting.append((headers, body))

    def send(self, destination, obj):
        self.s.sendall(stomp("SEND", [("destination", destination),
                                      ("content-type", "application/json")],
                             json.dumps(obj).encode()))

    def next(self):
        command, headers, body = stomp_read(self.s)
        assert command == "MESSAGE", (command, headers, body)
        return headers, json.loads(body)

    def message(self):
        """The next message of a subscription other than the client's own."""
        while True:
            headers, body = self.waiting.pop(0) if self.waiting else self.next()
            if headers["destination"] != self.me:
                return headers, body

    def disconnect(self):
        self.s.sendall(stomp("DISCONNECT", [("receipt", "bye")]))
        assert stomp_read(self.s)[:2] == ("RECEIPT", {"receipt-id": "bye"})
        # then the client closes, as STOMP says
        close_handshake(self.s)


def connect_at(app, path, extra=b""):
    s, head = ws_handshake(app.port, path, extra)
    assert head.startswith(b"HTTP/1.1 101 "), head
    s.settimeout(30)
    return s, head


def test_stomp_subscribe_and_send(stomp_app):
    c = Stomp(stomp_app)
    try:
        c.subscribe("/topic/chat/lobby")
        c.send("/app/chat/lobby", {"from": "ann", "text": "h\u00e9llo"})
        headers, body = c.message()
        assert headers["destination"] == "/topic/chat/lobby", headers
        assert headers["subscription"] == "sub-2", headers
        assert body["from"] == "ann" and body["text"] == "h\u00e9llo", body
        assert body["pid"] in stomp_app.worker_pids(), body
        c.disconnect()
    finally:
        c.s.close()


def test_stomp_broadcast_to_every_subscriber_of_the_worker(stomp_app):
    """Spring's simple broker is each worker's own: two clients on the same
    worker both get what one sends."""
    a = Stomp(stomp_app)
    others = []
    try:
        for _ in range(40):
            b = Stomp(stomp_app)
            others.append(b)
            if b.pid == a.pid:
                break
        else:
            pytest.fail("no second connection reached worker %d" % a.pid)
        a.subscribe("/topic/chat/shared")
        b.subscribe("/topic/chat/shared")
        # beyond one read both ways: Spring takes a STOMP frame of up to
        # 64 KB, in WebSocket messages of up to 8 KB (Tomcat's buffer) as
        # stomp.js splits it
        big = "x" * 50000
        data = stomp_text("SEND", [("destination", "/app/chat/shared"),
                                   ("content-type", "application/json")],
                          json.dumps({"from": "bob", "text": big}).encode())
        for i in range(0, len(data), 8000):
            b.s.sendall(ws_frame(TEXT, data[i:i + 8000]))
        for c in (a, b):
            body = c.message()[1]
            assert (body["from"], body["text"]) == ("bob", big)
        a.disconnect()
    finally:
        a.s.close()
        for b in others:
            b.s.close()


def test_stomp_published_from_http(stomp_app):
    """A POST that reaches the subscriber's worker publishes to it."""
    c = Stomp(stomp_app)
    try:
        c.subscribe("/topic/chat/news")

        def announce():
            r = stomp_app.request("POST", "/announce?room=news&text=hot")
            assert r.status == 200, r
            return r.text.strip() == "announced by %d" % c.pid
        assert wait_for(announce, 30), c.pid
        headers, body = c.message()
        assert headers["destination"] == "/topic/chat/news"
        assert (body["from"], body["text"]) == ("server", "hot")
        c.disconnect()
    finally:
        c.s.close()


def test_stomp_bad_frame_is_an_error_frame(stomp_app):
    c = Stomp(stomp_app)
    try:
        c.s.sendall(stomp("NOT-A-COMMAND"))
        command, headers, body = stomp_read(c.s)
        assert command == "ERROR", (command, headers, body)
    finally:
        c.s.close()


def test_stomp_client_that_vanishes(stomp_app):
    for _ in range(5):
        c = Stomp(stomp_app)
        c.subscribe("/topic/chat/gone")
        c.s.sendall(stomp("SEND", [("destination", "/app/chat/gone")])[:20])
        c.s.close()
    c = Stomp(stomp_app)
    try:
        assert c.pid in stomp_app.worker_pids()
        c.disconnect()
    finally:
        c.s.close()


# -- the example's Jakarta endpoints (@ServerEndpoint beans), both starters ------

def test_boot_101_and_echo(stomp_app):
    s, head = connect_at(stomp_app, "/echo/hello")
    try:
        assert header(head, "Sec-WebSocket-Accept") == \
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", head
        assert header(head, "Upgrade").lower() == "websocket", head
        echo(s, "h\u00e9llo")
        s.sendall(ws_frame(TEXT, b"frag", fin=False)
                  + ws_frame(0, b"men", fin=False) + ws_frame(0, b"ted"))
        assert message(s) == (TEXT, b"fragmented")
        s.sendall(ws_frame(PING, b"are you there"))
        assert message(s) == (PONG, b"are you there")
        close_handshake(s)
    finally:
        s.close()


def test_boot_a_large_message_beyond_one_read(stomp_app):
    s, _ = connect_at(stomp_app, "/echo/big")
    try:
        text = ("0123456789abcdef" * 65536)[:1000003]   # 1 MB, odd length
        s.sendall(ws_frame(TEXT, text.encode()))
        assert message(s) == (TEXT, text.encode())
        data = os.urandom(3 * 1024 * 1024)
        s.sendall(ws_frame(BINARY, data))
        assert message(s) == (BINARY, data)
        close_handshake(s)
    finally:
        s.close()


def test_boot_a_client_that_vanishes_mid_message(stomp_app, events):
    name = "boot-vanish-" + stomp_app.engine
    s, _ = connect_at(stomp_app, "/echo/" + name)
    echo(s, "first")
    frame = ws_frame(BINARY, os.urandom(200000))
    s.sendall(frame[:70000])            # the message's first part only
    s.close()
    assert wait_for(lambda: "close %s 1006" % name in lines(events, "close "), 10), \
        lines(events, "close ")
    # the workers serve on
    s, _ = connect_at(stomp_app, "/echo/after")
    try:
        echo(s, "still here")
        close_handshake(s)
    finally:
        s.close()


def test_boot_a_client_that_does_not_read(stomp_app, events):
    """256 MB pushed at a client that reads nothing for a while: the
    endpoint's sends wait (the tunnel takes one piece at a time), the
    workers' memory does not grow by what was sent, and everything arrives
    once it reads."""
    done = len(lines(events, "push-close 1000"))
    n, size = 1024, 256 * 1024
    before = worker_rss(stomp_app)
    s, _ = connect_at(stomp_app, "/push?n=%d&size=%d" % (n, size))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    try:
        mine = s.getsockname()[1]
        assert wait_for(lambda: tcp_socket(stomp_app.port, mine)["tx"] >= 65536, 30), \
            tcp_socket(stomp_app.port, mine)
        # the point: time in which a sender that did not wait would queue
        # most of the 256 MB in the worker
        time.sleep(2)
        grown = worker_rss(stomp_app) - before
        assert grown < 128 * 1024 * 1024, grown
        s.settimeout(60)
        pushed(s, n, size)
    finally:
        s.close()
    assert wait_for(lambda: len(lines(events, "push-close 1000")) > done, 10)


# -- the Servlet API's own upgrade (another protocol than WebSocket) -----------

def test_an_http_upgrade_handler(app, events):
    """HttpServletRequest.upgrade to a protocol of the example's own: the
    servlet's 101, then its handler's streams (a ReadListener) over the
    same tunnel; it closes, and is destroyed."""
    s = socket.create_connection(("127.0.0.1", app.port), timeout=30)
    try:
        s.sendall(b"GET /app/upgrade HTTP/1.1\r\nHost: localhost\r\n"
                  b"Upgrade: shout\r\nConnection: Upgrade\r\n\r\nearly ")
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1)
        assert head.startswith(b"HTTP/1.1 101 "), head
        assert header(head, "Upgrade") == "shout", head
        got = b""
        for part in [b"hello ", b"world\n", os.urandom(50000).hex().encode(),
                     b"\nbye\n"]:
            s.sendall(part)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        assert got.startswith(b"EARLY HELLO WORLD\n") and got.endswith(b"\nBYE\n")
        assert len(got) == len(b"early hello world\n") + 100000 + len(b"\nbye\n")
    finally:
        s.close()
    assert wait_for(lambda: lines(events, "shout-destroyed"), 10)
    assert not lines(events, "shout-error")


def test_an_upgrade_without_upgrade_is_a_plain_answer(app):
    r = app.get("/app/upgrade")
    assert r.status == 400, r.status


# -- last: a reload replaces the workers of the shared server -------------------

def test_a_reload_ends_the_old_workers_websockets(app, events):
    """HUP: the old workers close their WebSockets as they quit (each
    endpoint hears of it), new connections reach the new workers."""
    old = set(app.worker_pids())
    socks = []
    for i in range(4):
        s, _ = connect(app, "/ws/echo/reload%d" % i)
        echo(s, "before")
        socks.append(s)
    os.kill(app.proc.pid, signal.SIGHUP)
    for s in socks:
        s.settimeout(60)
        try:
            while s.recv(65536):        # a close frame at most, then the end
                pass
        except ConnectionResetError:
            pass
        s.close()
    assert wait_for(lambda: not set(app.worker_pids()) & old
                    and len(app.worker_pids()) == 2, 120), app.log_text()
    for i in range(4):
        assert wait_for(lambda: [x for x in lines(events, "close reload%d " % i)], 10)
    s, _ = connect(app, "/ws/echo/reloaded")
    try:
        s.sendall(ws_frame(TEXT, b"who"))
        pid = int(message(s)[1].decode().rsplit(" ", 1)[1])
        assert pid in app.worker_pids() and pid not in old
        close_handshake(s)
    finally:
        s.close()


@pytest.mark.parametrize("engine", ["tomcat", "jetty"])
def test_stomp_on_spring_boot_3_5(shared, engine):
    """The same application on Spring Boot 3.5, whose Tomcat is 10.1 and
    whose Jetty is 12.0 (ee10: the seam's second Jetty build): the tunnel
    runs their WebSocket too (one worker, one mode: the engine's version is
    what differs)."""
    def boot_3_5(d):
        pom = d / "pom.xml"
        pom.write_text(pom.read_text().replace(
            "<version>4.0.7</version>", "<version>3.5.7</version>", 1))
        if engine == "jetty":
            jetty_profile(d)
    name = "servlet-boot-ws" + ("-jetty" if engine == "jetty" else "")
    jar = maven_package(BOOT_WS, ROOT / "build" / (name + "-3.5"),
                        name + ".jar", m2=M2, edit=boot_3_5, timeout=900)
    with Launcher(["--jar", str(jar)], mode="pool", workers=1,
                  env={"NGINX_JVM_CACHE": str(shared / "cache")}) as n:
        c = Stomp(n)
        try:
            c.subscribe("/topic/chat/old")
            c.send("/app/chat/old", {"from": "ann", "text": "on 3.5"})
            headers, body = c.message()
            assert headers["destination"] == "/topic/chat/old", headers
            assert (body["from"], body["text"]) == ("ann", "on 3.5")
            c.disconnect()
        finally:
            c.s.close()
        s, _ = connect_at(n, "/echo/old")
        try:
            text = ("0123456789abcdef" * 65536)[:1000003]   # 1 MB, odd length
            s.sendall(ws_frame(TEXT, text.encode()))
            assert message(s) == (TEXT, text.encode())
            close_handshake(s)
        finally:
            s.close()
