"""Pipelined HTTP/1.1 requests (issue 37; src/c/ngx_http_jvm_pipeline.c).

A handler's answer written while the whole next request already waits in
the connection's buffer corks the socket: the pipeline's answers leave
together rather than one segment each.  Through real HTTP, in every mode:
the answers come in order and framed whatever serves each request (a
handler, nginx's `return`, a static file); on the loop (and coloop, whose
handler answers in its first slice) a pipeline of 16 reaches the client in
at most a few segments (the client's own TCP_INFO counts them); an answer
is never held behind a later request that waits (a blocked pool handler),
nor behind a next request the client has not finished sending; clients
that leave mid-pipeline, or send a body in it, break nothing.

The same for HTTP/2's streams (h2c, prior knowledge, on the second port;
a small client of the tests' own below, whose socket TCP_INFO reads): the
answers made while nginx reads a batch of a connection's frames leave
together; a stream that waits holds none back; clients that reset the
connection, or cancel their streams, break nothing.
"""

import socket
import struct

import pytest

from harness import data_segments_in, parse_raw, request, wait_for

LOCATIONS = """
        location /q/ { jvm_content testapp.Queueing; }
        location /slow/ { jvm_mode pool; jvm_content testapp.Queueing; }
        location /ctl/ { jvm_mode loop; jvm_content testapp.Queueing; }
        location = /plain { return 200 "plain\\n"; }
        location = /static.txt { }
"""

# HTTP/2 without TLS (prior knowledge) on the second port, the same
# locations ("listen ... http2": nginx 1.25.1 and newer warn, and serve)
HTTP = """
    server {
        listen 127.0.0.1:@PORT2@ http2;
%s    }
""" % LOCATIONS

DEPTH = 16


def get(path, last=False):
    return ("GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n"
            % (path, "Connection: close\r\n" if last else "")).encode()


def read_replies(s, n, data=b""):
    """Reads from s until n whole replies (each framed by its
    Content-Length) are there; returns (the replies, bytes left over)."""
    replies = []
    while len(replies) < n:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            reply = parse_raw(head + sep)
            length = int(reply.header("Content-Length"))
            if len(rest) >= length:
                reply.body = rest[:length]
                replies.append(reply)
                data = rest[length:]
                continue
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError("closed after %d of %d replies" % (len(replies), n))
        data += chunk
    return replies, data


@pytest.fixture(scope="module")
def static(ng):
    with open(ng.path("html", "static.txt"), "wb") as f:
        f.write(b"static\n")
    return ng


def test_a_pipeline_is_answered_in_order(static):
    """Handlers' answers, nginx's own and a file, 3 x 16 requests in one
    write: each answer in its place, framed, and the connection closed
    after the last as it asked."""
    paths = []
    for i in range(3 * DEPTH):
        paths.append(("/q/run?tag=t%d" % i, "/plain", "/static.txt")[i % 3])
    data = b"".join(get(p, last=(i == len(paths) - 1))
                    for i, p in enumerate(paths))
    with socket.create_connection(("127.0.0.1", static.port), timeout=10) as s:
        s.sendall(data)
        replies, rest = read_replies(s, len(paths))
        assert s.recv(1) == b"", "the connection is closed after the last"
    assert rest == b""
    for i, (path, reply) in enumerate(zip(paths, replies)):
        assert reply.status == 200, (path, reply)
        expected = {"/plain": b"plain\n", "/static.txt": b"static\n"}.get(
            path, ("t%d" % i).encode())
        assert reply.body == expected, (i, path, reply.body)


def test_the_answers_of_a_pipeline_leave_together(ng, mode):
    """16 requests in one write, answered by a handler: the client receives
    them in at most 3 segments (16, one an answer, before), five times on
    one connection.  Pool and virtual answer a pipeline's requests one
    after the other on other threads: each answer leaves when it is made."""
    if mode in ("pool", "virtual"):
        pytest.skip("each answer of a pipeline comes from another thread, "
                    "one loop iteration after the last")
    with socket.create_connection(("127.0.0.1", ng.port), timeout=10) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for round in range(5):
            before = data_segments_in(s)
            s.sendall(b"".join(get("/q/run?tag=r%di%d" % (round, i))
                               for i in range(DEPTH)))
            replies, rest = read_replies(s, DEPTH)
            segments = data_segments_in(s) - before
            assert [r.body for r in replies] == \
                [("r%di%d" % (round, i)).encode() for i in range(DEPTH)]
            assert rest == b""
            print("round", round, segments)
            assert 1 <= segments <= 3, \
                "%d answers came in %d segments" % (DEPTH, segments)


def test_an_answer_is_not_held_behind_a_request_that_waits(ng):
    """The first answer of a pipeline arrives while the second request's
    handler (a pool thread) is still blocked; the third follows it."""
    with socket.create_connection(("127.0.0.1", ng.port), timeout=10) as s:
        s.sendall(get("/q/run?tag=first") + get("/slow/block?ms=20000")
                  + get("/q/run?tag=third"))
        replies, rest = read_replies(s, 1)
        assert replies[0].body == b"first"
        assert wait_for(lambda: request(ng.port, "GET",
                                        "/ctl/held").text == "1", 60), \
            "the second request is blocked"
        assert request(ng.port, "GET", "/ctl/release").text == "ok"
        replies, rest = read_replies(s, 2, rest)
        assert [r.body for r in replies] == [b"released", b"third"]


def test_an_answer_is_not_held_behind_a_next_request_half_sent(ng):
    """The next request has begun but not ended: the answer before it
    leaves at once (no cork: the next one waits for the client)."""
    with socket.create_connection(("127.0.0.1", ng.port), timeout=10) as s:
        s.sendall(get("/q/run?tag=whole") + b"GET /q/run?tag=half HTTP/1.1\r\nHo")
        replies, rest = read_replies(s, 1)
        assert replies[0].body == b"whole"
        s.sendall(b"st: x\r\n\r\n")
        replies, rest = read_replies(s, 1, rest)
        assert replies[0].body == b"half"


def test_a_body_in_a_pipeline(ng):
    """A POST with a body, then GETs: the bytes after a request are its
    body, not a next request, and each is answered."""
    body = b"GET /plain HTTP/1.1\r\nHost: x\r\n\r\n"    # looks like a request
    post = (b"POST /q/run?tag=post HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body
    with socket.create_connection(("127.0.0.1", ng.port), timeout=10) as s:
        s.sendall(post + get("/q/run?tag=after") + get("/plain", last=True))
        replies, rest = read_replies(s, 3)
    assert [r.body for r in replies] == [b"post", b"after", b"plain\n"]


def test_clients_that_leave_mid_pipeline(ng, mode):
    """50 clients send a pipeline and reset the connection at once, 50
    more half-close it after sending: the first leave; the second get the
    answers in order, every one on the loop (pool and virtual take the end
    of a client's input while a task runs for the client leaving, as
    nginx's proxy does: a first part of them there).  Then the worker
    serves on."""
    pipeline = b"".join(get("/q/run?tag=x%d" % i) for i in range(DEPTH))
    for _ in range(50):
        s = socket.create_connection(("127.0.0.1", ng.port), timeout=10)
        s.sendall(pipeline)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))
        s.close()
    for _ in range(50):
        with socket.create_connection(("127.0.0.1", ng.port),
                                      timeout=10) as s:
            s.sendall(pipeline)
            s.shutdown(socket.SHUT_WR)
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        replies = []
        while data:
            head, sep, rest = data.partition(b"\r\n\r\n")
            assert sep, data
            reply = parse_raw(head + sep)
            length = int(reply.header("Content-Length"))
            assert len(rest) >= length, "an answer cut short"
            replies.append(rest[:length])
            data = rest[length:]
        assert replies == [b"x%d" % i for i in range(len(replies))]
        if mode in ("loop", "coloop"):
            assert len(replies) == DEPTH
    assert request(ng.port, "GET", "/plain").status == 200
    assert request(ng.port, "GET", "/q/run?tag=still").text == "still"


# --- HTTP/2 -----------------------------------------------------------------

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0, 1, 3, 4, 6, 7
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1


def frame(kind, flags, stream, payload=b""):
    return struct.pack("!I", len(payload))[1:] + struct.pack(
        "!BBI", kind, flags, stream) + payload


def hpack_literal(index, value):
    """A header field whose name is entry `index` of HPACK's static table,
    its value a literal, not indexed (RFC 7541, 6.2.2)."""
    value = value.encode()
    assert index < 15 and len(value) < 127
    return bytes([index, len(value)]) + value


def h2_get(stream, path):
    """A HEADERS frame: GET path, the stream's only frame."""
    block = (b"\x82\x86"                      # :method GET, :scheme http
             + hpack_literal(4, path) + hpack_literal(1, "x"))
    return frame(HEADERS, END_STREAM | END_HEADERS, stream, block)


class H2:
    """A client connection speaking HTTP/2 without TLS: what a test needs,
    no more.  Answers are {stream: (status, body)}; nginx sends status 200
    as the static table's entry 8 (0x88), every other status otherwise."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.s.sendall(PREFACE + frame(SETTINGS, 0, 0))
        self.buf = b""
        self.status, self.body, self.done = {}, {}, []

    def close(self):
        self.s.close()

    def read_frame(self):
        while True:
            if len(self.buf) >= 9:
                n = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) >= 9 + n:
                    kind, flags, stream = struct.unpack("!BBI", self.buf[3:9])
                    payload = self.buf[9:9 + n]
                    self.buf = self.buf[9 + n:]
                    return kind, flags, stream & 0x7FFFFFFF, payload
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("closed; streams done: %s" % self.done)
            self.buf += chunk

    def answers(self, n):
        """Reads until n more streams have ended: their {stream: (status,
        body)}."""
        got = {}
        while len(got) < n:
            kind, flags, stream, payload = self.read_frame()
            if kind == SETTINGS and not flags & ACK:
                self.s.sendall(frame(SETTINGS, ACK, 0))
            elif kind == PING and not flags & ACK:
                self.s.sendall(frame(PING, ACK, 0, payload))
            elif kind == GOAWAY:
                raise AssertionError("GOAWAY %r" % payload)
            elif kind == RST_STREAM:
                raise AssertionError("stream %d reset: %r" % (stream, payload))
            elif kind == HEADERS:
                self.status[stream] = 200 if payload[:1] == b"\x88" else None
            elif kind == DATA:
                self.body[stream] = self.body.get(stream, b"") + payload
            if kind in (HEADERS, DATA) and flags & END_STREAM:
                self.done.append(stream)
                got[stream] = (self.status.get(stream),
                               self.body.get(stream, b""))
        return got


@pytest.fixture
def h2(ng):
    c = H2(ng.port2)
    c.answers(0)
    yield c
    c.close()


def test_http2_streams_are_answered(static, h2):
    """48 streams in one write, served by a handler, nginx's `return` and a
    file in turn: each stream has its own answer."""
    paths = [("/q/run?tag=s%d" % i, "/plain", "/static.txt")[i % 3]
             for i in range(3 * DEPTH)]
    h2.s.sendall(b"".join(h2_get(1 + 2 * i, p) for i, p in enumerate(paths)))
    got = h2.answers(len(paths))
    for i, path in enumerate(paths):
        expected = {"/plain": b"plain\n", "/static.txt": b"static\n"}.get(
            path, ("s%d" % i).encode())
        assert got[1 + 2 * i] == (200, expected), (i, path)


def test_http2_answers_of_a_batch_leave_together(ng, mode, h2):
    """16 streams in one write, answered by a handler while nginx reads
    them: they reach the client in at most 3 data segments, five times on
    one connection (20 without the cork).  Pool and virtual answer from
    other threads, each when it is made: answered, not counted.  A first
    batch, not counted, warms the worker the connection reached: coloop's
    first requests there may take more than their first slice."""
    stream = 1
    for round in range(-1, 5):
        before = data_segments_in(h2.s)
        ids = list(range(stream, stream + 2 * DEPTH, 2))
        stream += 2 * DEPTH
        h2.s.sendall(b"".join(h2_get(sid, "/q/run?tag=r%ds%d" % (round, sid))
                              for sid in ids))
        got = h2.answers(DEPTH)
        segments = data_segments_in(h2.s) - before
        assert got == {sid: (200, ("r%ds%d" % (round, sid)).encode())
                       for sid in ids}
        print("round", round, segments)
        if mode in ("loop", "coloop") and round >= 0:
            assert 1 <= segments <= 3, \
                "%d answers came in %d segments" % (DEPTH, segments)


def test_http2_an_answer_is_not_held_behind_a_stream_that_waits(ng, h2):
    """Stream 1's handler (a pool thread) blocks; stream 3, in the same
    write, is answered meanwhile; then stream 1, once released."""
    h2.s.sendall(h2_get(1, "/slow/block?ms=20000") + h2_get(3, "/q/run?tag=3"))
    assert h2.answers(1) == {3: (200, b"3")}
    assert wait_for(lambda: request(ng.port, "GET",
                                    "/ctl/held").text == "1", 60), \
        "stream 1 is blocked"
    assert request(ng.port, "GET", "/ctl/release").text == "ok"
    assert h2.answers(1) == {1: (200, b"released")}


def test_http2_clients_that_leave_mid_batch(ng):
    """50 clients send 16 streams and reset the connection at once, 50 more
    cancel every stream (RST_STREAM) right after sending it: then the
    worker serves on, on both ports."""
    batch = b"".join(h2_get(1 + 2 * i, "/q/run?tag=x%d" % i)
                     for i in range(DEPTH))
    cancel = b"".join(frame(RST_STREAM, 0, 1 + 2 * i, struct.pack("!I", 8))
                      for i in range(DEPTH))
    for _ in range(50):
        c = H2(ng.port2)
        c.s.sendall(batch)
        c.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                       struct.pack("ii", 1, 0))
        c.close()
    for _ in range(50):
        c = H2(ng.port2)
        c.s.sendall(batch + cancel)
        c.close()
    c = H2(ng.port2)
    try:
        c.s.sendall(h2_get(1, "/q/run?tag=still") + h2_get(3, "/plain"))
        assert c.answers(2) == {1: (200, b"still"), 3: (200, b"plain\n")}
    finally:
        c.close()
    assert request(ng.port, "GET", "/q/run?tag=still").text == "still"
