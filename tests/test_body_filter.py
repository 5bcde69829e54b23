"""jvm_body_filter: a handler that sees, and may replace, the body of every
response of its location, chunk by chunk, on the event loop.

The filter runs on the loop in every mode; what it filters comes from
static files, proxy_pass (to a Python upstream, and to a location of the
same nginx serving a 200 MB file) and JVM handlers, which run where the
mode under test says.
"""

import hashlib
import http.client
import os
import socket
import time

import pytest

from harness import Nginx, dechunk, parse_raw, wait_for
from upstream import up  # noqa: F401 (the module's upstream, a fixture)

TRACE = r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: |\s+Suppressed: )"

# a bounded heap: what the worker holds then shows in its RSS
HTTP = """
    jvm_options -Xmx128m;
"""

F = "testapp.BodyFilters$"

LOCATIONS = """
        location /files/ { alias html/files/; }
        location /static/ { jvm_body_filter @F@Upper; alias html/files/; }
        location /proxy/ { jvm_body_filter @F@Upper;
                           proxy_pass http://127.0.0.1:@UP@/; }
        location /self/ { jvm_body_filter @F@Upper;
                          proxy_pass http://127.0.0.1:@PORT@/files/; }
        location /jvm/ { jvm_body_filter @F@Upper;
                         jvm_content testapp.Bodies; }
        location /slow/ { send_timeout 1s; jvm_body_filter @F@Upper;
                          alias html/files/; }
        location /drop/ { jvm_body_filter @F@Drop; alias html/files/; }
        location /tail/ { jvm_body_filter @F@Tail; alias html/files/; }
        location /tail-jvm/ { jvm_body_filter @F@Tail;
                              jvm_content testapp.Bodies; }
        location /count/ { jvm_body_filter @F@Count; alias html/files/; }
        location /count-proxy/ { jvm_body_filter @F@Count;
                                 proxy_pass http://127.0.0.1:@PORT@/files/; }
        location /report { jvm_content @F@Report; }
        location /numbered/ { jvm_body_filter @F@Numbered; alias html/files/; }
        location /ssi/ { ssi on; alias html/ssi/; }
        location /ssi-filtered/ { ssi on; jvm_body_filter @F@Tail;
                                  alias html/ssi/; }
        location /throw/ { jvm_body_filter @F@Throws; alias html/files/; }
        location /throw-later/ { jvm_body_filter @F@ThrowsLater;
                                 proxy_pass http://127.0.0.1:@PORT@/files/; }
        location /clj-upper/ { jvm_body_filter testapp.bodyfilter/upper;
                               proxy_pass http://127.0.0.1:@UP@/; }
        location /clj-tail/ { jvm_body_filter testapp.bodyfilter/tail;
                              alias html/files/; }
        location /clj-counted/ { jvm_body_filter testapp.bodyfilter/counted;
                                 alias html/files/; }
        location /clj-wrong/ { jvm_body_filter testapp.bodyfilter/wrong;
                               alias html/files/; }
"""

LINE = b"abcdefghijklmnopqrstuvwxyz 0123456789\n"
BIG = 200 * 1024 * 1024
MID = 3 * 1024 * 1024 + 17
MB = 1024 * 1024


def pattern(size):
    """The first `size` bytes of LINE repeated, in blocks of about 1 MB."""
    block = LINE * (MB // len(LINE))
    left = size
    while left > 0:
        b = block[:left]
        left -= len(b)
        yield b


def write_pattern(path, size):
    with open(path, "wb") as f:
        for b in pattern(size):
            f.write(b)


def upper_hash(size):
    h = hashlib.sha256()
    for b in pattern(size):
        h.update(b.upper())
    return h.hexdigest()


@pytest.fixture(scope="module")
def ng(mode, up):
    locations = LOCATIONS.replace("@UP@", str(up.port)).replace("@F@", F)
    with Nginx(locations, http=HTTP, mode=mode,
               startup_allow=[TRACE]) as n:
        files = n.path("html", "files")
        os.makedirs(files)
        with open(os.path.join(files, "a.txt"), "w") as f:
            f.write("static file\n")
        open(os.path.join(files, "empty.txt"), "w").close()
        write_pattern(os.path.join(files, "mid.bin"), MID)
        os.makedirs(n.path("html", "ssi"))
        with open(n.path("html", "ssi", "page.html"), "w") as f:
            f.write('<p>[<!--# include virtual="/static/a.txt" -->]'
                    '[<!--# include virtual="/tail/a.txt" -->]'
                    '[<!--# include virtual="/files/a.txt" -->]</p>\n')
        write_pattern(os.path.join(files, "big.bin"), BIG)
        yield n


@pytest.fixture(scope="module")
def big_upper():
    return upper_hash(BIG)


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


def report(ng, id):
    r = ng.get("/report?id=" + id)
    assert r.status == 200
    calls, lasts, size, largest = (int(x) for x in r.text.split())
    return calls, lasts, size, largest


def stream(ng, path, pause_after=None, pause=0, on_pause=None):
    """GETs path, hashing the body as it comes; returns (reply, sha256, n).
    With pause_after, stops reading for `pause` seconds after that many
    bytes (calling on_pause then)."""
    conn = http.client.HTTPConnection("127.0.0.1", ng.port, timeout=120)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        h = hashlib.sha256()
        n = 0
        paused = False
        while True:
            b = resp.read(MB)
            if not b:
                break
            h.update(b)
            n += len(b)
            if pause_after is not None and not paused and n >= pause_after:
                paused = True
                time.sleep(pause)
                if on_pause:
                    on_pause()
        return resp, h.hexdigest(), n
    finally:
        conn.close()


def raw_get(ng, path, extra=b""):
    return ng.raw(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                  + extra + b"Connection: close\r\n\r\n", timeout=30)


# -- what the filter changes ------------------------------------------------

def test_static_file_upper_cased(ng):
    r = ng.get("/static/a.txt")
    assert r.status == 200
    assert r.body == b"STATIC FILE\n"
    # the body may change length: no Content-Length, streamed in chunks
    assert r.header("Content-Length") is None
    assert r.header("Transfer-Encoding") == "chunked"
    assert r.header("Accept-Ranges") is None
    # the same file unfiltered keeps its length and strong ETag
    plain = ng.get("/files/a.txt")
    assert plain.header("Content-Length") == "12"
    assert r.header("ETag") == "W/" + plain.header("ETag")


def test_http10_gets_the_body_to_the_close(ng):
    data = ng.raw(b"GET /static/a.txt HTTP/1.0\r\n\r\n")
    reply = parse_raw(data)
    assert reply.status == 200
    assert reply.header("Content-Length") is None
    assert reply.header("Transfer-Encoding") is None
    assert reply.body == b"STATIC FILE\n"


def test_range_request_gets_the_whole_filtered_body(ng):
    r = ng.get("/static/a.txt", headers={"Range": "bytes=0-3"})
    assert r.status == 200
    assert r.body == b"STATIC FILE\n"
    assert r.header("Content-Range") is None


def test_proxied_body_upper_cased(ng):
    r = ng.get("/proxy/echo?q=x")
    assert r.status == 200
    assert r.body == r.body.upper()
    assert b'"PATH": "/ECHO"' in r.body
    assert r.header("Content-Length") is None
    assert r.header("X-Upstream") == "py"


def test_jvm_streamed_body_upper_cased(ng):
    n = 300000
    r = ng.get("/jvm/stream?n=%d" % n)
    assert r.status == 200
    expected = bytes((i % 251) - 32 if 97 <= i % 251 <= 122 else i % 251
                     for i in range(n))
    assert r.body == expected


def test_jvm_inline_body_upper_cased(ng):
    r = ng.get("/jvm/string")
    assert r.status == 200
    assert r.body == "HéLLO JAVA".encode("utf-8")


def test_drop_sends_an_empty_body(ng):
    data = raw_get(ng, "/drop/mid.bin")
    reply = parse_raw(data)
    assert reply.status == 200
    body, complete = dechunk(reply.body)
    assert complete and body == b""


def test_append_at_last(ng):
    assert ng.get("/tail/a.txt").body == b"static file\n[tail]"
    r = ng.get("/tail/mid.bin")
    assert len(r.body) == MID + len(b"[tail]")
    assert r.body.endswith(b"[tail]")
    assert r.body[:len(LINE)] == LINE


def test_last_comes_for_an_empty_body(ng):
    assert ng.get("/tail/empty.txt").body == b"[tail]"
    assert ng.get("/tail-jvm/string").body == "héllo java[tail]".encode()


def test_clojure_filters(ng):
    r = ng.get("/clj-upper/echo")
    assert r.status == 200 and b'"PATH": "/ECHO"' in r.body
    assert ng.get("/clj-tail/a.txt").body == b"static file\n[clj /clj-tail/a.txt]"
    assert ng.get("/clj-tail/empty.txt").body == b"[clj /clj-tail/empty.txt]"


# -- the contract of last and of the chunks ---------------------------------

def test_subrequests_have_their_own_filter_and_last(ng):
    # each SSI include is filtered by its own location's filter, with a
    # last of its own; the page's location has none.  (nginx sends an
    # empty static file as a subrequest without any body buffer: its
    # filter is not called then, docs/directives.md says so.)
    r = ng.get("/ssi/page.html")
    assert r.status == 200
    assert r.body == b"<p>[STATIC FILE\n][static file\n[tail]][static file\n]</p>\n"
    # the page's filter sees the page's own body, not what it includes:
    # one last, at the page's end
    r = ng.get("/ssi-filtered/page.html")
    assert r.body == (b"<p>[STATIC FILE\n][static file\n[tail]][static file\n]</p>\n"
                      b"[tail]")


def test_last_once_and_file_chunks_bounded(ng):
    r = ng.get("/count/mid.bin", headers={"X-Id": "mid-static"})
    assert r.status == 200 and len(r.body) == MID
    calls, lasts, size, largest = report(ng, "mid-static")
    assert lasts == 1
    assert size == MID
    # a file is read in pieces of at most 32 KB
    assert 0 < largest <= 32 * 1024
    assert calls >= MID // (32 * 1024)


def test_last_once_for_a_proxied_body(ng):
    r = ng.get("/count-proxy/mid.bin", headers={"X-Id": "mid-proxy"})
    assert r.status == 200 and len(r.body) == MID
    calls, lasts, size, _ = report(ng, "mid-proxy")
    assert lasts == 1 and size == MID and calls > 1


def test_a_filter_of_its_own_per_response(ng):
    # BodyFilter.start: each response counts on its own, even interleaved
    conns = [http.client.HTTPConnection("127.0.0.1", ng.port, timeout=30)
             for _ in range(3)]
    try:
        for c in conns:
            c.request("GET", "/numbered/mid.bin")
        resps = [c.getresponse() for c in conns]
        bodies = [b"".join(iter(lambda r=r: r.read(65536), b"")) for r in resps]
    finally:
        for c in conns:
            c.close()
    plain = b"".join(pattern(MID))
    for b in bodies:
        assert b[:MID] == plain
        tail = b[MID:]
        chunks, size = tail.strip(b"[]").split()
        assert int(size) == MID and int(chunks) >= MID // (32 * 1024)
    assert ng.get("/numbered/a.txt").body == b"static file\n[1 12]"
    assert ng.get("/numbered/empty.txt").body == b"[1 0]"
    # Clojure: a var holding a reified BodyFilter
    assert ng.get("/clj-counted/a.txt").body == b"static file\n[clj 1 12]"
    r = ng.get("/clj-counted/mid.bin")
    chunks, size = r.body[MID:].strip(b"[]").split()[1:]
    assert int(size) == MID and int(chunks) >= MID // (32 * 1024)


def test_head_and_304_see_no_body(ng):
    r = ng.request("HEAD", "/count/a.txt", headers={"X-Id": "head"})
    assert r.status == 200 and r.body == b""
    assert report(ng, "head") == (0, 0, 0, 0)
    modified = ng.get("/files/a.txt").header("Last-Modified")
    r = ng.get("/count/a.txt", headers={"X-Id": "cond",
                                        "If-Modified-Since": modified})
    assert r.status == 304
    assert report(ng, "cond") == (0, 0, 0, 0)
    r = ng.get("/count/a.txt", headers={"X-Id": "get"})
    assert r.body == b"static file\n"
    assert report(ng, "get") == (1, 1, 12, 12)


# -- memory: a large body through the filter --------------------------------

@pytest.mark.parametrize("path", ["/self/big.bin", "/static/big.bin"])
def test_large_body_keeps_rss_flat(ng, big_upper, path):
    pid = ng.worker_pids()[0]
    # a first pass: the JVM's heap and nginx's buffers reach their size
    resp, digest, n = stream(ng, path)
    assert resp.status == 200 and n == BIG and digest == big_upper
    before = rss_kb(pid)
    mid = []
    # then a client that stops reading for a while after 8 MB: nginx
    # spools the upstream's 200 MB to proxy_temp meanwhile, and the filter
    # must not read it into memory
    resp, digest, n = stream(ng, path, pause_after=8 * MB, pause=3,
                             on_pause=lambda: mid.append(rss_kb(pid)))
    after = rss_kb(pid)
    assert resp.status == 200 and n == BIG and digest == big_upper
    assert ng.worker_pids() == [pid]
    limit = 32 * 1024
    print("%s: RSS %d kB after a first pass, %d kB in a pause, %d kB after"
          % (path, before, mid[0], after))
    assert mid[0] - before < limit, (before, mid, after)
    assert after - before < limit, (before, mid, after)


# -- clients that leave, filters that fail ----------------------------------

@pytest.mark.parametrize("path", ["/self/big.bin", "/static/big.bin",
                                  "/jvm/stream?n=300000000"])
def test_client_vanishes_mid_body(ng, path):
    pid = ng.worker_pids()[0]
    closes = int(ng.get("/jvm/closes").text)
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", ng.port)) as s:
            s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            got = 0
            while got < 2 * MB:
                b = s.recv(65536)
                assert b, "the body ended early"
                got += len(b)
    # the worker serves on, with nothing left behind
    assert ng.get("/static/a.txt").body == b"STATIC FILE\n"
    assert ng.worker_pids() == [pid]
    if path.startswith("/jvm/"):
        # the JVM body's source was closed when its client left
        assert wait_for(lambda: int(ng.get("/jvm/closes").text)
                        >= closes + 3, 60)


@pytest.mark.parametrize("rng", ["bytes=0-3", "bytes=0-1,100-200,5-6",
                                 "bytes=-5", "bytes=99999999999-",
                                 "bytes=garbage"])
def test_ranges_get_the_whole_body_and_a_client_may_leave(ng, rng):
    """A filtered body has no ranges (its bytes are the filter's): single,
    multiple, suffix, unsatisfiable and malformed ranges all get the whole
    filtered body with 200, and a client that leaves mid-body costs the
    worker nothing."""
    pid = ng.worker_pids()[0]
    r = ng.get("/static/a.txt", headers={"Range": rng})
    assert r.status == 200, (rng, r.status)
    assert r.body == b"STATIC FILE\n"
    assert r.header("Content-Range") is None
    with socket.create_connection(("127.0.0.1", ng.port), timeout=30) as s:
        s.sendall(b"GET /static/big.bin HTTP/1.1\r\nHost: x\r\n"
                  b"Range: " + rng.encode() + b"\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data or len(data) < 2 * MB:
            b = s.recv(65536)
            assert b, "the body ended early"
            data += b
        head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
        assert head.startswith("HTTP/1.1 200 "), head
        assert "content-range" not in head.lower()
        # chunked: the filter's length is unknown up front
        assert "transfer-encoding: chunked" in head.lower()
        assert LINE.upper() * 2 in data.split(b"\r\n\r\n", 1)[1][:MB]
    assert ng.get("/static/a.txt").body == b"STATIC FILE\n"
    assert ng.worker_pids() == [pid]


def test_client_that_stops_reading_times_out(ng):
    # send_timeout applies as without the filter: the response ends,
    # the worker holds nothing for it
    pid = ng.worker_pids()[0]
    since = ng.log_size()
    with socket.create_connection(("127.0.0.1", ng.port), timeout=30) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.sendall(b"GET /slow/big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
        got = 0
        while got < MB:
            got += len(s.recv(65536))
        time.sleep(4)
        started = time.monotonic()
        try:
            while True:
                b = s.recv(1 << 20)
                if not b:
                    break
                got += len(b)
        except ConnectionResetError:
            pass
        assert time.monotonic() - started < 20
    assert got < BIG / 4
    assert "client timed out" in ng.log_text(since)
    assert ng.worker_pids() == [pid]
    assert ng.get("/static/a.txt").body == b"STATIC FILE\n"


@pytest.mark.log_allows("the jvm_body_filter handler threw",
                        "body-boom-marker", TRACE)
def test_filter_throws_ends_the_response(ng):
    since = ng.log_size()
    data = raw_get(ng, "/throw/a.txt")
    # the header may not have left yet: nothing, or a body cut short
    if data:
        reply = parse_raw(data)
        assert reply.status == 200
        assert not dechunk(reply.body)[1]
    assert b"static file" not in data.lower()
    assert wait_for(lambda: "body-boom-marker" in ng.log_text(since), 60)
    assert any("at testapp.BodyFilters$Throws.filter" in l
               for l in ng.log_text(since).splitlines())
    assert ng.get("/static/a.txt").body == b"STATIC FILE\n"


@pytest.mark.log_allows("the jvm_body_filter handler threw",
                        "body-boom-later-marker", TRACE)
def test_filter_throws_mid_body_closes_the_connection(ng):
    since = ng.log_size()
    data = ng.raw(b"GET /throw-later/big.bin HTTP/1.1\r\nHost: x\r\n"
                  b"X-Id: later\r\n\r\n", timeout=30)
    reply = parse_raw(data)
    assert reply.status == 200
    body, complete = dechunk(reply.body)
    assert not complete
    assert 0 < len(body) < 8 * MB
    assert wait_for(lambda: "body-boom-later-marker" in ng.log_text(since), 60)


@pytest.mark.log_allows("the jvm_body_filter handler threw",
                        "not bytes, a String or nil", TRACE)
def test_clojure_filter_answering_no_body_fails(ng):
    since = ng.log_size()
    data = raw_get(ng, "/clj-wrong/a.txt")
    assert b"static file" not in data
    assert wait_for(lambda: "not bytes, a String or nil" in
                    ng.log_text(since), 60)


def test_nginx_t_notes_the_loop(ng, mode):
    if mode == "loop":
        pytest.skip("the notice is for the other modes")
    r = Nginx(LOCATIONS.replace("@UP@", "1").replace("@F@", F), http=HTTP,
              mode=mode)
    try:
        t = r.test_config()
        assert t.returncode == 0, t.stderr
        # a notice: in the error log (stderr has warnings and worse)
        assert "jvm_body_filter handlers run on the event loop" in \
            r.log_text() + t.stderr
    finally:
        r.cleanup()


def test_bad_directive_fails_nginx_t():
    n = Nginx("location / { jvm_body_filter \"a//b\"; }")
    try:
        t = n.test_config()
        assert t.returncode != 0
        assert "jvm_body_filter" in t.stderr
    finally:
        n.cleanup()
