"""Subrequests from Java and Clojure handlers: through nginx's proxy_pass to
a Python upstream, several in parallel, with method, headers, args and a
body; errors: a missing location, an upstream that refuses, one that hangs
(nginx's proxy_read_timeout), a handler that may not wait."""

import json
import os
import socket

import pytest

from harness import Nginx, free_port
from upstream import up  # noqa: F401 (the module's upstream, a fixture)

TRACE = r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: |\s+Suppressed: )"

LOCATIONS = """
        location /up/ { internal;
                        proxy_read_timeout 1s;
                        proxy_pass http://127.0.0.1:@UP@/; }
        location /refused/ { internal;
                             proxy_pass http://127.0.0.1:@DEAD@/; }
        location /async { jvm_async on; jvm_content testapp.Sub$Async; }
        location /static/ { internal; root @PREFIX@/html; }
        location /sub-headers { jvm_async on; jvm_content testapp.Sub$Headers; }
        location /blocking { jvm_content testapp.Sub$Blocking; }
        location /refused-on-loop { jvm_mode loop;
                                    jvm_content testapp.Sub$Refused; }
        location /clj-combine { jvm_async on;
                                jvm_content testapp.phases/combine; }
        location /clj-callback { jvm_async on;
                                 jvm_content testapp.phases/callback; }
"""

MISSING_FILE = r"open\(\) \".*/html/nowhere\" failed"
UPSTREAM_DOWN = r"connect\(\) failed \(111: Connection refused\)"
UPSTREAM_SLOW = r"upstream timed out"


@pytest.fixture(scope="module")
def ng(mode, up):
    locations = (LOCATIONS.replace("@UP@", str(up.port))
                 .replace("@DEAD@", str(free_port())))
    with Nginx(locations, mode=mode, startup_allow=[TRACE]) as n:
        yield n


def paths(mode):
    # a pool or virtual thread may block; on the loop, jvm_async
    return ["/async"] + (["/blocking"] if mode != "loop" else [])


def test_one_subrequest(ng):
    for p in paths(ng.mode):
        r = ng.request("GET", p + "?to=/up/echo%3Fa%3D1")
        assert r.status == 200, r
        status, upstream, body = r.text.strip().split(" ", 2)
        assert (status, upstream) == ("200", "py")
        sent = json.loads(body)
        assert sent["path"] == "/echo"
        assert sent["query"] == "a=1"
        assert sent["method"] == "GET"


def test_parallel_subrequests(ng):
    to = ",".join("/up/slow%3Fms%3D300%26n%3D" + str(i) for i in range(4))
    for p in paths(ng.mode):
        r = ng.request("GET", p + "?to=" + to)
        assert r.status == 200
        lines = r.text.strip().split("\n")
        assert len(lines) == 4
        for i, line in enumerate(lines):
            assert line.startswith("200 py ")
            assert json.loads(line.split(" ", 2)[2])["query"] == "ms=300&n=%d" % i


def test_post_with_headers_and_body(ng):
    r = ng.request("GET", "/async?to=POST:/up/echo",
                   headers={"X-Parent": "p", "Content-Type": "x/parent"})
    assert r.status == 200
    sent = json.loads(r.text.strip().split(" ", 2)[2])
    assert sent["method"] == "POST"
    assert sent["query"] == "p=1"
    assert sent["body"] == "sub body"
    assert sent["headers"]["x-sub"] == "yes"
    assert sent["headers"]["x-parent"] == "p"
    assert sent["headers"]["content-type"] == "text/plain"
    assert sent["headers"]["content-length"] == "8"


@pytest.mark.log_allows(MISSING_FILE)
def test_missing_location_is_404(ng):
    r = ng.request("GET", "/async?to=/nowhere")
    assert r.status == 200
    assert r.text.startswith("404 null")


@pytest.mark.log_allows(UPSTREAM_DOWN)
def test_refused_upstream_is_502(ng):
    r = ng.request("GET", "/async?to=/refused/x")
    assert r.status == 200
    assert r.text.startswith("502 null")


@pytest.mark.log_allows(UPSTREAM_SLOW)
def test_hanging_upstream_times_out_504(ng):
    r = ng.request("GET", "/async?to=/up/slow%3Fms%3D3000,/up/echo")
    assert r.status == 200
    lines = r.text.strip().split("\n")
    assert lines[0].startswith("504 null")
    assert lines[1].startswith("200 py")


def test_loop_handler_cannot_wait(ng):
    r = ng.request("GET", "/refused-on-loop")
    assert r.status == 200
    assert r.text.startswith("refused: a subrequest needs a request that "
                             "can wait for it")


def test_clojure_parallel(ng):
    r = ng.request("GET", "/clj-combine")
    assert r.status == 200
    assert r.text == "200 true|200 py true"


def test_clojure_callback(ng):
    r = ng.request("GET", "/clj-callback")
    assert r.status == 200
    assert r.text == "callback 202"


def test_a_subrequest_answers_every_header_field_the_client_would_get(ng):
    """Content-Length and Last-Modified, which nginx keeps apart from its
    list of header fields, reach Java as they reach a phase handler."""
    path = os.path.join(ng.prefix, "html", "static", "file.txt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"x" * 1234)
    os.utime(path, (784111777, 784111777))
    r = ng.request("GET", "/sub-headers?to=/static/file.txt")
    assert r.status == 200, r
    lines = r.text.splitlines()
    assert lines[0] == "200"
    fields = dict(line.split(": ", 1) for line in lines[1:])
    assert fields["Content-Length"] == "1234"
    assert fields["Last-Modified"] == "Sun, 06 Nov 1994 08:49:37 GMT"
    assert fields["Content-Type"].startswith("text/plain")
    assert fields["ETag"].startswith('"')
