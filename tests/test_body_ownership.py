"""A handler reads only its own request's body, however late it reads.

nginx keeps a large request body in a temporary file, unlinked, and closes
its descriptor when the request ends; the kernel then gives the same number
to the next file opened (another request's body).  A handler that reads its
body after its request ended (its client left, a 504, a stream kept by a
thread) must fail, never read another request's bytes.  A handler queued
in the pool whose request ended does not run at all.  Every case ends with
no task left and no temporary file open in the worker.

Request A's body is all "a", request B's (which arrives meanwhile and gets
A's old descriptor number) all "b"; the handlers record what they read
(testapp.LateBody), which /result answers.
"""

import http.client
import os
import socket
import threading
import time

import pytest

from harness import Nginx, request, wait_for

BIG = 65536             # client_body_buffer_size 1k: in a temporary file
SMALL = 100             # in memory

LOCATIONS = """
        location /java/ { jvm_content testapp.LateBody; }
        location /ring/ { jvm_content testapp.latebody/late; }
        location /t504/java/ { jvm_response_timeout 500ms;
                               jvm_content testapp.LateBody; }
        location /t504/ring/ { jvm_response_timeout 500ms;
                               jvm_content testapp.latebody/late; }
        location /async/java/ { jvm_async on; jvm_content testapp.LateBodyAsync; }
        location /async/ring/ { jvm_async on; jvm_content testapp.latebody/late-async; }
        location /hold { jvm_mode pool; jvm_content testapp.LateBody; }
        location /result { jvm_mode loop; jvm_content testapp.LateBody; }
        location /live { jvm_mode loop; jvm_content testapp.LateBody; }
"""

HTTP = """
    jvm_pool_size 1;
    jvm_queue 8;
    client_body_buffer_size 1k;
"""

HANDLERS = ["java", "ring"]


@pytest.fixture(scope="module")
def ng(mode):
    with Nginx(LOCATIONS, http=HTTP, mode=mode) as n:
        # every handler once, so that the baseline below sees a warm JVM
        for h in HANDLERS:
            assert request(n.port, "POST", "/%s/late?tag=warm" % h,
                           body=b"a" * BIG).text == "read %d a" % BIG
            assert request(n.port, "POST", "/async/%s/late?tag=warm" % h,
                           body=b"a" * BIG).text == "read %d a" % BIG
        assert request(n.port, "POST", "/hold?tag=warm",
                       body=b"a" * BIG).text == "read %d a" % BIG
        n.fds = fd_count(n)
        yield n


def worker(ng):
    (pid,) = ng.worker_pids()
    return pid


def fds(ng):
    """The worker's descriptors: their targets."""
    d = "/proc/%d/fd" % worker(ng)
    out = []
    for name in os.listdir(d):
        try:
            out.append(os.readlink(os.path.join(d, name)))
        except OSError:
            pass                    # closed meanwhile
    return out


def fd_count(ng):
    return len(fds(ng))


def temp_files(ng):
    return [t for t in fds(ng) if "client_body_temp" in t]


def result(ng, tag):
    return request(ng.port, "GET", "/result?tag=" + tag).text


def post_and_leave(ng, path, body, leave_after):
    """Sends a request with a body, waits, then closes the connection unread."""
    s = socket.create_connection(("127.0.0.1", ng.port))
    s.sendall(b"POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n"
              b"\r\n" % (path.encode(), len(body)) + body)
    time.sleep(leave_after)
    s.close()


def in_thread(fn, *args):
    out = {}

    def run():
        out["reply"] = fn(*args)

    t = threading.Thread(target=run)
    t.start()
    return t, out


def post(ng, path, body):
    return request(ng.port, "POST", path, body=body)


def settled(ng):
    """No task left in Java, nothing in flight, no temporary file open, no
    descriptor more than before."""
    def done():
        live = request(ng.port, "GET", "/live").text
        # the /live request itself is in flight while it answers
        return live == "0 1" and not temp_files(ng) and fd_count(ng) <= ng.fds
    assert wait_for(done, 60), (request(ng.port, "GET", "/live").text,
                                temp_files(ng), fd_count(ng), ng.fds)


def tag(name, handler):
    return "%s-%s-%d" % (name, handler, time.monotonic_ns())


class Holders:
    """Requests B, each with its own body in a temporary file, kept open a
    while (pool mode: queued).  They connect now and send later, when A is
    over: their sockets take descriptors now, their temporary files the
    numbers A left."""

    def __init__(self, ng, n=3):
        self.ng = ng
        self.conns = [http.client.HTTPConnection("127.0.0.1", ng.port,
                                                 timeout=30)
                      for _ in range(n)]
        for c in self.conns:
            c.connect()
        self.replies = [None] * n
        self.threads = []

    def send(self, sleep_ms):
        def one(i, c):
            self.replies[i] = request(
                self.ng.port, "POST", "/hold?tag=%s&sleep=%d"
                % (tag("b%d" % i, "hold"), sleep_ms), body=b"b" * BIG, conn=c)

        for i, c in enumerate(self.conns):
            t = threading.Thread(target=one, args=(i, c))
            t.start()
            self.threads.append(t)

    def join(self):
        for t in self.threads:
            t.join()
        for c in self.conns:
            c.close()
        for r in self.replies:
            assert r.status == 200 and r.text == "read %d b" % BIG, r


def late_result(ng, a):
    """What A's handler read, once it has."""
    def read():
        r = result(ng, a)
        return r if r.startswith(("read", "error")) else None
    return wait_for(read, 60)


def own_or_failed(what, size):
    """A late read answers the request's own bytes or an error, never B's."""
    assert what == "read %d a" % size or what.startswith("error "), what


@pytest.mark.parametrize("handler", HANDLERS)
def test_queued_request_gone_does_not_run(ng, mode, handler):
    if mode != "pool":
        pytest.skip("a queue of handlers waiting for a thread: pool mode")
    a = tag("qa", handler)
    busy_tag = tag("busy", handler)

    def tasks():
        """The runtime's live tasks (queued or running)."""
        return int(request(ng.port, "GET", "/live").text.split()[0])

    # the pool's one thread is busy (5 s: longer than the waits below take
    # on a loaded machine); A waits in the queue, its client leaves
    busy, _ = in_thread(post, ng, "/hold?tag=%s&sleep=5000" % busy_tag, b"")
    assert wait_for(lambda: result(ng, busy_tag) == "ran", 60)
    holders = Holders(ng)
    s = socket.create_connection(("127.0.0.1", ng.port))
    s.sendall(b"POST /%s/late?tag=%s HTTP/1.1\r\nHost: localhost\r\n"
              b"Content-Length: %d\r\n\r\n" % (handler.encode(), a.encode(),
                                                BIG) + b"a" * BIG)
    assert wait_for(lambda: tasks() == 2, 60), "A is not queued"
    s.close()
    # the worker saw it leave: A's task is cancelled
    assert wait_for(lambda: tasks() == 1, 60), "A is still queued"
    assert busy.is_alive(), "the busy handler ended: too slow to tell"
    # Bs arrive with their own bodies in files, queued where A was
    holders.send(0)
    busy.join()
    holders.join()
    # had it run, A's handler (first in the queue) would have said so
    # before the Bs answered
    assert result(ng, a) == "none"          # A's handler never ran
    settled(ng)


@pytest.mark.parametrize("handler", HANDLERS)
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_read_after_client_left(ng, mode, handler, kind):
    if kind == "sync" and mode == "loop":
        pytest.skip("a handler on the loop keeps its request alive")
    a = tag("left", handler)
    prefix = "/async" if kind == "async" else ""
    holders = Holders(ng)
    post_and_leave(ng, "%s/%s/late?tag=%s&sleep=1000" % (prefix, handler, a),
                   b"a" * BIG, 0.3)
    time.sleep(0.2)
    holders.send(700)
    what = late_result(ng, a)
    holders.join()
    own_or_failed(what, BIG)
    settled(ng)


@pytest.mark.log_allows(r"jvm_response_timeout")
@pytest.mark.parametrize("handler", HANDLERS)
def test_read_after_504(ng, mode, handler):
    if mode == "loop":
        pytest.skip("a handler on the loop is not timed out")
    a = tag("t504", handler)
    holders = Holders(ng)
    reply = post(ng, "/t504/%s/late?tag=%s&sleep=1000" % (handler, a),
                 b"a" * BIG)
    assert reply.status == 504
    holders.send(700)
    what = late_result(ng, a)
    holders.join()
    own_or_failed(what, BIG)
    settled(ng)


@pytest.mark.parametrize("handler", HANDLERS)
@pytest.mark.parametrize("size", [SMALL, BIG])
def test_body_kept_by_a_thread(ng, handler, size):
    """The handler answers at once; a thread of its own reads the body once
    the request is over."""
    a = tag("stash", handler)
    holders = Holders(ng)
    reply = post(ng, "/%s/late?tag=%s&stash=1&sleep=700" % (handler, a),
                 b"a" * size)
    assert reply.text == "stashed"
    holders.send(700)
    what = late_result(ng, a)
    holders.join()
    if size == SMALL:
        assert what == "read %d a" % size   # in memory: copied, always there
    else:
        own_or_failed(what, size)
    settled(ng)


@pytest.mark.parametrize("handler", HANDLERS)
def test_bodies_read_in_time(ng, handler):
    """The usual case still reads the whole body, from memory and file."""
    for size in (0, SMALL, BIG, 5 * BIG):
        body = b"a" * size
        reply = post(ng, "/%s/late?tag=%s" % (handler, tag("ok", handler)), body)
        assert reply.text == ("read %d a" % size if size else "read 0 "), size
    settled(ng)
