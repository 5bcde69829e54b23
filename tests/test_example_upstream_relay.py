"""examples/upstream-relay: calls out through jvm_client locations, served
with the example's nginx.conf against backends in Python.

- A WebSocket relays a backend's server-sent events as they come: the
  backend writes each event only once the test has seen the one before
  over the WebSocket, so an event held anywhere on the way stops the test.
- A WebSocket client that leaves (with a close frame, or dropping its
  connection, mid-stream or before the backend answered) ends the
  backend's call: the backend's writes fail.
- A timer refreshes a value from an upstream{} of two servers; one server
  is killed (its listening socket and its connections closed) mid-run and
  the refreshes go on from the other, none failing."""

import json
import queue
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from harness import (ROOT, Nginx, read_ws_frame, ring_classpath, wait_for,
                     ws_close_code, ws_frame, ws_handshake)

# The example's nginx.conf (its README), in the harness's server.
LOCATIONS = """
        location /_events/ { jvm_client events;
                             proxy_buffering off;
                             proxy_read_timeout 1h;
                             proxy_http_version 1.1;
                             proxy_set_header Connection "";
                             proxy_pass http://events/; }
        location /_values/ { jvm_client values;
                             proxy_connect_timeout 1s;
                             proxy_read_timeout 1s;
                             proxy_next_upstream error timeout http_502 http_503 http_504;
                             proxy_http_version 1.1;
                             proxy_set_header Connection "";
                             proxy_pass http://values/; }
        location /feeds/ { jvm_content upstream-relay.core/feed; }
        location = /value { jvm_content upstream-relay.core/value; }
"""

HTTP = """
    jvm_init upstream-relay.core/init;
    upstream events { server 127.0.0.1:@EVENTS@; }
    upstream values { server 127.0.0.1:@A@; server 127.0.0.1:@B@; keepalive 4; }
"""

# /steps: each piece written when the test releases it; what the relay
# makes of them (comments, event: and id: lines read past, several data:
# lines one message, CRLF as LF, an event the end cuts off dropped)
STEPS = [b"data: one\n\n",
         b": a comment\nevent: note\ndata: two\ndata: lines\n\n",
         b"id: 3\r\ndata: three\r\n\r\n",
         b"data: \xc3\xa9t\xc3\xa9\n\n",
         b"data: cut off by the end"]
MESSAGES = ["one", "two\nlines", "three", "\u00e9t\u00e9"]

TICKS_MAX = 400            # /ticks: 20 s of ticks at most, then it ends


class Quiet:
    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    """A threaded HTTP server on a free port of 127.0.0.1 that can be
    killed: its listening socket and every connection it holds closed."""
    daemon_threads = True

    def __init__(self, handler, name):
        super().__init__(("127.0.0.1", 0), handler)
        self.name = name
        self.port = self.server_address[1]
        self.lock = threading.Lock()
        self.conns = set()
        self.count = 0              # /value: answers given
        self.gate = queue.Queue()   # /steps: one item a piece
        self.ended = []             # /ticks: ("closed" or "finished", ticks)
        threading.Thread(target=self.serve_forever, args=(0.05,),
                         daemon=True).start()

    def process_request(self, request, client_address):
        with self.lock:
            self.conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.lock:
            self.conns.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):
        pass                        # a connection the kill cut

    def kill(self):
        self.shutdown()
        self.server_close()
        with self.lock:
            for c in list(self.conns):
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class Events(Quiet, BaseHTTPRequestHandler):
    """/steps: STEPS, each when the test releases it; /ticks: an event
    every 50 ms until a write fails (TICKS_MAX at most); /late: /ticks
    once the test releases it; else 404."""
    protocol_version = "HTTP/1.1"

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self):
        if self.path == "/late":
            self.server.gate.get(timeout=30)
        if self.path not in ("/steps", "/ticks", "/late"):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        if self.path == "/steps":
            for piece in STEPS:
                self.server.gate.get(timeout=30)
                self.chunk(piece)
            self.chunk(b"")
            return
        n = 0
        try:
            while n < TICKS_MAX:
                self.chunk(b"data: tick %d\n\n" % n)
                n += 1
                time.sleep(0.05)
            self.chunk(b"")
            self.server.ended.append(("finished", n))
        except OSError:
            self.server.ended.append(("closed", n))
        self.close_connection = True


class Values(Quiet, BaseHTTPRequestHandler):
    """/value: "NAME COUNT", this server's name and how many it answered."""
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        with self.server.lock:
            self.server.count += 1
            body = ("%s %d" % (self.server.name, self.server.count)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def relay(mode):
    servers = [Server(Events, "events"), Server(Values, "a"),
               Server(Values, "b")]
    events, a, b = servers
    http = (HTTP.replace("@EVENTS@", str(events.port))
            .replace("@A@", str(a.port)).replace("@B@", str(b.port)))
    cp = ring_classpath() + [str(ROOT / "examples" / "upstream-relay" / "src")]
    try:
        with Nginx(LOCATIONS, http=http, classpath=cp, mode=mode) as n:
            yield SimpleNamespace(nginx=n, events=events, a=a, b=b)
    finally:
        for s in servers:
            if s.socket.fileno() >= 0:
                s.kill()


def text_frame(s):
    b0, payload = read_ws_frame(s)
    assert b0 == 0x81, "a whole text message: %#x %r" % (b0, payload)
    return payload.decode("utf-8")


def close_frame(s):
    """The server's close frame (messages before it skipped): its code
    and reason; the server then closes the connection."""
    while True:
        b0, payload = read_ws_frame(s)
        if b0 & 0x0F == 8:
            break
    return ws_close_code(payload), payload[2:].decode()


def open_feed(relay, name):
    s, head = ws_handshake(relay.nginx.port, "/feeds/" + name)
    assert head.startswith(b"HTTP/1.1 101 "), head
    return s


def test_events_reach_the_websocket_as_they_come(relay):
    relay.events.gate = queue.Queue()
    s = open_feed(relay, "steps")
    with s:
        for want in MESSAGES:
            relay.events.gate.put(1)    # the backend writes the next piece
            assert text_frame(s) == want
        relay.events.gate.put(1)        # the cut event, then the end
        assert close_frame(s) == (1000, "the stream ended")
        s.sendall(ws_frame(8, struct.pack("!H", 1000)))
        assert s.recv(10) == b""


@pytest.mark.parametrize("how", ["close frame", "dropped"])
def test_a_client_that_leaves_ends_the_backends_call(relay, how):
    relay.events.ended = []
    s = open_feed(relay, "ticks")
    with s:
        assert [text_frame(s) for _ in range(3)] == \
            ["tick 0", "tick 1", "tick 2"]
        if how == "close frame":
            s.sendall(ws_frame(8, struct.pack("!H", 1000)))
            assert close_frame(s)[0] == 1000
    # the body closed ends the call: nginx closes its connection to the
    # backend, whose next writes fail
    ended = wait_for(lambda: relay.events.ended, 10)
    assert ended and ended[0][0] == "closed", ended
    assert ended[0][1] < TICKS_MAX


def test_a_client_that_leaves_before_the_answer_ends_the_call(relay):
    # the answer comes after the client left (or as it leaves): the
    # relay's reader closes the body it gets, which ends the call
    relay.events.ended = []
    relay.events.gate = queue.Queue()
    s = open_feed(relay, "late")
    s.close()
    relay.events.gate.put(1)
    ended = wait_for(lambda: relay.events.ended, 10)
    assert ended and ended[0][0] == "closed", ended
    assert ended[0][1] < TICKS_MAX


def test_a_backend_error_closes_the_websocket(relay):
    with open_feed(relay, "nosuch") as s:
        assert close_frame(s) == (1011, "the backend answered 404")


def test_a_feed_is_a_websocket(relay):
    r = relay.nginx.get("/feeds/steps")
    assert (r.status, r.header("Upgrade")) == (426, "websocket"), r
    assert relay.nginx.get("/feeds/No_Such").status == 404
    # a client never reaches the jvm_client locations themselves
    assert relay.nginx.get("/_values/value").status == 404


def value(relay):
    r = relay.nginx.get("/value")
    assert r.status in (200, 503), r
    return json.loads(r.body)


# The killed server: nginx fails to connect to it, or the kill cuts a
# refresh it was answering; proxy_next_upstream then asks the other one.
@pytest.mark.log_allows(
    r"(connect\(\) failed \(111: Connection refused\)"
    r"|upstream prematurely closed connection"
    r"|(recv|readv|send|writev)\(\) failed \((32|104): [A-Za-z ]+\))"
    r" while [a-z ]+ upstream, .* upstream: \"http://127\.0\.0\.1:\d+/value\"")
def test_the_timer_skips_a_dead_server(relay):
    a, b = relay.a, relay.b

    def both_served():
        # both servers answer the refreshes in turn (round robin), and this
        # worker has refreshed (under NGINX_JVM_RELOAD it has just started)
        v = value(relay)
        return a.count >= 2 and b.count >= 2 and v["refreshed"] >= 2 and v

    v = wait_for(both_served, 60)
    assert v, (a.count, b.count, value(relay))
    assert v["failed"] == 0, v
    assert v["value"].split()[0] in ("a", "b") and v["age_ms"] < 5000, v
    a.kill()
    with a.lock:
        a_at_kill = a.count
    with b.lock:
        b_at_kill = b.count
    before = value(relay)
    killed = time.monotonic()

    def went_on():
        # refreshes go on for 2 s after the kill, 5 of them at least
        v = value(relay)
        return (time.monotonic() - killed >= 2
                and v["refreshed"] >= before["refreshed"] + 5 and v)

    v = wait_for(went_on, 30, interval=0.1)
    assert v, value(relay)
    assert v["failed"] == 0, v
    name, count = v["value"].split()
    assert name == "b" and int(count) > b_at_kill, (v, b_at_kill)
    assert v["age_ms"] < 2000, v
    assert a.count == a_at_kill
