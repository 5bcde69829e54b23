"""Calls out through nginx's upstreams (nginx.jvm.Upstream, jvm_client;
issue 49): from a handler in the suite's mode (NGINX_JVM_MODES) and from a
timer on the loop, to a Python backend on 127.0.0.1 through a jvm_client
location's proxy_pass.  A 64 MB body relayed to a slow client keeps the
worker's RSS flat and the backend no further ahead than the buffers
between; a backend that refuses (502), never accepts (504 after
proxy_connect_timeout), resets mid-body, hangs before its answer (504
after proxy_read_timeout) or mid-body (the body's read fails); the outer client leaving ends the call at the backend; a client
of the server never reaches a jvm_client location (404); the gate refuses
what could split the request; nginx -t names the directive."""

import os
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from harness import Nginx, alive, config_test, free_port, wait_for

MB = 1024 * 1024


class Backend(BaseHTTPRequestHandler):
    """/echo: the request described; /big?mb=N: N MB, counted as sent;
    /chunked: three chunks; /reset: 1 MB promised, 128 KB sent, then a
    reset; /hang: no answer; /drip: the header fields, 10 bytes, then
    nothing."""
    protocol_version = "HTTP/1.1"
    sent = 0                    # /big's bytes written so far
    closed_early = []           # /big's that met a closed connection

    def log_message(self, *args):
        pass

    def head(self, status=200, length=None, ctype="text/plain", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("X-Upstream", "py")
        if length is not None:
            self.send_header("Content-Length", str(length))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()

    def do_GET(self):
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        path = url.path
        if path == "/echo":
            text = "%s %s %s %s" % (self.command, path, url.query,
                                    self.headers.get("X-Call"))
            body = text.encode()
            self.head(length=len(body))
            if self.command != "HEAD":
                self.wfile.write(body)
        elif path == "/big":
            total = int(query.get("mb", ["64"])[0]) * MB
            self.head(length=total, ctype="application/octet-stream")
            piece = b"x" * 65536
            Backend.sent = 0
            try:
                while Backend.sent < total:
                    self.wfile.write(piece)
                    Backend.sent += len(piece)
            except OSError:
                Backend.closed_early.append(Backend.sent)
        elif path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"one,", b"two,", b"three"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/reset":
            self.head(length=MB)
            self.wfile.write(b"r" * 131072)
            self.wfile.flush()
            time.sleep(0.2)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
        elif path == "/garbage":
            self.wfile.write(b"this is no HTTP\r\n\r\n")
            self.close_connection = True
        elif path == "/hang":
            time.sleep(5)
        elif path == "/drip":
            self.head(length=100)
            self.wfile.write(b"0123456789")
            self.wfile.flush()
            time.sleep(5)
        else:
            self.head(404, length=0)

    def do_POST(self):  # and PUT
        if self.path == "/count":
            # a streamed body, read slowly: its length, and how far the
            # producer could be ahead is the test's to see
            n = 0
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16) \
                    if self.headers.get("Transfer-Encoding") == "chunked" \
                    else None
                if size is None:
                    left = int(self.headers["Content-Length"])
                    while left:
                        got = self.rfile.read(min(left, 65536))
                        left -= len(got)
                        n += len(got)
                        time.sleep(0.001)
                    break
                if size == 0:
                    self.rfile.readline()
                    break
                n += len(self.rfile.read(size))
                self.rfile.readline()
                time.sleep(0.001)
            out = str(n).encode()
            self.head(length=len(out))
            self.wfile.write(out)
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        out = b"%s %s %s" % (self.command.encode(), self.path.encode(), body)
        self.head(length=len(out))
        self.wfile.write(out)

    do_HEAD = do_GET
    do_PUT = do_POST


@pytest.fixture(scope="module")
def backend():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Backend)
    server.daemon_threads = True
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield server
    server.shutdown()
    server.server_close()


UPSTREAM_ERRORS = [r"connect\(\) failed \(111: Connection refused\)",
                   r"upstream sent no valid HTTP/1.0 header",
                   r"upstream timed out",
                   r"upstream prematurely closed",
                   r"(recv|readv)\(\) failed \(104: Connection reset by peer\)"]

LOCATIONS = """
        location /_b/ { jvm_client b;
                        proxy_pass http://127.0.0.1:@UP@/;
                        proxy_read_timeout 1s;
                        proxy_max_temp_file_size 0; }
        location /_fast/ { jvm_client fast; return 200 "fast"; }
        location /_stream/ { jvm_client stream;
                             proxy_pass http://127.0.0.1:@UP@/;
                             proxy_http_version 1.1;
                             proxy_request_buffering off;
                             client_max_body_size 32m; }
        location /upload { jvm_mode pool; jvm_content testapp.Calls$Upload; }
        location /clj-relay { jvm_async on; jvm_content testapp.client/relay; }
        location /clj-post { jvm_mode pool; jvm_content testapp.client/post; }
        location /clj-cancel { jvm_mode pool; jvm_content testapp.client/cancel; }
        location /_dead/ { jvm_client dead;
                           proxy_pass http://127.0.0.1:@DEAD@/; }
        location /_full/ { jvm_client full; proxy_connect_timeout 1s;
                           proxy_pass http://127.0.0.1:@FULL@/; }
        location /relay { jvm_async on; jvm_content testapp.Calls$Relay; }
        location /blocking { @BLOCKING@ jvm_content testapp.Calls$Blocking; }
        location /on-loop { jvm_mode loop; jvm_async on;
                            jvm_content testapp.Calls$ReadOnLoop; }
        location /timer { jvm_mode loop; jvm_content testapp.Calls$Timer; }
        location /refused { jvm_mode pool; jvm_content testapp.Calls$Refused; }
        location /many { jvm_mode pool; jvm_content testapp.Calls$Many; }
        location /hold { jvm_mode pool; jvm_content testapp.Calls$Hold; }
        location /cancel { jvm_mode pool; jvm_content testapp.Calls$Cancel; }
        location /flow { jvm_mode pool; jvm_content testapp.Calls$Publisher; }
        location = /status { jvm_status; }
        location /burst { jvm_mode pool; jvm_content testapp.Calls$Burst; }
        location /sub/ { internal; proxy_pass http://127.0.0.1:@UP@/; }
        location /results { jvm_mode pool; jvm_content testapp.Calls$Results; }
"""

# a call from the worker's init hook and from a topic's subscriber
HTTP = """
    jvm_init testapp.Calls$Init;
    jvm_topic calls 64k;
"""


@pytest.fixture(scope="module")
def full():
    """A port whose accept queue is full: a listener (backlog 0) that
    never accepts, its one place taken, so that the kernel drops the next
    SYNs and a connect hangs (proxy_connect_timeout's case)."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(0)
    taken = socket.create_connection(ls.getsockname(), timeout=5)
    yield ls.getsockname()[1]
    taken.close()
    ls.close()


@pytest.fixture(scope="module")
def ng(mode, backend, full):
    locations = (LOCATIONS.replace("@UP@", str(backend.server_address[1]))
                 .replace("@DEAD@", str(free_port()))
                 .replace("@FULL@", str(full))
                 # a loop handler may not wait: the blocking one in a pool
                 .replace("@BLOCKING@",
                          "jvm_mode pool;" if mode == "loop" else ""))
    with Nginx(locations, http=HTTP, mode=mode) as n:
        yield n


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_a_call_from_a_handler(ng):
    r = ng.get("/blocking?to=/echo%3Fa%3D1")
    assert r.status == 200, r
    # "200 <length> py": the backend saw the URI after the prefix, the args
    # and the header field the call set
    status, length, upstream = r.text.split(" ")
    assert (status, upstream) == ("200", "py")
    r = ng.get("/relay?to=/echo%3Fa%3D1")
    assert (r.status, r.text) == (200, "GET /echo a=1 yes"), r


def test_a_call_from_clojure(ng):
    r = ng.get("/clj-relay?to=/echo%3Fa%3D2")
    assert (r.status, r.text, r.header("X-Was")) == \
        (200, "GET /echo a=2 clj", "py"), r
    r = ng.get("/clj-post")
    assert r.text == "200 POST /post from clojure", r.text


def test_a_call_with_a_body(ng):
    r = ng.get("/relay?to=/post&method=POST&body=hello%20there")
    assert (r.status, r.text) == (200, "POST /post hello there"), r
    r = ng.get("/relay?to=/post&method=PUT&body=")
    assert (r.status, r.text) == (200, "PUT /post "), r


def test_a_request_body_streamed(ng):
    # proxy_request_buffering off: streamed, chunked, to the backend, which
    # reads it 64 KB a millisecond
    r = ng.get("/upload?mb=16&via=stream", timeout=60)
    assert r.text == "200 %d" % (16 * MB), r.text


@pytest.mark.log_allows(r"client intended to send too large chunked body")
def test_a_request_body_over_the_locations_limit(ng):
    # the location's client_max_body_size (1m) holds for a call's body
    r = ng.get("/upload?mb=2&via=b", timeout=60)
    assert r.text.startswith("413 "), r.text


def test_a_chunked_answer_and_head(ng):
    r = ng.get("/relay?to=/chunked")
    assert (r.status, r.text) == (200, "one,two,three"), r
    r = ng.get("/blocking?to=/echo&method=HEAD")
    assert r.text == "200 0 py", r


def test_a_call_from_a_timer_on_the_loop(ng):
    assert ng.get("/timer?op=start&to=/echo%3Ft%3D1").text == "started"
    got = wait_for(lambda: (lambda t: t if t not in ("pending", "none")
                            else None)(ng.get("/timer?op=result").text), 20)
    assert got == "200 18 py", got  # "GET /echo t=1 None"


@pytest.mark.log_allows(*UPSTREAM_ERRORS)
def test_calls_from_the_init_hook_and_a_topic_subscriber(ng):
    # the init hook's call began before the worker served anything
    assert wait_for(lambda: ng.get("/results").text.startswith(
        "init: 200 "), 10), ng.get("/results").text
    assert ng.get("/results?op=publish&m=topic").text == "true"
    assert wait_for(lambda: "| topic: 200 " in ng.get("/results").text, 10), \
        ng.get("/results").text
    # each the backend's echo of its call, whole (no X-Call: Upstream.get)
    assert ng.get("/results").text == "init: 200 %d py | topic: 200 %d py" % (
        len("GET /echo from=init None"), len("GET /echo from=topic None")), \
        ng.get("/results").text


@pytest.mark.log_allows(r"upstream timed out")
def test_reading_on_the_loop_before_the_body_came_is_refused(ng):
    # /drip's 10 bytes stay in nginx's proxy buffer and, with them, the
    # header (postpone_output) until proxy_read_timeout: the future
    # completes then, with nginx's [error] line written (when the test
    # took longer than the timeout, inside its window)
    r = ng.get("/on-loop?to=/drip")
    assert r.status == 200
    assert r.text.startswith("refused: reading a call's body before it "
                             "arrived would block the event loop"), r.text


def test_a_client_never_reaches_a_jvm_client_location(ng, backend):
    assert ng.get("/_b/echo").status == 404
    # before the location's own rewrite-phase "return"
    assert ng.get("/_fast/x").status == 404
    assert ng.get("/_b/../_b/echo").status in (400, 404)


def test_a_call_stays_in_its_location(ng):
    # "%2e%2e" is no ".." to the gate, but nginx decodes it: without the
    # check the call would reach the server's /relay location as a local
    # client; a call answers only from the location it names (404)
    r = ng.get("/blocking?to=/%252e%252e/relay")
    assert r.text.startswith("404 "), r.text
    # nor another jvm_client location than the one it names
    r = ng.get("/blocking?to=/%252E%252E/_fast/x")
    assert r.text.startswith("404 "), r.text


def test_the_gate_refuses_what_could_split_the_request(ng):
    for what, text in (("value", "refused: refused the value of the call's "
                                 "header field \"X-Bad\""),
                       ("host", "refused: the call's header field Host is "
                                "the call's own"),
                       ("uri", "refused: refused the call's URI"),
                       ("method", "refused: refused the call's method"),
                       ("space", "refused: refused the call's URI")):
        r = ng.get("/refused?what=" + what)
        assert r.text.startswith(text), (what, r.text)


@pytest.mark.log_allows(*UPSTREAM_ERRORS)
def test_a_backend_that_refuses_gives_nginxs_502(ng):
    r = ng.get("/blocking?to=/x&via=dead")
    assert r.text.startswith("502 "), r.text
    r = ng.get("/blocking?to=/x&via=nowhere")
    assert r.text.startswith("failed: no jvm_client location of that name"), \
        r.text


@pytest.mark.log_allows(*UPSTREAM_ERRORS)
def test_a_backend_that_resets_mid_body(ng):
    r = ng.get("/blocking?to=/reset")
    assert r.text.startswith("200 body failed after "), r.text
    assert "the answer ended early" in r.text, r.text


@pytest.mark.log_allows(*UPSTREAM_ERRORS)
def test_a_backend_that_hangs(ng):
    t0 = time.monotonic()
    r = ng.get("/blocking?to=/hang")
    # nginx's own answer after proxy_read_timeout (1s), as any client's
    assert r.text.startswith("504 "), r.text
    assert time.monotonic() - t0 < 4.5
    r = ng.get("/blocking?to=/drip")
    # the 10 bytes sent stay in nginx's proxy buffer (proxy_buffering on)
    assert r.text.startswith("200 body failed after 0: the answer ended "
                             "early (100 bytes short)"), r.text


@pytest.mark.log_allows(r"upstream timed out \(110: Connection timed out\) "
                        r"while connecting to upstream")
def test_a_backend_that_never_accepts(ng):
    # proxy_connect_timeout (1s): nginx's own 504, as any client's
    t0 = time.monotonic()
    r = ng.get("/blocking?via=full&to=/x")
    assert r.text.startswith("504 "), r.text
    assert time.monotonic() - t0 < 4.5


def test_64_mb_read_slowly_keeps_the_worker_flat(ng, backend):
    pid = ng.worker_pids()[0]
    # a first big call: the JVM's heap and nginx's buffers at their size
    warm = ng.get("/relay?to=/big%3Fmb%3D8")
    assert len(warm.body) == 8 * MB
    before = rss_kb(pid)
    s = socket.create_connection(("127.0.0.1", ng.port), timeout=30)
    s.sendall(b"GET /relay?to=/big%3Fmb%3D64 HTTP/1.1\r\nHost: x\r\n"
              b"Connection: close\r\n\r\n")
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    got, peak, ahead = 0, before, 0
    while True:
        data = s.recv(65536)
        if not data:
            break
        got += len(data)
        if got % (2 * MB) < 65536:
            peak = max(peak, rss_kb(pid))
            ahead = max(ahead, Backend.sent - got)
            time.sleep(0.02)
    s.close()
    assert got > 64 * MB        # and the header
    # the backend is never far ahead of the reader: socket buffers, nginx's
    # proxy buffers and the call's 256 KB, not the body
    assert ahead < 16 * MB, ahead
    assert peak - before < 32 * 1024, (before, peak)
    print("64 MB relayed: RSS %d -> peak %d KB, backend ahead at most "
          "%.1f MB" % (before, peak, ahead / MB))


def test_the_outer_client_leaving_ends_the_call(ng, backend):
    Backend.closed_early.clear()
    s = socket.create_connection(("127.0.0.1", ng.port), timeout=30)
    s.sendall(b"GET /relay?to=/big%3Fmb%3D64 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert len(s.recv(65536)) > 0
    s.close()
    # the client's leaving closes the call's body, the call's end of the
    # pair, nginx's request to the backend: the backend's writes fail
    assert wait_for(lambda: Backend.closed_early, 20), \
        "the backend went on sending"
    assert Backend.closed_early[0] < 48 * MB


def backend_stalled():
    """/big's bytes sent, once they held still for 0.3 s (the buffers
    between it and the reader are full: what is measured is a stop, so it
    takes a span of time), else None."""
    a = Backend.sent
    time.sleep(0.3)
    return a if a and Backend.sent == a else None


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def in_flight(ng):
    return int(ng.get("/hold?op=count").text)


@pytest.mark.log_allows(*UPSTREAM_ERRORS)
def test_a_backend_that_answers_garbage_fails_the_future(ng):
    # nginx passes an answer without a status line on as HTTP/0.9 (and
    # logs "upstream sent no valid HTTP/1.0 header"): no HTTP answer
    r = ng.get("/blocking?to=/garbage")
    assert r.text == "failed: not an HTTP answer: this is no HTTP", \
        r.text


@pytest.mark.log_allows(*UPSTREAM_ERRORS)
@pytest.mark.parametrize("path", ["/cancel", "/clj-cancel"])
def test_cancelling_the_future_before_the_answer_ends_the_call(ng, path):
    # Java's future, and Clojure's (a future of the map, chained after it)
    pid = ng.worker_pids()[0]
    assert wait_for(lambda: in_flight(ng) == 0, 10)
    before = fds(pid)
    r = ng.get(path + "?to=/hang&ms=200")
    assert r.text == "cancelled true", r.text
    # the call's pair and nginx's request to the backend: gone
    assert wait_for(lambda: in_flight(ng) == 0 and fds(pid) <= before, 10), \
        (in_flight(ng), fds(pid), before)


def test_a_body_never_read_holds_the_backend_back_not_memory(ng, backend):
    pid = ng.worker_pids()[0]
    assert wait_for(lambda: in_flight(ng) == 0, 10)
    before_fds, before_rss = fds(pid), rss_kb(pid)
    r = ng.get("/hold?op=hold&to=/big%3Fmb%3D64")
    assert r.text == "held 200", r.text
    still = wait_for(backend_stalled, 20)
    assert still and still < 16 * MB, Backend.sent
    assert rss_kb(pid) - before_rss < 16 * 1024
    assert in_flight(ng) == 1
    assert ng.get("/hold?op=release").text == "released"
    assert wait_for(lambda: in_flight(ng) == 0 and fds(pid) <= before_fds,
                    10), (in_flight(ng), fds(pid), before_fds)
    print("a body never read: the backend stopped %.1f MB in" % (still / MB))


@pytest.mark.parametrize("how", ["quit", "reload"])
def test_a_worker_leaving_with_a_call_in_flight(mode, backend, how):
    """A body never read holds nginx's end of the call until its
    send_timeout; then the worker leaves, its call's end closed by the
    module (nginx logs an [alert] for a socket left open), and after a
    reload the new worker calls out."""
    locations = (LOCATIONS.replace("@UP@", str(backend.server_address[1]))
                 .replace("@DEAD@", str(free_port()))
                 .replace("@FULL@", str(free_port()))
                 .replace("jvm_client b;", "jvm_client b; send_timeout 2s;")
                 .replace("@BLOCKING@",
                          "jvm_mode pool;" if mode == "loop" else ""))
    with Nginx(locations, mode=mode) as n:
        r = n.get("/hold?op=hold&to=/big%3Fmb%3D64")
        assert r.text == "held 200", r.text
        old = n.worker_pids()
        start = time.monotonic()
        since = n.log_size()
        assert n.control(how).returncode == 0
        if how == "reload":
            # the old worker serves until the new one is ready, then quits;
            # until it has taken the quit (and closed its listening
            # sockets) it may still take the next connection, and a call
            # of a worker that is leaving fails (on a loaded machine, once)
            assert n.wait_ready(exclude=old)
            assert n.wait_log(r"gracefully shutting down", since)
            start = time.monotonic()
            r = n.get("/blocking?to=/echo")
            assert r.text.startswith("200 "), r.text
        assert wait_for(lambda: not any(alive(p) for p in old), 30)
        took = time.monotonic() - start
        if how == "quit":
            assert wait_for(lambda: n.proc.poll() is not None, 30)
        # send_timeout (2 s) and the JVM's stop, not the body's 64 MB
        assert took < 12, took


def test_more_calls_than_connections_wait_their_turn(ng):
    """10,000 calls started at once by one handler, in a worker of 256
    worker_connections: a call is counted as three (the pair's, the
    upstream's), a quarter is kept for clients, calls take at most a
    quarter's worth: the others wait in order and all are answered. The
    location answers itself (return 200): Python's backend would be the
    bottleneck, not the worker."""
    pid = ng.worker_pids()[0]
    assert wait_for(lambda: in_flight(ng) == 0, 10)
    before = fds(pid)
    t0 = time.monotonic()
    r = ng.get("/burst?n=10000&via=fast&to=/x", timeout=120)
    ok, failed, most = map(int, r.text.split())
    assert (ok, failed) == (10000, 0), r.text
    assert 0 < most <= 256 // 4, most
    assert wait_for(lambda: in_flight(ng) == 0 and fds(pid) <= before, 10)
    print("10000 calls, at most %d in flight, in %.1f s"
          % (most, time.monotonic() - t0))


def test_the_cost_of_a_call_a_rough_order(ng):
    """Not a benchmark (a shared machine): calls one after another, each a
    socket pair and a parse more than a subrequest, stay of the same
    order as subrequests to the same backend."""
    r = ng.get("/many?n=200")
    assert r.status == 200, r.text
    call_us, sub_us = map(int, r.text.split())
    print("a call %d us, a subrequest %d us (mean of 200, one after "
          "another, Python backend)" % (call_us, sub_us))
    assert call_us < 10 * max(sub_us, 100), (call_us, sub_us)


def test_nginx_t_names_the_directive():
    bad = [("location ~ /x { jvm_client a; proxy_pass http://127.0.0.1:1; }",
            '"jvm_client" directive needs a prefix location'),
           ("location /a/ { jvm_client a; }\n"
            "        location /b/ { jvm_client a; }",
            '"jvm_client": the name "a" is already in'),
           ("location /a/ { jvm_client a; jvm_client b; }",
            '"jvm_client" directive is duplicate')]
    for locations, text in bad:
        out = config_test(locations)
        assert out.returncode != 0 and text in out.stderr + out.stdout, \
            (locations, out)


def test_the_body_as_a_flow_publisher(ng):
    # a piece at a time, on the common pool: the whole body, then its end
    r = ng.get("/flow?to=/big%3Fmb%3D8")
    assert r.text == "200 %d complete" % (8 * MB), r.text
    r = ng.get("/flow?to=/chunked")
    assert r.text == "200 13 complete", r.text


@pytest.mark.log_allows(*UPSTREAM_ERRORS)
def test_a_body_cut_short_is_the_subscribers_error(ng):
    r = ng.get("/flow?to=/reset")
    assert r.text.startswith("200 ") and " error: the answer ended early" \
        in r.text, r.text


def test_cancelling_the_subscription_mid_body_ends_the_call(ng, backend):
    """The caller's cancel mid-stream (after the answer's head): the call's
    end of the pair closed, nginx's request to the backend ended, the
    backend's writes fail."""
    pid = ng.worker_pids()[0]
    assert wait_for(lambda: in_flight(ng) == 0, 10)
    before = fds(pid)
    Backend.closed_early.clear()
    r = ng.get("/flow?to=/big%3Fmb%3D64&take=1048576")
    status, n, how = r.text.split()
    assert (status, how) == ("200", "cancelled") and int(n) >= MB, r.text
    assert wait_for(lambda: Backend.closed_early, 20), \
        "the backend went on sending"
    assert Backend.closed_early[0] < 48 * MB
    assert wait_for(lambda: in_flight(ng) == 0 and fds(pid) <= before, 10), \
        (in_flight(ng), fds(pid), before)


def test_a_subscriber_that_asks_for_nothing_holds_the_backend_back(ng,
                                                                   backend):
    pid = ng.worker_pids()[0]
    assert wait_for(lambda: in_flight(ng) == 0, 10)
    before_rss = rss_kb(pid)
    assert ng.get("/flow?to=/big%3Fmb%3D64&take=0").text == "200 held"

    held = wait_for(backend_stalled, 20)
    assert held and held < 16 * MB, Backend.sent
    assert rss_kb(pid) - before_rss < 16 * 1024
    assert in_flight(ng) == 1
    assert ng.get("/flow?op=release").text == "released"
    assert wait_for(lambda: in_flight(ng) == 0, 10)


def status_figures(ng):
    out = {}
    for line in ng.get("/status").text.splitlines():
        if line.startswith("nginx_jvm_calls"):
            name, value = line.split()
            out[name] = float(value)
    return out


@pytest.mark.log_allows(*UPSTREAM_ERRORS)
def test_jvm_status_counts_the_calls(ng):
    assert wait_for(lambda: in_flight(ng) == 0, 10)
    before = status_figures(ng)
    assert set(before) == {"nginx_jvm_calls_in_flight",
                           "nginx_jvm_calls_waiting", "nginx_jvm_calls_total",
                           "nginx_jvm_calls_failed_total"}, before
    assert ng.get("/blocking?to=/echo").text.startswith("200 ")
    assert ng.get("/blocking?to=/garbage").text.startswith("failed: ")
    assert ng.get("/hold?op=hold&to=/big%3Fmb%3D64").text == "held 200"
    after = status_figures(ng)
    assert after["nginx_jvm_calls_total"] - before["nginx_jvm_calls_total"] \
        == 3, (before, after)
    assert after["nginx_jvm_calls_failed_total"] \
        - before["nginx_jvm_calls_failed_total"] == 1, (before, after)
    assert after["nginx_jvm_calls_in_flight"] == 1, after
    assert after["nginx_jvm_calls_waiting"] == 0, after
    assert ng.get("/hold?op=release").text == "released"
    assert wait_for(lambda: status_figures(ng)["nginx_jvm_calls_in_flight"]
                    == 0, 10)
