"""The example apps, served and used as a user would."""

import contextlib
import socket
import time

import pytest

from harness import ROOT, Nginx, ring_classpath

websockets = pytest.importorskip("websockets")
from websockets.sync.client import connect  # noqa: E402

LIVE = """
        location / { jvm_async on; jvm_content live.core/app; }
"""


LIVE_HTTP = """
    jvm_topic chat 1m;
    jvm_shared_dict chat 64k;
    server {
        listen 127.0.0.1:@PORT2@ reuseport;
        location / { jvm_async on; jvm_content live.core/app; }
    }
"""


@pytest.fixture(scope="module")
def live(mode):
    cp = ring_classpath() + [str(ROOT / "examples" / "live" / "src")]
    with Nginx(LIVE, http=LIVE_HTTP, classpath=cp, mode=mode,
               workers=2) as n:
        yield n


def test_live_page(live):
    r = live.get("/")
    assert r.status == 200
    assert "new WebSocket" in r.text and "EventSource" in r.text


def test_live_chat_between_two_clients(live):
    url = "ws://127.0.0.1:%d/chat" % live.port
    with connect(url) as a:
        assert "joined" in a.recv(timeout=10)
        with connect(url) as b:
            assert "joined" in b.recv(timeout=10)
            assert "joined" in a.recv(timeout=10)
            a.send("hello from a")
            assert a.recv(timeout=10) == "hello from a"
            assert b.recv(timeout=10) == "hello from a"
        assert "left" in a.recv(timeout=10)


def test_live_chat_across_workers(live):
    """Clients on different workers (reuseport spreads new connections) are
    in one room: each gets every message, once."""
    url = "ws://127.0.0.1:%d/chat" % live.port2
    time.sleep(0.5)             # the last test's "left" notices are out
    with contextlib.ExitStack() as stack:
        clients = [stack.enter_context(connect(url)) for _ in range(8)]
        # each sees its own join and those after it: the first sees all,
        # counted by the workers together
        for i, c in enumerate(clients):
            joins = []
            while len(joins) < len(clients) - i:
                m = c.recv(timeout=10)
                if "joined" in m:
                    joins.append(m)
            if i == 0:
                assert sorted(joins) == sorted("* someone joined (%d here)" % k
                                               for k in range(1, 9)), joins
        clients[0].send("hello all")
        for c in clients:
            # a client may see more joins than its own and those after it
            m = c.recv(timeout=10)
            while "joined" in m:
                m = c.recv(timeout=10)
            assert m == "hello all"
        for c in clients:           # once
            with pytest.raises(TimeoutError):
                c.recv(timeout=0.2)


def test_live_clock_streams_events(live):
    s = socket.create_connection(("127.0.0.1", live.port), timeout=10)
    with s:
        s.sendall(b"GET /clock HTTP/1.1\r\nHost: localhost\r\n\r\n")
        data = b""
        while data.count(b"data: ") < 2:
            chunk = s.recv(4096)
            assert chunk, data
            data += chunk
    assert b"text/event-stream" in data
