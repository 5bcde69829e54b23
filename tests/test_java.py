"""The Java handler API, in an nginx whose class path has no Clojure."""

import json
import os

import pytest

from harness import Nginx, parse_raw, wait_for

LOCATIONS = """
        location /echo { jvm_content testapp.Echo; }
        location /bodies/ { jvm_content testapp.Bodies; }
        location /throws { jvm_content testapp.Throws; }
        location /init { jvm_content testapp.Init; }
        location /clojure { jvm_content testapp.ring/echo; }

        location /path/ { jvm_content testapp.PathOf; }
        location /moved/ { rewrite ^/moved/(.*)$ /path/moved/$1 last; }
        location /tried/ { try_files /absent /path/tried$uri; }
        location /found/ { root html; try_files $uri.page =404;
                           jvm_content testapp.PathOf; }
        location /missing/ { error_page 404 = /path/error; return 404; }
        location /guarded/ { auth_request /path/auth%20check;
                             auth_request_set $auth_path $sent_http_x_path;
                             add_header X-Auth-Path $auth_path always;
                             jvm_content testapp.PathOf; }
        location /rw/ { jvm_rewrite testapp.PathOf$Rewrite; }
"""

HTTP = """
    jvm_init testapp.Init;
"""

TRACE = r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: |\s+Suppressed: )"
NO_CLOJURE = r'cannot load handler "testapp.ring/echo": .*Clojure is not on ' \
             r'the class path'


@pytest.fixture(scope="module")
def ng(mode):
    with Nginx(LOCATIONS, http=HTTP, classpath="java", mode=mode,
               startup_allow=[NO_CLOJURE, TRACE]) as n:
        with open(n.path("html", "data.bin"), "wb") as f:
            f.write(os.urandom(50000))
        os.makedirs(n.path("html", "found"))
        with open(n.path("html", "found", "page.page"), "w") as f:
            f.write("found\n")
        yield n


def pattern(n):
    return (bytes(range(251)) * (n // 251 + 1))[:n]


def test_echo_get(ng):
    data = ng.raw(b"GET /echo/a%20b?x=1&y HTTP/1.1\r\n"
                  b"Host: localhost:8080\r\n"
                  b"X-One: 1\r\n"
                  b"X-Rep: a\r\n"
                  b"X-REP: b\r\n"
                  b"Cookie: c=1\r\n"
                  b"Cookie: d=2\r\n"
                  b"Connection: close\r\n\r\n")
    r = parse_raw(data)
    assert r.status == 200
    req = json.loads(r.body)
    assert req["method"] == "GET"
    assert req["uri"] == "/echo/a%20b"
    assert req["query"] == "x=1&y"
    assert req["protocol"] == "HTTP/1.1"
    assert req["scheme"] == "http"
    assert req["https"] is False
    assert req["serverName"] == "localhost"
    assert req["serverPort"] == ng.port
    assert req["remoteAddr"] == "127.0.0.1"
    assert req["headerCount"] == 7
    assert req["headerNames"] == ["Host", "X-One", "X-Rep", "X-REP", "Cookie",
                                  "Cookie", "Connection"]
    assert req["headers"] == {"host": "localhost:8080", "x-one": "1",
                              "x-rep": "a,b", "cookie": "c=1; d=2",
                              "connection": "close"}
    assert req["hostAnyCase"] == "localhost:8080"
    assert req["hasBody"] is False
    assert req["sslClientCert"] is False
    assert req["body"] == ""


def test_echo_post_body(ng):
    body = bytes(range(256))
    r = ng.request("POST", "/echo", body=body)
    assert r.status == 200
    req = json.loads(r.body)
    assert req["method"] == "POST"
    assert req["query"] is None
    assert req["hasBody"] is True
    assert req["body"].encode("latin-1") == body


def path_of(ng, target):
    """What testapp.PathOf saw of the raw request target (bytes)."""
    r = parse_raw(ng.raw(b"GET " + target + b" HTTP/1.1\r\nHost: localhost\r\n"
                         b"Connection: close\r\n\r\n"))
    assert r.status == 200, (target, r.status, r.body)
    return r, json.loads(r.body)


# request target: nginx's $uri, as Request.path() gives it
PATHS = [
    (b"/path/plain", "/path/plain"),
    (b"/path/a%20b?x=%20", "/path/a b"),
    (b"/path/caf%C3%A9", "/path/caf\u00e9"),
    ("/path/caf\u00e9/\u65e5".encode("utf-8"), "/path/caf\u00e9/\u65e5"),
    (b"/path/a%2Fb", "/path/a/b"),
    (b"/path/x/../y", "/path/y"),
    (b"/path/./z", "/path/z"),
    (b"//path//m", "/path/m"),
    (b"/path/%2e%2e/path/w", "/path/w"),
    (b"/path/x/..;/admin", "/path/x/..;/admin"),
    (b"/path/a;b", "/path/a;b"),
    (b"/path/%25", "/path/%"),
    (b"/path/%FF", "/path/\ufffd"),
]


@pytest.mark.parametrize("target,path", PATHS, ids=[t.decode("latin-1")
                                                    for t, _ in PATHS])
def test_path_is_nginx_uri(ng, target, path):
    """Request.path() is $uri, decoded and normalised as nginx routed on it,
    without a hop; uri() stays the path as sent."""
    r, j = path_of(ng, target)
    assert j["path"] == path
    assert j["path"] == j["uriVariable"]
    assert j["uri"] == target.split(b"?")[0].decode("latin-1")


def test_path_after_internal_redirects(ng):
    # rewrite ... last: uri() is the new URI too
    _, j = path_of(ng, b"/moved/a%20b?k=v")
    assert (j["path"], j["uri"], j["query"]) == ("/path/moved/a b",
                                                 "/path/moved/a b", "k=v")
    _, j = path_of(ng, b"/moved/caf%C3%A9")
    assert j["path"] == j["uriVariable"] == "/path/moved/caf\u00e9"
    # try_files to its last URI
    _, j = path_of(ng, b"/tried/x%20y")
    assert j["path"] == j["uriVariable"] == "/path/tried/tried/x y"
    # try_files that found a file: $uri changes, the request line's path
    # stays
    _, j = path_of(ng, b"/found/page")
    assert j["path"] == j["uriVariable"] == "/found/page.page"
    assert j["uri"] == "/found/page"
    # error_page
    _, j = path_of(ng, b"/missing/x%20y")
    assert j["path"] == j["uriVariable"] == "/path/error"


def test_path_of_a_subrequest_and_after_a_rewrite_handler(ng):
    # auth_request: the subrequest's URI as given, not decoded
    r, j = path_of(ng, b"/guarded/g%20h")
    assert j["path"] == "/guarded/g h"
    assert r.header("X-Auth-Path") == "%2Fpath%2Fauth%2520check"
    # jvm_rewrite: path() there, and after its setUri()
    _, j = path_of(ng, b"/rw/a%20b")
    assert j["path"] == j["uriVariable"] == "/path/from-rewrite/rw/a b"
    assert j["query"] == "before=%2Frw%2Fa+b"


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PURGE"])
def test_echo_methods(ng, method):
    r = ng.request(method, "/echo?")
    assert r.status == 200
    req = json.loads(r.body)
    assert req["method"] == method
    assert req["query"] == ""


def test_string_bodies(ng):
    r = ng.get("/bodies/string")
    assert r.status == 200
    assert r.body == "h\u00e9llo java".encode("utf-8")
    assert r.header("Content-Type") == "text/plain; charset=utf-8"
    assert ng.get("/bodies/latin1").body == b"h\xe9llo"


def test_byte_array_body(ng):
    r = ng.get("/bodies/bytes")
    assert r.status == 200
    assert r.body == bytes(range(256))


def test_file_body(ng):
    path = ng.path("html", "data.bin")
    with open(path, "rb") as f:
        data = f.read()
    r = ng.get("/bodies/file?path=" + path)
    assert r.status == 200
    assert r.body == data
    assert r.header("ETag") and r.header("Last-Modified")
    r = ng.get("/bodies/file?path=" + path, headers={"Range": "bytes=100-"})
    assert r.status == 206
    assert r.body == data[100:]


def test_input_stream_body(ng):
    before = int(ng.get("/bodies/closes").body)
    n = 3 * 1000 * 1000
    r = ng.get("/bodies/stream?n=%d" % n)
    assert r.status == 200
    assert r.body == pattern(n)
    # closed (maybe just after the response went out)
    assert wait_for(lambda: int(ng.get("/bodies/closes").body) == before + 1,
                    60)


def test_iterable_body(ng):
    r = ng.get("/bodies/iterable")
    assert r.status == 200
    assert r.body == b"one,two,three"


def test_body_writer(ng):
    r = ng.get("/bodies/writer")
    assert r.status == 200
    assert r.body == b"written 0\nwritten 1\nwritten 2\n"


def test_status_and_repeated_headers(ng):
    r = ng.get("/bodies/created")
    assert r.status == 201
    assert r.header_all("X-Test") == ["one"]
    assert r.header_all("Set-Cookie") == ["a=1", "b=2"]
    assert r.body == b"created"
    r = ng.get("/bodies/nobody")
    assert r.status == 204
    assert r.body == b""


@pytest.mark.parametrize("path", ["/bodies/stream?n=100000",
                                  "/bodies/iterable", "/bodies/string"])
def test_head(ng, path):
    data = ng.raw(b"HEAD %s HTTP/1.1\r\nHost: localhost\r\n"
                  b"Connection: close\r\n\r\n" % path.encode())
    r = parse_raw(data)
    assert r.status == 200
    assert r.body == b""


@pytest.mark.log_allows(r"the handler returned no response \(null\)")
def test_handler_returns_null(ng):
    since = ng.log_size()
    assert ng.get("/bodies/null").status == 500
    assert ng.wait_log(r"\[error\] .*the handler returned no response", since)


@pytest.mark.log_allows(r"jvm: the handler threw", TRACE)
def test_handler_throws(ng):
    since = ng.log_size()
    r = ng.get("/throws")
    assert r.status == 500
    assert ng.wait_log(r"\[error\] .*jvm: the handler threw: "
                       r"java.lang.IllegalStateException: java-boom-marker",
                       since)
    assert "at testapp.Throws.handle" in ng.log_text(since)
    assert ng.get("/echo").status == 200


def test_java_init_runnable(ng):
    r = ng.get("/init")
    assert r.status == 200
    assert r.text == "initialized by java 1"


@pytest.mark.no_reload
@pytest.mark.log_allows(r"the handler of this location failed to load")
def test_clojure_handler_without_clojure(ng):
    assert ng.get("/clojure").status == 500
    assert len(ng.log_lines(NO_CLOJURE)) == 1
