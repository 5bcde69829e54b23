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
"""

import socket
import struct

import pytest

from harness import parse_raw, request, wait_for

LOCATIONS = """
        location /q/ { jvm_content testapp.Queueing; }
        location /slow/ { jvm_mode pool; jvm_content testapp.Queueing; }
        location /ctl/ { jvm_mode loop; jvm_content testapp.Queueing; }
        location = /plain { return 200 "plain\\n"; }
        location = /static.txt { }
"""

DEPTH = 16


def get(path, last=False):
    return ("GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n"
            % (path, "Connection: close\r\n" if last else "")).encode()


def data_segments_in(s):
    """The data segments this socket has received (Linux's
    tcpi_data_segs_in, at offset 152 of struct tcp_info)."""
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 192)
    return struct.unpack_from("I", info, 152)[0]


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
                                        "/ctl/held").text == "1", 10), \
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
