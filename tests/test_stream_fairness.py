"""Clients that drain endless streams as fast as they can do not stall the
other connections of their worker.

On the event loop, a body is produced when nginx asks for its next piece,
which it does as soon as the previous one has left.  A client that reads
as fast as the loop writes would keep the loop producing for as long as
the body lasts; each event therefore sends a bounded share and the rest
waits for the next round of the loop.  Here readers (curl, which reads as
fast as the kernel hands it bytes) drain endless bodies from one worker
while requests to /ok on the same worker are answered promptly.  How
promptly, with 1, 10 and 100 readers, is measured by
bench/stream-fairness.sh; this test only proves nobody waits for seconds.
"""

import http.client
import socket
import subprocess
import threading
import time

import pytest

from harness import Nginx, request

LOCATIONS = """
        location /ring/pieces { jvm_content testapp.endless/pieces; }
        location /java/ { jvm_content testapp.Endless; }
        location /ok { jvm_mode loop; return 200 "ok"; }
        location /jvm-ok { jvm_mode loop; jvm_content testapp.Endless; }
        location /ws/echo { jvm_content testapp.ws/echo; }
"""

# far above what a served request takes, far below what the stall was
PROMPT = 1.0


@pytest.fixture(scope="module")
def ng(mode):
    with Nginx(LOCATIONS, mode=mode) as n:
        assert n.get("/jvm-ok/ok").text == "ok"
        yield n


class Readers:
    """curl processes draining a URL, each for at most `seconds`."""

    def __init__(self, ng, paths, seconds):
        self.procs = [subprocess.Popen(
            ["curl", "-s", "-o", "/dev/null", "--max-time", str(seconds),
             "-w", "%{size_download}",
             "http://127.0.0.1:%d%s" % (ng.port, p)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) for p in paths]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            p.wait(10)

    def alive(self):
        return [p for p in self.procs if p.poll() is None]

    def downloaded(self):
        """Bytes each reader got, once all have ended."""
        return [int(p.communicate(timeout=30)[0] or 0) for p in self.procs]


def slowest(ng, path, n=20):
    """The longest of n requests to path, one after another on one kept-alive
    connection, opened before the first is timed.  New connections would
    measure the kernel too: a loopback flooded by a fast reader can drop a
    SYN (the per-CPU backlog, net.core.netdev_max_backlog), which costs its
    connect the 1 s of the first SYN retransmission whatever the worker does."""
    worst = 0.0
    conn = http.client.HTTPConnection("127.0.0.1", ng.port, timeout=30)
    try:
        conn.connect()
        for _ in range(n):
            start = time.monotonic()
            r = request(ng.port, "GET", path, conn=conn)
            worst = max(worst, time.monotonic() - start)
            assert r.status == 200 and r.text == "ok", r
            time.sleep(0.02)
    finally:
        conn.close()
    return worst


@pytest.mark.parametrize("readers", [1, 10])
def test_fast_readers_do_not_stall_the_worker(ng, readers):
    paths = (["/java/bytes", "/ring/pieces"] * readers)[:readers]
    with Readers(ng, paths, seconds=8) as rs:
        time.sleep(1.0)             # the readers are draining
        assert len(rs.alive()) == readers, "a reader ended early"
        worst_nginx = slowest(ng, "/ok")
        worst_jvm = slowest(ng, "/jvm-ok/ok")
        assert worst_nginx < PROMPT, "nginx's own /ok waited %.2f s" % worst_nginx
        assert worst_jvm < PROMPT, "a loop handler's /ok waited %.2f s" % worst_jvm
        assert len(rs.alive()) == readers, "a reader ended early"
        got = rs.downloaded()
    # every reader got a share, and a large one: the streams were drained
    assert min(got) > 1024 * 1024, got
    assert ng.log_problems() == []


def test_a_fast_websocket_reader_does_not_stall_the_worker(ng):
    """A JVM thread sends a WebSocket client a million small messages as
    fast as the client reads them: the loop sends a bounded share of them
    per event, and the worker's other requests are answered meanwhile."""
    from test_websocket import frame, handshake
    s, head = handshake(ng.port, "/ws/echo")
    assert head.startswith(b"HTTP/1.1 101"), head
    got = {"bytes": 0, "done": False}

    def drain():
        buf = bytearray(1 << 20)
        tail = b""
        s.settimeout(60)
        while True:
            n = s.recv_into(buf)
            if not n:
                return
            got["bytes"] += n
            chunk = tail + bytes(buf[:n][-16:])
            if b"done" in chunk:
                got["done"] = True
                return
            tail = chunk[-8:]

    with s:
        reader = threading.Thread(target=drain)
        reader.start()
        s.sendall(frame(1, b"burst 1000000"))
        time.sleep(0.5)
        worst = slowest(ng, "/ok", n=10)
        worst_jvm = slowest(ng, "/jvm-ok/ok", n=10)
        busy = not got["done"]
        reader.join(120)
    assert busy, "the burst was over before the worker was measured"
    assert worst < PROMPT, "nginx's own /ok waited %.2f s" % worst
    assert worst_jvm < PROMPT, "a loop handler's /ok waited %.2f s" % worst_jvm
    assert got["done"], got
    assert ng.log_problems() == []
