"""Generated tests of a request's life across nginx and the JVM.

Clients that vanish at random points (before the body, mid-body, while the
request is queued or its handler runs, mid-response) and clients that stay,
with bodies in memory and in temporary files, plain and chunked, against a
Ring and a Java handler in every mode.  Every response a client reads whole
must be its own request's: the handler answers the token the client sent
and the digest of the body it read, then (streamed) lines that each carry
the token again.  After each run the worker's live tasks, descriptors and
threads must come back to what they were before it.

Seeded and bounded: NGINX_JVM_LIFE_SEED (default: a fixed seed) and
NGINX_JVM_LIFE_CLIENTS (clients per handler and mode; default 160, about
15 s each).  A larger run: NGINX_JVM_LIFE_CLIENTS=5000 (docs/security.md).
A failure prints the seed and the client's plan, to replay it.
"""

import hashlib
import os
import random
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness import Nginx, wait_for

SEED = int(os.environ.get("NGINX_JVM_LIFE_SEED", "20261124"))
CLIENTS = int(os.environ.get("NGINX_JVM_LIFE_CLIENTS", "160"))
# a client's connection never outlives this (a test is bounded in time)
CLIENT_TIMEOUT = 15

# nginx keeps a body larger than client_body_buffer_size in a temporary file
BUFFER = 8192

LOCATIONS = """
        client_body_buffer_size %d;
        client_max_body_size 4m;
        location /ring { jvm_content testapp.life/handler; }
        location /java { jvm_content testapp.Life; }
        location /stats { jvm_mode loop; jvm_content testapp.life/stats; }
        location /live-tasks { jvm_mode loop;
                               jvm_content testapp.offloop/live-tasks; }
""" % BUFFER

# a small pool and queue, so that requests wait in the queue and some find
# it full (503)
HTTP = """
    jvm_pool_size 2;
    jvm_queue 24;
    jvm_response_timeout 5s;
"""


@pytest.fixture(scope="module")
def nginx(mode):
    n = Nginx(locations=LOCATIONS, http=HTTP, mode=mode)
    with n:
        yield n


# --- what a client does --------------------------------------------------

FATES = ("complete", "complete", "complete", "keepalive", "before-body",
         "mid-body", "after-body", "mid-response")


def plan(rng, i, mode):
    """What client i does, drawn from rng: a dict, printed on failure."""
    fate = rng.choice(FATES)
    size = rng.choice([0, rng.randrange(1, BUFFER // 2),
                       rng.randrange(BUFFER * 2, 200000)])
    if fate in ("before-body", "mid-body") and size == 0:
        size = rng.randrange(1, 50000)
    # on the loop a sleeping handler stops the worker: short sleeps there
    top = 30 if mode == "loop" else 250
    return {
        "i": i,
        "fate": fate,
        "size": size,
        "chunked": rng.random() < 0.25,
        "sleep": rng.choice([0, 0, rng.randrange(1, top)]),
        "lines": (rng.randrange(2000, 20000) if fate == "mid-response"
                  else rng.choice([0, 0, rng.randrange(1, 300)])),
        # when the client leaves: seconds after its last byte, or the
        # number of response bytes it reads first
        "wait": rng.uniform(0, 0.3),
        "read": rng.randrange(0, 20000),
        "token": "t%d-%08x" % (i, rng.getrandbits(32)),
        "seed": rng.getrandbits(32),
    }


def body_of(p):
    """The client's body: pseudo-random bytes with its token at the start."""
    r = random.Random(p["seed"])
    head = (p["token"] + ":").encode()
    if p["size"] <= len(head):
        return head[:p["size"]]
    return head + r.randbytes(p["size"] - len(head))


def request_bytes(p, path, body, keepalive=False):
    head = ["POST %s?sleep=%d&lines=%d HTTP/1.1" % (path, p["sleep"],
                                                    p["lines"]),
            "Host: localhost", "X-Token: " + p["token"],
            "X-Sha256: " + hashlib.sha256(body).hexdigest()]
    if not keepalive:
        head.append("Connection: close")
    if p["chunked"]:
        head.append("Transfer-Encoding: chunked")
        data = b""
        for at in range(0, len(body), 7000):
            part = body[at:at + 7000]
            data += b"%x\r\n%s\r\n" % (len(part), part)
        data += b"0\r\n\r\n"
    else:
        head.append("Content-Length: %d" % len(body))
        data = body
    return ("\r\n".join(head) + "\r\n\r\n").encode(), data


class Reader:
    """Reads responses off one socket: head, then a body framed by
    Content-Length or chunked encoding."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _fill(self):
        b = self.sock.recv(65536)
        if not b:
            raise EOFError("the server closed the connection")
        self.buf += b

    def _until(self, sep):
        while sep not in self.buf:
            self._fill()
        out, _, self.buf = self.buf.partition(sep)
        return out

    def _exactly(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def response(self):
        lines = self._until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            body = self._exactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            parts = []
            while True:
                size = int(self._until(b"\r\n").split(b";")[0], 16)
                if size == 0:
                    self._until(b"\r\n")
                    break
                parts.append(self._exactly(size))
                self._exactly(2)
            body = b"".join(parts)
        else:
            while True:
                try:
                    self._fill()
                except EOFError:
                    break
            body, self.buf = self.buf, b""
        return status, headers, body


def check_own(p, status, body, sent):
    """None when the response is the client's own, else what is wrong."""
    if status == 503:
        return None                 # the queue was full: nothing to check
    if status != 200:
        return "status %d: %r" % (status, body[:200])
    want = ("token=%s\nsha=%s\nlen=%d\n" % (
        p["token"], hashlib.sha256(sent).hexdigest(), len(sent))).encode()
    if not body.startswith(want):
        return "not its own answer: %r, wanted %r" % (body[:200], want)
    lines = body[len(want):].split(b"\n")
    expected = [("%s %d" % (p["token"], i)).encode()
                for i in range(p["lines"])] + [b""]
    if lines != expected:
        return "streamed lines not its own (%d lines)" % len(lines)
    return None


def run_client(port, path, p):
    """Plays one client's plan; answers (outcome, error or None)."""
    body = body_of(p)
    fate = p["fate"]
    s = socket.create_connection(("127.0.0.1", port), timeout=CLIENT_TIMEOUT)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        head, data = request_bytes(p, path, body,
                                   keepalive=(fate == "keepalive"))
        if fate == "before-body":
            s.sendall(head)
            time.sleep(p["wait"] / 3)
            return "left", None
        if fate == "mid-body":
            s.sendall(head + data[:max(1, len(data) // 2)])
            time.sleep(p["wait"] / 3)
            return "left", None
        s.sendall(head + data)
        if fate == "after-body":
            time.sleep(p["wait"])
            return "left", None
        reader = Reader(s)
        if fate == "mid-response":
            want = p["read"]
            while len(reader.buf) < want:
                reader._fill()
            return "left", None
        status, _, got = reader.response()
        problem = check_own(p, status, got, body)
        if problem or fate != "keepalive" or status == 503:
            return "answered", problem
        # the same connection again: a second request must be framed as
        # its own, whatever the first response was
        q = dict(p, token=p["token"] + "b", lines=p["lines"] // 2)
        body2 = body_of(q)
        head2, data2 = request_bytes(q, path, body2)
        s.sendall(head2 + data2)
        status, _, got = reader.response()
        return "answered", check_own(q, status, got, body2)
    except (EOFError, ConnectionError) as e:
        if fate in ("complete", "keepalive"):
            return "answered", "connection ended: %s" % e
        return "left", None
    except socket.timeout:
        return "answered", "timed out after %ds" % CLIENT_TIMEOUT
    finally:
        s.close()


# --- the worker's baseline ----------------------------------------------

def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def threads(pid):
    """The worker's threads, but for the JIT's compiler threads, which the
    JVM starts and stops as it compiles."""
    names = []
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
                names.append(f.read().strip())
        except OSError:
            continue
    return len([n for n in names if "CompilerThre" not in n])


def live_tasks(n):
    return int(n.get("/live-tasks").text)


def snapshot(n):
    pid = n.worker_pids()[0]
    return {"tasks": live_tasks(n), "fds": fds(pid), "threads": threads(pid)}


def settled(n, base):
    """The worker back to its baseline (waits up to 60 s); answers the last
    snapshot and whether it matched."""
    last = {}

    def back():
        last.update(snapshot(n))
        return (last["tasks"] <= base["tasks"] and last["fds"] <= base["fds"]
                and last["threads"] <= base["threads"])
    return wait_for(back, 60, 0.25), last


@pytest.mark.log_allows(r"the thread pool.s queue is full",
                        r"too many requests in flight on (the loop.s )?virtual threads")
@pytest.mark.parametrize("path", ["/ring", "/java"])
def test_every_answer_is_its_own(nginx, mode, path):
    rng = random.Random("%d/%s/%s" % (SEED, mode, path))
    plans = [plan(rng, i, mode) for i in range(CLIENTS)]

    # warm up every kind of answer once, then take the baseline
    for fate in ("complete", "keepalive"):
        for size in (0, 100, BUFFER * 4):
            p = dict(plans[0], fate=fate, size=size, sleep=0, lines=3,
                     token="warm")
            outcome, problem = run_client(nginx.port, path, p)
            assert problem is None, (p, problem)
    ok, base = settled(nginx, {"tasks": 0, "fds": 10 ** 6,
                               "threads": 10 ** 6})
    assert base["tasks"] == 0, base

    # 16 clients at a time, in the order drawn
    results = []
    lock = threading.Lock()

    def one(p):
        r = run_client(nginx.port, path, p)
        with lock:
            results.append((p, r))

    deadline = time.monotonic() + 120
    with ThreadPoolExecutor(16) as pool:
        for p in plans:
            pool.submit(one, p)
    assert time.monotonic() < deadline, "the run overran its bound"

    # what the handlers of the clients that left read: never another's body
    stats = dict(kv.split("=") for kv in nginx.get("/stats").text.split())
    assert stats["foreign"] == "0", "seed %d, mode %s, %s: %s bodies read " \
        "were another request's (%s)" % (SEED, mode, path, stats["foreign"],
                                         stats)

    wrong = [(p, r) for p, r in results if r[1] is not None]
    assert not wrong, "seed %d, mode %s, %s: %d wrong answers, first: %r" % (
        SEED, mode, path, len(wrong), wrong[:3])
    answered = sum(1 for _, r in results if r[0] == "answered")
    assert answered >= CLIENTS // 4, results[:5]

    # nothing the run made outlives it
    ok, last = settled(nginx, base)
    assert ok, "seed %d, mode %s, %s: baseline %r, after %r" % (
        SEED, mode, path, base, last)
