"""Servlet non-blocking I/O through nginx-jvm (issue 47 item 3): a
ReadListener over a body nginx read whole and over one read as it arrives
(jvm_request_buffering off), a WriteListener over the streamed response,
clients that trickle, stall or leave; and a response that fails once part
of it has left (the servlet throws after commit, the engine ends it at the
async timeout, a WriteListener throws): the client sees it cut short, on
HTTP/1.1 and on HTTP/2, never a clean end.

The servlets are tests/apps/servlet-nio (an exploded WAR compiled here with
javac against Tomcat's jar); one server, one worker (the servlets' event
log is the worker's), plain HTTP on its port and HTTPS with HTTP/2 on a
second, in each mode of the suite (pool and virtual; coloop under make
test-coloop). The same cases run on the same servlets in a Spring Boot 4
jar on Boot's Jetty starter (the Jetty seam), in pool mode (the end of
this file)."""

import hashlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from harness import (ROOT, Launcher, config_test, dechunk, free_port,
                     maven_package, parse_raw, server_cert, tcp_socket,
                     wait_for)

SOURCES = ROOT / "tests" / "apps" / "servlet-nio" / "nio"
TOMCAT = ROOT / "build" / "servlet" / "tomcat-lib"
HANDLER = "nginx.jvm.servlet.TomcatHandler"
TRACE = r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: |\s+Suppressed: )"
BODY_FAILED = r"jvm: the response body failed"
OCTETS = {"Content-Type": "application/octet-stream"}


def pattern(n, at=0):
    """What WriteServlet writes: byte i is i % 251."""
    period = bytes(range(251))
    reps = (at % 251 + n) // 251 + 1
    return (period * reps)[at % 251:at % 251 + n]


@pytest.fixture(scope="module")
def shared():
    """Reachable by the workers' user (nobody)."""
    d = Path(tempfile.mkdtemp(prefix="nginx-jvm-servlet-nio-"))
    d.chmod(0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def webapp(shared):
    """The test servlets as an exploded WAR."""
    core = sorted(TOMCAT.glob("tomcat-embed-core-*.jar"))
    assert core, "the servlet engine is not built: make all"
    d = shared / "nio-app"
    classes = d / "WEB-INF" / "classes"
    classes.mkdir(parents=True)
    subprocess.run(["javac", "--release", "17", "-d", str(classes),
                    "-cp", str(core[0])] + sorted(map(str, SOURCES.glob("*.java"))),
                   check=True, timeout=300)
    for p in [d] + list(d.rglob("*")):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return d


@pytest.fixture(scope="module")
def app(webapp, shared, servlet_mode):
    server_cert(shared)
    for f in ("server.pem", "server.key"):
        (shared / f).chmod(0o644)
    tls = free_port()
    where = ("jvm_content %s; jvm_mode %s; jvm_async on; "
             "jvm_request_buffering off;" % (HANDLER, servlet_mode))
    n = Launcher(["--war", str(webapp),
                  # a body read as it arrives under /s/
                  "--server", "location /s/ { %s }" % where,
                  "--max-body-size", "200m",
                  "--http", "server { listen 127.0.0.1:%d ssl http2; "
                            "ssl_certificate %s; ssl_certificate_key %s; "
                            "location / { %s } }"
                  % (tls, shared / "server.pem", shared / "server.key", where)],
                 mode=servlet_mode, workers=1,
                 env={"NGINX_JVM_CACHE": str(shared / "cache")})
    n.tls = tls
    with n:
        yield n


def events(app, tag):
    """What the servlets logged for tag, and how far they got."""
    lines = app.get("/events?id=" + tag).text.splitlines()
    return lines[:-1], int(lines[-1].split()[1])


def wait_event(app, tag, prefix, timeout=30):
    def seen():
        return any(e.startswith(prefix) for e in events(app, tag)[0])
    return wait_for(seen, timeout)


def unique(name):
    return "%s-%d" % (name, time.monotonic_ns())


def read_answer(app, body, path):
    r = app.request("POST", path, body=body, headers=OCTETS, timeout=60)
    assert r.status == 200, r
    return dict(zip(*[iter(r.text.split())] * 2))


# --- ReadListener ---------------------------------------------------------

@pytest.mark.parametrize("where", ["/read", "/s/read"])
def test_read_listener_reads_a_large_body(app, where):
    """Buffered by nginx (in a file: always readable) and as it arrives."""
    body = os.urandom(3 * 1024 * 1024 + 17)
    tag = unique("read")
    a = read_answer(app, body, where + "?id=" + tag)
    assert int(a["bytes"]) == len(body)
    assert a["sha256"] == hashlib.sha256(body).hexdigest()
    assert int(a["calls"]) >= 1
    assert events(app, tag) == (["all data read %d" % len(body)], len(body))


def test_read_listener_with_an_empty_body(app):
    tag = unique("empty")
    a = read_answer(app, b"", "/s/read?id=" + tag)
    assert a["bytes"] == "0"
    assert a["sha256"] == hashlib.sha256(b"").hexdigest()


def send_slowly(app, path, head, pieces, pause):
    """A request whose body's pieces come pause seconds apart: its answer."""
    with socket.create_connection(("127.0.0.1", app.port), timeout=30) as s:
        s.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                   "Content-Type: application/octet-stream\r\n%s\r\n"
                   % (path, head)).encode())
        for p in pieces:
            time.sleep(pause)
            s.sendall(p)
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                return parse_raw(data)
            data += b


@pytest.mark.parametrize("chunked", [False, True])
def test_a_slow_uploader_is_waited_for_without_a_thread(app, chunked):
    """Each piece wakes the ReadListener (onDataAvailable), which finds the
    body not ready again in between: it waited, no thread blocked in a
    read."""
    pieces = [os.urandom(3000) for _ in range(6)]
    body = b"".join(pieces)
    tag = unique("slow")
    if chunked:
        head = "Transfer-Encoding: chunked\r\n"
        wire = [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces] + [b"0\r\n\r\n"]
    else:
        head = "Content-Length: %d\r\n" % len(body)
        wire = pieces
    r = send_slowly(app, "/s/read?id=" + tag, head, wire, 0.15)
    assert r.status == 200, r
    a = dict(zip(*[iter(r.text.split())] * 2))
    assert (int(a["bytes"]), a["sha256"]) == (len(body), hashlib.sha256(body).hexdigest())
    assert int(a["calls"]) >= 4 and int(a["waits"]) >= 3, a


@pytest.mark.parametrize("where", ["/read", "/s/read"])
def test_a_client_that_leaves_mid_upload(app, where):
    """The ReadListener's onError runs (streamed: at once; buffered, nginx
    never calls the servlet), and the worker serves the next request."""
    pid = app.worker_pids()
    tag = unique("leave")
    s = socket.create_connection(("127.0.0.1", app.port), timeout=10)
    s.sendall(("POST %s?id=%s HTTP/1.1\r\nHost: x\r\n"
               "Content-Type: application/octet-stream\r\n"
               "Content-Length: %d\r\n\r\n" % (where, tag, 10 ** 7)).encode())
    s.sendall(os.urandom(300 * 1024))
    mine = s.getsockname()[1]
    if where == "/s/read":
        assert wait_for(lambda: events(app, tag)[1] > 0, 30), "no byte reached the servlet"
    else:
        # nginx is reading the body: all that was sent left this socket
        # and nginx read it from its own
        assert wait_for(lambda: tcp_socket(mine, app.port)["tx"] == 0
                        and tcp_socket(app.port, mine)["rx"] == 0, 30), \
            (tcp_socket(mine, app.port), tcp_socket(app.port, mine))
    s.close()
    if where == "/s/read":
        assert wait_event(app, tag, "read error after "), events(app, tag)
        got = events(app, tag)[0]
        assert len(got) == 1 and "IOException" in got[0], got
    else:
        # the request is over (nginx closed its side) and the servlet was
        # never called
        assert wait_for(lambda: (tcp_socket(app.port, mine) or {}).get("state")
                        not in ("ESTABLISHED", "CLOSE_WAIT"), 30), \
            tcp_socket(app.port, mine)
        assert events(app, tag) == ([], 0)
    # the worker lives and reads the next body whole
    body = os.urandom(100000)
    a = read_answer(app, body, where + "?id=" + unique("after"))
    assert a["sha256"] == hashlib.sha256(body).hexdigest()
    assert app.worker_pids() == pid
    if where == "/read":
        assert events(app, tag) == ([], 0)      # nor later


# --- WriteListener --------------------------------------------------------

@pytest.mark.parametrize("chunk,length", [(65536, False), (1000, True)])
def test_write_listener_writes_a_large_body_to_a_fast_reader(app, chunk, length):
    n = 16 * 1024 * 1024 + 5
    tag = unique("fast")
    r = app.get("/write?id=%s&bytes=%d&chunk=%d%s"
                % (tag, n, chunk, "&length=1" if length else ""), timeout=120)
    assert r.status == 200
    if length:
        assert r.header("Content-Length") == str(n)
    else:
        assert r.header("Transfer-Encoding") == "chunked"
    assert len(r.body) == n
    assert r.body == pattern(n)
    got = events(app, tag)[0]
    assert len(got) == 1 and got[0].startswith("written %d waits " % n), got
    # far more than the queue holds: the servlet was told to wait
    assert int(got[0].split()[-1]) > 0


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def test_write_listener_to_a_slow_reader_is_bounded(app):
    """A 64 MB body to a client that reads nothing for a while: the servlet
    is held back (isReady false) after what the queue and the sockets'
    buffers hold, the worker's memory does not grow by the body; then the
    client reads it all, byte for byte."""
    n = 64 * 1024 * 1024
    tag = unique("slowreader")
    worker = app.worker_pids()[0]
    before = rss_kb(worker)
    s = socket.create_connection(("127.0.0.1", app.port), timeout=60)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    s.sendall(("GET /write?id=%s&bytes=%d&chunk=65536 HTTP/1.1\r\nHost: x\r\n"
               "Connection: close\r\n\r\n" % (tag, n)).encode())
    progress = []

    def still():
        progress.append(events(app, tag)[1])
        return len(progress) > 4 and progress[-1] == progress[-5] > 0
    assert wait_for(still, 60, interval=0.2), progress
    held = progress[-1]
    assert held < 16 * 1024 * 1024, "the servlet wrote %d bytes to a client that reads nothing" % held
    grown = rss_kb(worker) - before
    assert grown < 48 * 1024, "the worker grew by %d KB" % grown
    # now it reads: all of it, as written
    data = bytearray()
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        data += b
    s.close()
    r = parse_raw(bytes(data))
    body, complete = dechunk(r.body)
    assert complete and len(body) == n and body == pattern(n)
    got = events(app, tag)[0]
    assert got and got[0].startswith("written %d" % n), got


def test_a_client_that_leaves_mid_write(app):
    """The WriteListener's onError runs; the worker serves the next one."""
    pid = app.worker_pids()
    tag = unique("leavew")
    s = socket.create_connection(("127.0.0.1", app.port), timeout=30)
    s.sendall(("GET /write?id=%s&bytes=%d&chunk=65536 HTTP/1.1\r\nHost: x\r\n\r\n"
               % (tag, 200 * 1024 * 1024)).encode())
    got = 0
    while got < 2 * 1024 * 1024:
        got += len(s.recv(1 << 20))
    s.close()
    assert wait_event(app, tag, "write error after "), events(app, tag)
    assert not [e for e in events(app, tag)[0] if e.startswith("written")]
    r = app.get("/write?id=%s&bytes=1000&chunk=100" % unique("next"))
    assert r.body == pattern(1000)
    assert app.worker_pids() == pid


# --- a response that fails half-way ---------------------------------------

FAILING = {
    # the servlet throws once part of its body has left
    "throw": ("/throw?after=100000", r"nio thrown after commit on purpose"),
    # an async servlet that flushed part and never completes: the engine's
    # async timeout ends it
    "timeout": ("/stall?after=100000&ms=500", None),
    # a WriteListener throws from onWritePossible
    "listener": ("/write?id=@TAG@&bytes=1000000&chunk=10000&throwAt=300000",
                 r"nio write failure on purpose"),
}
FAILING_LOG = (BODY_FAILED, TRACE, r"nio thrown after commit on purpose",
               r"nio write failure on purpose",
               r"Servlet.service\(\) for servlet \[nio.FailServlet\]")


def failing(app, kind):
    path, said = FAILING[kind]
    return path.replace("@TAG@", unique("fail")), said


@pytest.mark.log_allows(*FAILING_LOG)
@pytest.mark.parametrize("kind", sorted(FAILING))
def test_a_body_that_fails_is_cut_short_on_http1(app, kind):
    pid = app.worker_pids()
    path, said = failing(app, kind)
    since = app.log_size()
    # keep-alive: a complete answer would leave the connection open (and
    # this would time out); a failed body closes it without its last chunk
    data = app.raw(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode(), timeout=30)
    r = parse_raw(data)
    assert r.status == 200
    assert r.header("Transfer-Encoding") == "chunked"
    body, complete = dechunk(r.body)
    assert not complete, "the failed body ended with its last chunk"
    assert 0 < len(body) and body == pattern(len(body))
    assert app.wait_log(r"\[error\] .*" + BODY_FAILED, since)
    if said:
        assert app.wait_log(said, since)
        # with the stack trace
        assert re.search(r"\n\s+at nio\.", app.log_text(since))
    assert app.worker_pids() == pid
    assert app.get("/write?id=x&bytes=10&chunk=10").body == pattern(10)


def curl(app, path, *args, timeout=120):
    return subprocess.run(
        ["curl", "-sS", "--http2", "-k", "-o", "-", "-w", "\n%{http_version}"]
        + list(args) + ["https://127.0.0.1:%d%s" % (app.tls, path)],
        capture_output=True, timeout=timeout)


@pytest.mark.log_allows(*FAILING_LOG)
@pytest.mark.parametrize("kind", sorted(FAILING))
def test_a_body_that_fails_is_reset_on_http2(app, kind):
    pid = app.worker_pids()
    path, _ = failing(app, kind)
    since = app.log_size()
    r = curl(app, path)
    # curl: 92 (HTTP/2 stream not closed cleanly) or 18 (partial file)
    assert r.returncode in (18, 92), (r.returncode, r.stderr)
    assert b"HTTP/2 stream" in r.stderr or b"outstanding read data" in r.stderr, r.stderr
    body = r.stdout.rsplit(b"\n", 1)[0] if r.stdout.endswith(b"\n2") else r.stdout
    assert len(body) < 1000000 and body == pattern(len(body))
    assert app.wait_log(r"\[error\] .*" + BODY_FAILED, since)
    assert app.worker_pids() == pid


def test_http2_write_listener_and_streamed_read_listener(app):
    n = 8 * 1024 * 1024 + 3
    r = curl(app, "/write?id=%s&bytes=%d&chunk=32768" % (unique("h2"), n))
    assert r.returncode == 0, r.stderr
    body, version = r.stdout.rsplit(b"\n", 1)
    assert version == b"2"
    assert body == pattern(n)
    up = os.urandom(2 * 1024 * 1024)
    tag = unique("h2read")
    r = subprocess.run(
        ["curl", "-sS", "--http2", "-k", "-H", "Content-Type: application/octet-stream",
         "--data-binary", "@-", "https://127.0.0.1:%d/read?id=%s" % (app.tls, tag)],
        input=up, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    a = dict(zip(*[iter(r.stdout.decode().split())] * 2))
    assert (int(a["bytes"]), a["sha256"]) == (len(up), hashlib.sha256(up).hexdigest())


def test_a_webapp_location_may_read_its_bodies_as_they_arrive(webapp):
    """jvm_request_buffering off with jvm_webapp (jvm_async on, pool):
    accepted by nginx -t; in jvm_mode loop refused as before."""
    cp = [str(ROOT / "build" / "nginx-jvm.jar"),
          str(ROOT / "build" / "servlet" / "nginx-jvm-servlet.jar"), '"%s/*"' % TOMCAT]
    ok = config_test("location /a/ { jvm_webapp %s context=/a; "
                     "jvm_request_buffering off; }" % webapp, classpath=cp)
    assert ok.returncode == 0, ok.stderr
    bad = config_test("location /a/ { jvm_webapp %s context=/a; jvm_mode loop; "
                      "jvm_request_buffering off; }" % webapp, classpath=cp)
    assert bad.returncode != 0 and "jvm_mode loop" in bad.stderr, bad.stderr


# --- the same servlets on Spring Boot's Jetty starter (the Jetty seam) ----
#
# tests/apps/servlet-nio-boot: the servlets above in a Spring Boot 4 jar on
# Boot's Jetty starter (Jetty 12.1), served unmodified by --jar, one worker
# in pool mode; the Jetty seam's NginxStream reads as the body arrives and
# writes as the client takes it, no thread held while either waits. Each
# case is the one above, run against it.

BOOT_NIO = ROOT / "tests" / "apps" / "servlet-nio-boot"
BOOT_M2 = ROOT / "build" / "projects" / "m2"      # the Spring examples' own
BOOT_HANDLER = "nginx.jvm.servlet.boot.BootHandler"


@pytest.fixture(scope="module")
def jetty_app(shared, servlet_mode):
    """In pool mode only (make test's main run): a Boot build and start
    per run of the suite would add most of a minute to test-coloop's and
    test-servlet-virtual's."""
    if servlet_mode != "pool":
        pytest.skip("the Jetty starter's cases run in pool mode only")

    def with_servlets(dest):
        d = Path(dest) / "src" / "main" / "java" / "nio"
        d.mkdir(parents=True)
        for f in SOURCES.glob("*.java"):
            shutil.copy(f, d)
    jar = maven_package(BOOT_NIO, ROOT / "build" / "servlet-nio-boot",
                        "servlet-nio-boot.jar", m2=BOOT_M2,
                        edit=with_servlets)
    server_cert(shared)
    for f in ("server.pem", "server.key"):
        (shared / f).chmod(0o644)
    tls = free_port()
    where = ("jvm_content %s; jvm_mode pool; jvm_async on; "
             "jvm_request_buffering off;" % BOOT_HANDLER)
    n = Launcher(["--jar", str(jar),
                  "--server", "location /s/ { %s }" % where,
                  "--max-body-size", "200m",
                  "--http", "server { listen 127.0.0.1:%d ssl http2; "
                            "ssl_certificate %s; ssl_certificate_key %s; "
                            "location / { %s } }"
                  % (tls, shared / "server.pem", shared / "server.key", where)],
                 mode="pool", workers=1,
                 env={"NGINX_JVM_CACHE": str(shared / "cache")})
    n.tls = tls
    with n:
        assert n.log_lines(r"Jetty started on port 0")
        yield n


@pytest.mark.parametrize("where", ["/read", "/s/read"])
def test_jetty_read_listener_reads_a_large_body(jetty_app, where):
    test_read_listener_reads_a_large_body(jetty_app, where)


def test_jetty_read_listener_with_an_empty_body(jetty_app):
    test_read_listener_with_an_empty_body(jetty_app)


@pytest.mark.parametrize("chunked", [False, True])
def test_jetty_a_slow_uploader_is_waited_for_without_a_thread(jetty_app, chunked):
    test_a_slow_uploader_is_waited_for_without_a_thread(jetty_app, chunked)


@pytest.mark.parametrize("where", ["/read", "/s/read"])
def test_jetty_a_client_that_leaves_mid_upload(jetty_app, where):
    test_a_client_that_leaves_mid_upload(jetty_app, where)


@pytest.mark.parametrize("chunk,length", [(65536, False), (1000, True)])
def test_jetty_write_listener_writes_a_large_body_to_a_fast_reader(jetty_app, chunk, length):
    test_write_listener_writes_a_large_body_to_a_fast_reader(jetty_app, chunk, length)


def test_jetty_write_listener_to_a_slow_reader_is_bounded(jetty_app):
    test_write_listener_to_a_slow_reader_is_bounded(jetty_app)


def test_jetty_a_client_that_leaves_mid_write(jetty_app):
    test_a_client_that_leaves_mid_write(jetty_app)


def test_jetty_http2_write_listener_and_streamed_read_listener(jetty_app):
    test_http2_write_listener_and_streamed_read_listener(jetty_app)


# Of the failing bodies, only the servlet that throws after commit: Jetty
# itself ends the other two (the async timeout after a flush, the
# WriteListener that throws) as complete, on its own connector as here
# (java -jar of the same jar, curl: a clean end), where Tomcat cuts them.
@pytest.mark.log_allows(*FAILING_LOG)
def test_jetty_a_body_that_fails_is_cut_short_on_http1(jetty_app):
    test_a_body_that_fails_is_cut_short_on_http1(jetty_app, "throw")


@pytest.mark.log_allows(*FAILING_LOG)
def test_jetty_a_body_that_fails_is_reset_on_http2(jetty_app):
    test_a_body_that_fails_is_reset_on_http2(jetty_app, "throw")
