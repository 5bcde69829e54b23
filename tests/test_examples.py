"""The example apps, served and used as a user would."""

import socket

import pytest

from harness import ROOT, Nginx, ring_classpath

websockets = pytest.importorskip("websockets")
from websockets.sync.client import connect  # noqa: E402

LIVE = """
        location / { jvm_async on; jvm_content live.core/app; }
"""


@pytest.fixture(scope="module")
def live(mode):
    cp = ring_classpath() + [str(ROOT / "examples" / "live" / "src")]
    with Nginx(LIVE, classpath=cp, mode=mode) as n:
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
