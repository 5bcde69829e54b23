"""Request bodies read as they arrive (jvm_request_buffering off).

A pool or virtual handler gets its body while the client still sends it:
testapp.Upload (Java) and testapp.upload/hash-body (Ring) hash it with
SHA-256.  The client streams the body from a generator (never whole in its
memory) and hashes what it sent; the worker's RSS is sampled while the body
flows and its descriptors are looked at for a temporary file.  Then the
ends: the client holds the rest while the handler answers or records its
first piece; the client leaves at several points; the handler answers
early, closes the body, throws; the body is too large, malformed, more than
its Content-Length, or stalls past client_body_timeout.

The large upload is UPLOAD_MB (64) MiB in `make test`; set
NGINX_JVM_UPLOAD_MB=1024 for the 1 GiB run (`make test-upload-big`).
"""

import hashlib
import os
import shutil
import socket
import subprocess
import threading
import time

import pytest

from harness import Nginx, parse_raw, request, wait_for

UPLOAD_MB = int(os.environ.get("NGINX_JVM_UPLOAD_MB", "64"))
BLOCK = 1 << 20

LOCATIONS = """
        location /java/ { jvm_request_buffering off;
                          jvm_content testapp.Upload; }
        location /ring/ { jvm_request_buffering off;
                          jvm_content testapp.upload/hash-body; }
        location /timeout/ { jvm_request_buffering off;
                             client_body_timeout 1s;
                             jvm_content testapp.Upload; }
        location /small/ { jvm_request_buffering off;
                           client_max_body_size 100k;
                           jvm_content testapp.Upload; }
        location /late/ { jvm_request_buffering off;
                          jvm_response_timeout 1s;
                          jvm_content testapp.Upload; }
        location /buffered/ { jvm_content testapp.Upload; }
        location = /result { jvm_content testapp.Upload; }
        location = /live { jvm_mode loop; jvm_content testapp.LateBody; }
"""

HTTP = """
    jvm_pool_size 4;
    client_body_buffer_size 16k;
    client_max_body_size 2g;
    server {
        listen 127.0.0.1:@PORT2@ http2;
        location /java/ { jvm_request_buffering off;
                          jvm_content testapp.Upload; }
        location = /result { jvm_content testapp.Upload; }
    }
"""

HANDLERS = ["java", "ring"]


@pytest.fixture(scope="module")
def ng(mode):
    if mode == "loop":
        pytest.skip("jvm_request_buffering off is for pool and virtual")
    with Nginx(LOCATIONS, http=HTTP, mode=mode) as n:
        for h in HANDLERS:       # a warm JVM for the figures below
            body = os.urandom(300000)
            r = request(n.port, "POST", "/%s/?tag=warm" % h, body=body)
            assert r.text == "%d %s" % (len(body),
                                        hashlib.sha256(body).hexdigest())
        yield n


def worker(ng):
    (pid,) = ng.worker_pids()
    return pid


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def temp_files(ng):
    """Request body temporary files: in the directory, or open (unlinked)
    in the worker."""
    found = os.listdir(ng.path("client_body_temp"))
    d = "/proc/%d/fd" % worker(ng)
    for name in os.listdir(d):
        try:
            target = os.readlink(os.path.join(d, name))
        except OSError:
            continue
        if "client_body_temp" in target:
            found.append(target)
    return found


def result(ng, tag):
    return request(ng.port, "GET", "/result?tag=%s" % tag).text


def connect(ng, timeout=60):
    return socket.create_connection(("127.0.0.1", ng.port), timeout=timeout)


def head(path, length=None, chunked=False, extra=""):
    h = "POST %s HTTP/1.1\r\nHost: localhost\r\n%s" % (path, extra)
    if chunked:
        h += "Transfer-Encoding: chunked\r\n"
    else:
        h += "Content-Length: %d\r\n" % length
    return (h + "\r\n").encode()


def blocks(total, seed=b""):
    """The body in blocks of 1 MiB at most, made as they are sent."""
    base = os.urandom(BLOCK)
    sent = 0
    i = 0
    while sent < total:
        n = min(BLOCK, total - sent)
        # each block differs, so a piece read twice or skipped shows
        tag = (b"%s%d:" % (seed, i)).ljust(16, b".")
        yield (tag + base[16:])[:n]
        sent += n
        i += 1


def read_response(s):
    """One response (Content-Length framed) from a socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        b = s.recv(65536)
        if not b:
            raise AssertionError("closed before a response: %r" % data)
        data += b
    headpart, _, rest = data.partition(b"\r\n\r\n")
    r = parse_raw(headpart + b"\r\n\r\n")
    length = int(r.header("Content-Length") or 0)
    while len(rest) < length:
        b = s.recv(65536)
        if not b:
            break
        rest += b
    r.body = rest[:length]
    return r, rest[length:]


def closed(s, timeout=30):
    """True when the server closed the connection (EOF or reset); bytes
    read before count as unexpected."""
    s.settimeout(timeout)
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return True
            raise AssertionError("unexpected bytes: %r" % b[:200])
    except ConnectionResetError:
        return True


def upload(ng, path, total, chunked=False, sample=None):
    """Streams a body of `total` bytes; returns (response, sha256 hex)."""
    md = hashlib.sha256()
    with connect(ng, timeout=300) as s:
        s.sendall(head(path, total, chunked))
        for b in blocks(total):
            md.update(b)
            if chunked:
                s.sendall(b"%x\r\n" % len(b) + b + b"\r\n")
            else:
                s.sendall(b)
            if sample:
                sample()
        if chunked:
            s.sendall(b"0\r\n\r\n")
        r, _ = read_response(s)
    return r, md.hexdigest()


@pytest.mark.parametrize("handler", HANDLERS)
@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
def test_a_large_upload_is_hashed_with_flat_memory_and_no_temp_file(
        ng, handler, chunked):
    pid = worker(ng)
    samples = []
    stop = threading.Event()
    temps = []

    def sampler():
        while not stop.is_set():
            samples.append(rss_kb(pid))
            temps.extend(temp_files(ng))
            stop.wait(0.05)

    t = threading.Thread(target=sampler, daemon=True)
    before = rss_kb(pid)
    t.start()
    started = time.monotonic()
    try:
        r, digest = upload(ng, "/%s/?tag=big" % handler, UPLOAD_MB * BLOCK,
                           chunked=chunked)
    finally:
        stop.set()
        t.join()
    took = time.monotonic() - started
    assert r.status == 200, r
    assert r.text == "%d %s" % (UPLOAD_MB * BLOCK, digest)
    assert temps == [] and temp_files(ng) == []
    # the figures (pytest -s shows them)
    grew = max(samples) - before
    print("\n%s %s %d MiB in %.1f s: worker RSS %d KiB before, %d..%d KiB "
          "while it flowed (%d samples), %+d KiB" % (
              handler, "chunked" if chunked else "length", UPLOAD_MB, took,
              before, min(samples), max(samples), len(samples), grew))
    # flat: the body is never held; the JVM's heap may settle a little
    assert grew < max(48 * 1024, UPLOAD_MB * 1024 // 16), samples


@pytest.mark.parametrize("handler", HANDLERS)
def test_the_handler_reads_the_first_piece_while_the_client_holds_the_rest(
        ng, handler):
    tag = "first-%s" % handler
    total = 4 * BLOCK
    data = b"".join(blocks(total))
    with connect(ng) as s:
        s.sendall(head("/%s/?tag=%s" % (handler, tag), total))
        s.sendall(data[:65536])
        # the rest is held until the handler has seen the beginning
        assert wait_for(lambda: result(ng, tag).startswith("first "), 30), \
            result(ng, tag)
        s.sendall(data[65536:])
        r, _ = read_response(s)
    assert r.status == 200
    assert r.text == "%d %s" % (total, hashlib.sha256(data).hexdigest())
    assert result(ng, tag) == "done " + r.text


def test_concurrent_uploads_each_see_only_their_own_bytes(ng):
    """Six uploads at once, more than the pool's threads (the last wait in
    its queue, their clients held meanwhile), Java and Ring: each hash is
    of its own body."""
    out = {}

    def one(i):
        md = hashlib.sha256()
        total = 4 * BLOCK + i * 4099
        with connect(ng, timeout=120) as s:
            s.sendall(head("/%s/?tag=c%d" % (HANDLERS[i % 2], i), total))
            for b in blocks(total, seed=b"c%d-" % i):
                md.update(b)
                s.sendall(b)
            r, _ = read_response(s)
        out[i] = (r.text, "%d %s" % (total, md.hexdigest()))

    threads = [threading.Thread(target=one, args=(i,), daemon=True)
               for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert sorted(out) == list(range(6))
    for i, (got, want) in out.items():
        assert got == want, i


def test_back_pressure_a_slow_handler_holds_the_client(ng):
    """The handler sleeps after each read: nginx reads no more than Java's
    few pieces ahead, so the client's send blocks, and nothing is
    buffered to a file; the hash still matches."""
    total = 8 * BLOCK
    sent = [0]
    done = threading.Event()
    out = {}

    def client():
        md = hashlib.sha256()
        with connect(ng, timeout=120) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
            s.sendall(head("/java/?tag=slow&slow=20", total))
            for b in blocks(total):
                md.update(b)
                for i in range(0, len(b), 16384):
                    s.sendall(b[i:i + 16384])
                    sent[0] += len(b[i:i + 16384])
            out["r"], _ = read_response(s)
        out["digest"] = md.hexdigest()
        done.set()

    t = threading.Thread(target=client, daemon=True)
    t.start()
    assert wait_for(lambda: result(ng, "slow").startswith("first "), 30)
    # while the handler is slow, the client is far from done
    time.sleep(1)
    assert not done.is_set() and sent[0] < total
    assert temp_files(ng) == []
    t.join(120)
    assert out["r"].status == 200
    assert out["r"].text == "%d %s" % (total, out["digest"])


def test_a_body_with_the_next_request_pipelined(ng):
    """A body of exactly Content-Length bytes, the next request right
    after it in the same packets: each request sees only its own bytes."""
    one = os.urandom(200000)
    two = os.urandom(50000)
    with connect(ng) as s:
        s.sendall(head("/java/?tag=p1", len(one)) + one
                  + head("/java/?tag=p2", len(two)) + two)
        r1, rest = read_response(s)
        assert r1.text == "%d %s" % (len(one), hashlib.sha256(one).hexdigest())
        if rest:
            s2 = rest
        else:
            s2 = b""
        r2, _ = read_response(_Prefixed(s, s2))
        assert r2.text == "%d %s" % (len(two), hashlib.sha256(two).hexdigest())


class _Prefixed:
    """A socket whose first bytes were already read."""

    def __init__(self, s, first):
        self.s, self.first = s, first

    def recv(self, n):
        if self.first:
            b, self.first = self.first, b""
            return b
        return self.s.recv(n)


@pytest.mark.parametrize("handler", HANDLERS)
def test_an_early_answer_closes_the_connection_after_it(ng, handler):
    """The handler answers after its first piece while the client holds
    the rest: the answer says Connection: close, and the rest of the body
    is never read as a request."""
    tag = "early-%s" % handler
    with connect(ng) as s:
        s.sendall(head("/%s/?tag=%s&early=1" % (handler, tag), 4 * BLOCK))
        s.sendall(os.urandom(65536))
        r, _ = read_response(s)
        assert r.status == 200 and r.text.startswith("early ")
        assert (r.header("Connection") or "").lower() == "close"
        # what the client still sends is thrown away, then it closes
        try:
            s.sendall(b"GET /java/ HTTP/1.1\r\nHost: x\r\n\r\n" * 10)
        except OSError:
            pass
        assert closed(s)
    assert result(ng, tag).startswith("first ")
    # the worker serves on
    body = os.urandom(100000)
    r = request(ng.port, "POST", "/%s/?tag=after" % handler, body=body)
    assert r.text == "%d %s" % (len(body), hashlib.sha256(body).hexdigest())


def test_a_closed_body_is_read_and_dropped_and_keep_alive_is_kept_or_closed(
        ng):
    """The handler closes its body after the first piece and answers 500 ms
    later: nginx reads the rest and drops it.  By then the whole body has
    arrived, so the connection goes on with the pipelined request; should it
    not have, the answer says close and nothing more comes."""
    body = os.urandom(300000)
    nxt = os.urandom(1000)
    with connect(ng) as s:
        s.sendall(head("/java/?tag=closed&close=1", len(body)) + body
                  + head("/java/?tag=next", len(nxt)) + nxt)
        r, rest = read_response(s)
        assert r.status == 200 and r.text.startswith("closed ")
        if (r.header("Connection") or "").lower() == "close":
            assert rest == b"" and closed(s)
        else:
            r2, _ = read_response(_Prefixed(s, rest))
            assert r2.text == "%d %s" % (len(nxt),
                                         hashlib.sha256(nxt).hexdigest())


@pytest.mark.log_allows(r"the handler threw",
                        r"the upload handler fails on purpose")
def test_a_handler_that_throws_is_a_500_with_its_stack(ng):
    since = ng.log_size()
    with connect(ng) as s:
        s.sendall(head("/java/?tag=throw&throw=1", 4 * BLOCK))
        s.sendall(os.urandom(65536))
        r, _ = read_response(s)
        assert r.status == 500
        assert (r.header("Connection") or "").lower() == "close"
    log = ng.log_text(since)
    assert "the upload handler fails on purpose" in log
    assert "at testapp.Upload.handle" in log


@pytest.mark.parametrize("handler", HANDLERS)
@pytest.mark.parametrize("at", [0, 65536, 3 * BLOCK])
def test_the_client_leaves_and_the_handler_reads_an_error(ng, handler, at):
    tag = "leave-%s-%d" % (handler, at)
    data = b"".join(blocks(at)) if at else b""
    with connect(ng) as s:
        s.sendall(head("/%s/?tag=%s" % (handler, tag), 8 * BLOCK) + data)
        assert wait_for(lambda: result(ng, tag) != "none", 30)
        if at:
            assert wait_for(lambda: result(ng, tag) != "started", 30)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     b"\x01\x00\x00\x00\x00\x00\x00\x00")
    assert wait_for(lambda: result(ng, tag).startswith("error "), 30), \
        result(ng, tag)
    assert "request body failed" in result(ng, tag) \
        or "request ended" in result(ng, tag)
    assert wait_for(lambda: live_tasks(ng) == 0, 30)


def test_the_client_leaves_while_nginx_holds_it_back(ng):
    """A slow handler: nginx has stopped reading (Java's pieces are full)
    when the client resets; the handler reads what came, then an error."""
    tag = "leave-held"
    with connect(ng) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        s.sendall(head("/java/?tag=%s&slow=200" % tag, 64 * BLOCK))
        s.settimeout(0.5)
        sent = 0
        try:
            for b in blocks(8 * BLOCK):
                s.sendall(b)
                sent += len(b)
        except socket.timeout:
            pass                    # held back: the send buffer is full
        assert sent < 8 * BLOCK
        assert result(ng, tag).startswith("first ")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     b"\x01\x00\x00\x00\x00\x00\x00\x00")
    assert wait_for(lambda: result(ng, tag).startswith("error "), 60), \
        result(ng, tag)
    assert "(400)" in result(ng, tag)
    assert wait_for(lambda: live_tasks(ng) == 0, 30)


@pytest.mark.log_allows(r"jvm_response_timeout")
def test_a_handler_that_does_not_read_meets_jvm_response_timeout(ng):
    """The handler sleeps 3 s before reading: Java's pieces fill, nginx
    waits for the handler, and after jvm_response_timeout (1 s) answers 504
    and closes; the handler's late read throws."""
    tag = "noread"
    with connect(ng) as s:
        s.sendall(head("/late/?tag=%s&wait=3000" % tag, 4 * BLOCK))
        s.sendall(b"".join(blocks(BLOCK)))
        r, _ = read_response(s)
        assert r.status == 504
        assert (r.header("Connection") or "").lower() == "close"
    assert wait_for(lambda: result(ng, tag).startswith("error "), 30), \
        result(ng, tag)
    assert wait_for(lambda: live_tasks(ng) == 0, 30)


def live_tasks(ng):
    """The tasks Java holds (testapp.LateBody's window into the runtime)."""
    return int(request(ng.port, "GET", "/live").text.split()[0])


def test_a_slow_client_is_read_as_it_trickles(ng):
    """Pieces 100 ms apart for 2 s, under a client_body_timeout of 1 s:
    the timeout is the client's silence, not the body's whole time."""
    pieces = [os.urandom(1000) for _ in range(20)]
    with connect(ng) as s:
        s.sendall(head("/timeout/?tag=trickle", 20000))
        for p in pieces:
            s.sendall(p)
            time.sleep(0.1)
        r, _ = read_response(s)
    body = b"".join(pieces)
    assert r.status == 200
    assert r.text == "%d %s" % (len(body), hashlib.sha256(body).hexdigest())


def test_a_stalled_client_meets_client_body_timeout(ng):
    tag = "stall"
    with connect(ng) as s:
        s.sendall(head("/timeout/?tag=%s" % tag, 4 * BLOCK))
        s.sendall(os.urandom(100000))
        # then nothing: after 1 s nginx closes, the handler's read throws
        assert closed(s, timeout=30)
    assert wait_for(lambda: result(ng, tag).startswith("error "), 30)
    assert "408" in result(ng, tag)


@pytest.mark.log_allows(r"client intended to send too large")
def test_too_large_bodies_are_413(ng):
    # by its Content-Length: refused before the handler starts
    r = request(ng.port, "POST", "/small/?tag=big-length",
                body=os.urandom(200000))
    assert r.status == 413
    assert result(ng, "big-length") == "none"
    # chunked: found out while it arrives; the handler's read throws
    piece = os.urandom(16384)
    with connect(ng) as s:
        s.sendall(head("/small/?tag=big-chunked", chunked=True))
        s.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        assert wait_for(
            lambda: result(ng, "big-chunked").startswith("first "), 30)
        try:
            for _ in range(20):
                s.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        except OSError:
            pass                    # nginx may close while it lingers
        r, _ = read_response(s)
    assert r.status == 413
    assert wait_for(lambda: result(ng, "big-chunked").startswith("error "),
                    30)
    assert "413" in result(ng, "big-chunked")


@pytest.mark.log_allows(r"client sent invalid chunked body")
def test_a_malformed_chunked_body_is_400_and_the_handler_reads_an_error(ng):
    with connect(ng) as s:
        s.sendall(head("/java/?tag=bad", chunked=True))
        s.sendall(b"10000\r\n" + os.urandom(65536) + b"\r\n")
        assert wait_for(lambda: result(ng, "bad").startswith("first "), 30)
        s.sendall(b"zz\r\nnonsense\r\n")
        r, _ = read_response(s)
    assert r.status == 400
    assert wait_for(lambda: result(ng, "bad").startswith("error "), 30)
    assert "400" in result(ng, "bad")


def test_more_than_content_length_is_the_next_request(ng):
    """Bytes after Content-Length are a request of their own (here a bad
    one): the handler hashes exactly its body."""
    body = os.urandom(100000)
    with connect(ng) as s:
        s.sendall(head("/java/?tag=over", len(body)) + body
                  + b"NOT A REQUEST\r\n\r\n")
        r, rest = read_response(s)
        assert r.text == "%d %s" % (len(body), hashlib.sha256(body).hexdigest())
        r2, _ = read_response(_Prefixed(s, rest))
        assert r2.status == 400


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_an_http2_upload_streams_too(ng):
    """HTTP/2 (h2c, curl from a pipe, so no Content-Length): DATA frames
    go to the handler as they come, under HTTP/2's flow control."""
    total = 16 * BLOCK
    curl = subprocess.Popen(
        ["curl", "-sS", "--http2-prior-knowledge", "-T", "-", "-X", "POST",
         "http://127.0.0.1:%d/java/?tag=h2" % ng.port2],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    md = hashlib.sha256()
    data = blocks(total)
    first = next(data)
    md.update(first)
    curl.stdin.write(first)
    curl.stdin.flush()
    # the handler reads while curl still waits for the rest
    assert wait_for(lambda: result(ng, "h2").startswith("first "), 30), \
        result(ng, "h2")
    for b in data:
        md.update(b)
        curl.stdin.write(b)
    curl.stdin.close()
    out = curl.stdout.read()
    err = curl.stderr.read()
    curl.wait(120)
    assert curl.returncode == 0, err
    assert out.decode() == "%d %s" % (total, md.hexdigest())
    assert temp_files(ng) == []


def test_buffered_locations_still_buffer(ng):
    """jvm_request_buffering on (the default): the whole body first."""
    body = os.urandom(500000)
    r = request(ng.port, "POST", "/buffered/?tag=buf", body=body)
    assert r.text == "%d %s" % (len(body), hashlib.sha256(body).hexdigest())


@pytest.mark.parametrize("where", [
    "jvm_content testapp.Upload;",
    "jvm_async on; jvm_content testapp.upload/hash-body;",
])
def test_a_loop_or_async_location_is_refused_at_nginx_t(where):
    n = Nginx("location / { jvm_request_buffering off; %s }" % where,
              mode="loop")
    try:
        r = n.test_config()
        assert r.returncode != 0
        assert "jvm_request_buffering off" in r.stderr
        assert "jvm_mode pool" in r.stderr
        assert 'location "/"' in r.stderr
    finally:
        n.cleanup()
