"""A full send queue pushes back before it cuts anyone off.

A WebSocket listener on the event loop answers each message at once; a
client that sends a burst and reads the answers must get every answer,
however many arrive in one read: the socket stops reading from that client
while the frames for it pile up, and reads again as they leave.  Messages
of a topic fanned out from the loop to WebSocket clients and to server-sent
event streams reach every client that reads, in order, however many come
in one burst; a client that reads nothing is closed (send_timeout, or its
sends fail once it is a bounded amount behind) and costs the others
nothing.  In every mode.
"""

import contextlib
import socket
import threading
import time

import pytest

websockets = pytest.importorskip("websockets")
from websockets.sync.client import connect  # noqa: E402

from harness import open_get, read_until, wait_for  # noqa: E402
from test_websocket import frame, handshake, read_frame  # noqa: E402

LOCATIONS = """
        location /ws/ring { jvm_content testapp.ws/pure-echo; }
        location /ws/java { jvm_content testapp.WsEcho; }
        location /fan/ws { send_timeout 2s; jvm_content testapp.Fanout; }
        location /fan/sse { send_timeout 2s; jvm_async on;
                            jvm_content testapp.FanoutSse; }
        location /fan/ { jvm_mode loop; jvm_content testapp.Fanout; }
        location /ok { return 200 "ok"; }
"""

HTTP = """
    jvm_topic f 4m;
"""


def echoed(handler, text):
    return text.upper() if handler == "java" else text


@pytest.mark.parametrize("count", [100, 1000])
@pytest.mark.parametrize("handler", ["ring", "java"])
def test_a_burst_of_messages_is_answered_in_full(ng, handler, count):
    """count messages back to back, in as few reads as the kernel makes of
    them; every answer comes back, in order, and the socket stays open."""
    s, head = handshake(ng.port, "/ws/" + handler)
    with s:
        assert head.startswith(b"HTTP/1.1 101"), head
        s.sendall(b"".join(frame(1, b"msg-%d" % i) for i in range(count)))
        s.settimeout(20)
        for i in range(count):
            op, fin, payload = read_frame(s)
            assert op == 1, (i, op, payload)
            assert payload.decode() == echoed(handler, "msg-%d" % i)
        s.sendall(frame(8, b"\x03\xe8"))
        op, _, payload = read_frame(s)
        assert op == 8 and payload[:2] == b"\x03\xe8", payload
    assert ng.log_problems() == []


def test_a_client_that_sends_and_does_not_read_is_held_back(ng):
    """The socket stops reading from a client that does not read its
    answers: the client's sends block in the kernel, the worker holds a
    bounded amount for it, and others are served meanwhile.  Once the
    client reads, every answer comes and the socket goes on."""
    s, head = handshake(ng.port, "/ws/ring")
    with s:
        assert head.startswith(b"HTTP/1.1 101"), head
        s.setblocking(False)
        payload = b"x" * 1024
        frames = 0
        pending = b""
        stalled = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if not pending:
                pending = frame(1, payload)
                frames += 1
            try:
                pending = pending[s.send(pending):]
                stalled = None
            except BlockingIOError:
                stalled = stalled or time.monotonic()
                if time.monotonic() - stalled > 1.0:
                    break
                time.sleep(0.01)
        assert stalled, "the server never stopped reading"
        # the kernel's buffers both ways, the queue, and a read buffer
        assert frames * 1024 < 64 * 1024 * 1024, frames
        assert ng.get("/ok").text == "ok"
        s.setblocking(True)
        s.settimeout(20)
        reader = threading.Thread(target=s.sendall, args=(pending,))
        reader.start()
        for i in range(frames):
            op, _, got = read_frame(s)
            assert op == 1 and got == payload, (i, op, len(got))
        reader.join()
        s.sendall(frame(1, b"still open"))
        assert read_frame(s)[2] == b"still open"
        s.sendall(frame(8, b"\x03\xe8"))
        assert read_frame(s)[0] == 8
    assert ng.log_problems() == []


def subscribers(ng):
    return int(ng.get("/fan/subscribers").text)


def publish(ng, n):
    r = ng.get("/fan/publish?n=%d" % n)
    assert r.text == "%d published" % n, r.text


def failures(ng):
    return ng.get("/fan/failures").text


def test_a_topic_burst_reaches_every_websocket_client_that_reads(ng):
    base = subscribers(ng)
    with contextlib.ExitStack() as stack:
        clients = [stack.enter_context(
                       connect("ws://127.0.0.1:%d/fan/ws" % ng.port))
                   for _ in range(3)]
        assert wait_for(lambda: subscribers(ng) == base + 3, 60)
        before = failures(ng)
        publish(ng, 300)
        for c in clients:
            for i in range(300):
                assert c.recv(timeout=20) == "m%d" % i
        assert failures(ng) == before
    assert wait_for(lambda: subscribers(ng) == base, 60)
    assert ng.log_problems() == []


def sse(ng):
    return open_get(ng.port, "/fan/sse", timeout=20)


def test_a_topic_burst_reaches_every_event_stream_that_reads(ng):
    base = subscribers(ng)
    streams = [sse(ng) for _ in range(3)]
    try:
        for s in streams:
            assert b": subscribed" in read_until(s, b": subscribed", timeout=20)
        assert wait_for(lambda: subscribers(ng) == base + 3, 60)
        before = failures(ng)
        publish(ng, 300)
        for s in streams:
            data = read_until(s, b"data: m299\n\n", timeout=20)
            events = [line for line in data.split(b"\n")
                      if line.startswith(b"data: ")]
            assert events == [b"data: m%d" % i for i in range(300)]
        assert failures(ng) == before
    finally:
        for s in streams:
            s.close()
    # a stream's writer learns its client left at its next write
    time.sleep(0.2)
    publish(ng, 1)
    assert wait_for(lambda: subscribers(ng) == base, 60), subscribers(ng)
    assert ng.log_problems() == []


def small_window(ng, request):
    """A client socket whose receive window is small from the start."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(20)
    s.connect(("127.0.0.1", ng.port))
    s.sendall(request)
    return s


@pytest.mark.parametrize("kind", ["ws", "sse"])
def test_a_subscriber_that_does_not_read_is_closed_and_costs_the_others_nothing(ng, kind):
    """One client reads nothing while 16 MB of messages are published; the
    other gets every one, and the idle one is closed, by send_timeout or
    because it fell a bounded amount behind, never by exhausting memory."""
    base = subscribers(ng)
    if kind == "ws":
        idle = small_window(ng, b"GET /fan/ws HTTP/1.1\r\nHost: localhost\r\n"
                            b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                            b"Sec-WebSocket-Version: 13\r\n\r\n")
        assert read_until(idle, b"\r\n\r\n", timeout=20).startswith(b"HTTP/1.1 101")
    else:
        idle = small_window(ng, b"GET /fan/sse HTTP/1.1\r\nHost: localhost\r\n\r\n")
        read_until(idle, b": subscribed", timeout=20)
    bursts, n = 40, 100
    got = []

    def read(reader):
        try:
            while len(got) < bursts * n:
                got.append(reader.recv(timeout=30).split(" ")[0])
        except Exception as e:          # noqa: BLE001 (reported below)
            got.append(e)

    try:
        with connect("ws://127.0.0.1:%d/fan/ws" % ng.port,
                     max_size=None) as reader:
            t = threading.Thread(target=read, args=(reader,))
            t.start()
            assert wait_for(lambda: subscribers(ng) == base + 2, 60)
            pad = "y" * 4000
            for burst in range(bursts):
                assert ng.get("/fan/publish?n=%d&pad=%s" % (n, pad)).text \
                    == "%d published" % n
                time.sleep(0.02)
            t.join(60)
            assert got == ["m%d" % i for i in range(n)] * bursts, got[-1:]
            # the idle client is let go: send_timeout is 2 s
            assert wait_for(lambda: subscribers(ng) == base + 1, 60), \
                subscribers(ng)
            assert ng.get("/ok").text == "ok"
    finally:
        idle.close()
    assert wait_for(lambda: subscribers(ng) == base, 60)
    assert ng.log_problems() == []
