"""Requests that end while the event loop resumes one Worker.wake()'s batch
of task ids (ngx_http_jvm_task_notified): a request released meanwhile
takes its ids out of the batch (ngx_http_jvm_ctx_resuming,
ngx_http_jvm_ctx_release), so that none is resumed after its pool is gone.

testapp.Batch: a parent in a pool starts subrequests to pool (or virtual,
coloop) handlers told to answer at the same moment, so that their ids are
named in one batch.  A child larger than subrequest_output_buffer_size
makes nginx end the whole request (NGX_ERROR, "too big subrequest
response") when the first of them is resumed: the pool of the parent and
of every sibling is freed while their ids wait further in the batch.
Clients also leave: before the children answer, and in the middle of the
parent's response.  The worker must neither crash nor log anything but
what is expected; `make asan` runs this file against the module built with
AddressSanitizer, which reports a use after free.
"""

import socket
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness import Nginx, request

SIZE_LIMIT = 4096

LOCATIONS = """
        location = /batch { jvm_mode pool; jvm_content testapp.Batch; }
        location = /batch-child { internal; jvm_mode @CHILD@;
                                  subrequest_output_buffer_size %d;
                                  jvm_content testapp.Batch$Child; }
""" % SIZE_LIMIT

HTTP = """
    jvm_pool_size 48;
    jvm_queue 400;
"""

TOO_BIG = r"\[error\].*too big subrequest response"


@pytest.fixture(scope="module")
def ng(mode):
    # the children in the mode under test, but off the loop: they sleep
    child = "pool" if mode == "loop" else mode
    with Nginx(LOCATIONS.replace("@CHILD@", child), http=HTTP,
               mode=mode) as n:
        yield n


def batch(children=8, size=100, pad=0, delay=50):
    return "/batch?n=%d&size=%d&pad=%d&delay=%d" % (children, size, pad, delay)


def lines(children, size):
    return "".join("200 %d\n" % size for _ in range(children))


def leave(s):
    """Closes with a reset: nginx's next read or write fails at once."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def get_then_leave(port, path, after):
    """Sends a GET, reads `after` bytes of the response (none: leaves at
    once), then resets the connection."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        s.sendall(("GET %s HTTP/1.1\r\nHost: t\r\n\r\n" % path).encode())
        got = 0
        while got < after:
            b = s.recv(min(65536, after - got))
            if not b:
                break
            got += len(b)
    finally:
        leave(s)


def too_big(port, path):
    """nginx ends the request without an answer: the connection closes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        s.sendall(("GET %s HTTP/1.1\r\nHost: t\r\n\r\n" % path).encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        return data
    finally:
        s.close()


def assert_alive(ng, workers):
    assert ng.worker_pids() == workers, "a worker was replaced:\n" + \
        ng.log_text()[-3000:]
    assert not ng.log_lines(r"exited on signal")
    r = ng.get(batch(children=2))
    assert (r.status, r.text) == (200, lines(2, 100))


def test_children_named_in_one_batch_all_answer(ng):
    workers = ng.worker_pids()
    with ThreadPoolExecutor(8) as ex:
        replies = list(ex.map(lambda i: ng.get(batch(children=8)),
                              range(40)))
    for r in replies:
        assert (r.status, r.text) == (200, lines(8, 100))
    assert_alive(ng, workers)


@pytest.mark.log_allows(TOO_BIG)
def test_a_request_ended_while_its_children_wait_in_the_batch(ng):
    """Every child too big: the first one resumed ends the request (and
    frees the pool every sibling's context lives in); the others, named in
    the same batch, must not be resumed."""
    workers = ng.worker_pids()
    with ThreadPoolExecutor(8) as ex:
        answers = list(ex.map(
            lambda i: too_big(ng.port, batch(children=8,
                                             size=SIZE_LIMIT * 2)),
            range(100)))
    assert all(a == b"" for a in answers), answers[:3]
    assert ng.log_lines(TOO_BIG)
    assert_alive(ng, workers)


@pytest.mark.log_allows(TOO_BIG)
def test_clients_that_leave_among_requests_that_end(ng):
    """200 requests at once, in four kinds: answered whole; a child too big
    (ended by nginx); the client gone before the children answer; the
    client gone in the middle of the parent's response (256 KB)."""
    workers = ng.worker_pids()
    errors = []

    def one(i):
        try:
            kind = i % 4
            if kind == 0:
                r = request(ng.port, "GET", batch(children=6))
                assert (r.status, r.text) == (200, lines(6, 100))
            elif kind == 1:
                too_big(ng.port, batch(children=6, size=SIZE_LIMIT * 2))
            elif kind == 2:
                get_then_leave(ng.port, batch(children=6, delay=30), 0)
            else:
                get_then_leave(ng.port, batch(children=6,
                                              pad=256 * 1024), 4096)
        except Exception as e:         # reported below, with the others
            errors.append("%d: %r" % (i, e))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(200)]
    for t in threads:
        t.start()
        time.sleep(0.002)
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "clients still waiting"
    assert not errors, errors[:5]
    assert_alive(ng, workers)
