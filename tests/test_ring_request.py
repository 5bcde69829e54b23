"""The Ring request map and request bodies, seen by a Clojure handler that
echoes its request as EDN."""

import hashlib
import http.client
import os

import pytest

from harness import Keyword, read_edn

LOCATIONS = """
        client_max_body_size 16m;
        location /echo { jvm_content testapp.ring/echo; }
        location /digest { jvm_content testapp.ring/body-digest; }
        location /prefix { jvm_content testapp.ring/body-prefix; }
        location /limited {
            client_max_body_size 1k;
            jvm_content testapp.ring/echo;
        }
        location /if {
            log_not_found off;
            if ($arg_jvm) {
                jvm_content testapp.ring/echo;
            }
        }
"""

RING_KEYS = sorted([
    "server-port", "server-name", "remote-addr", "uri", "query-string",
    "scheme", "request-method", "protocol", "headers", "content-type",
    "content-length", "character-encoding", "ssl-client-cert", "body",
    "request"])      # :nginx.jvm/request


def echo(ng, method="GET", path="/echo", headers=None, body=None):
    r = ng.request(method, path, headers=headers, body=body)
    assert r.status == 200, r
    assert r.header("Content-Type") == "application/edn"
    return read_edn(r.text)


def raw_echo(ng, request_bytes):
    r = ng.raw(request_bytes)
    head, _, body = r.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), r[:500]
    return read_edn(body.decode("utf-8"))


def test_plain_get(ng):
    req = echo(ng)
    assert req[":server-port"] == ng.port
    assert isinstance(req[":server-port"], int)
    assert req[":server-port-class"] in ("java.lang.Integer", "java.lang.Long")
    assert req[":server-name"] == "127.0.0.1"
    assert req[":remote-addr"] == "127.0.0.1"
    assert req[":uri"] == "/echo"
    assert req[":query-string"] is None
    assert req[":scheme"] == ":http" and isinstance(req[":scheme"], Keyword)
    assert req[":request-method"] == ":get"
    assert req[":protocol"] == "HTTP/1.1"
    assert req[":ssl-client-cert"] is None
    assert req[":content-type"] is None
    assert req[":content-length"] is None
    assert req[":character-encoding"] is None
    # GET has no body, but :body is still a stream (an empty one)
    assert req[":body-is-input-stream"] is True
    assert req[":body"] == ""


def test_request_is_a_real_map(ng):
    req = echo(ng)
    assert req[":map?"] is True
    assert req[":count"] == 15
    assert req[":keys"] == RING_KEYS
    assert req[":seq-count"] == 15
    assert req[":into-count"] == 15
    assert req[":contains-uri"] is True
    assert req[":get-default"] == ":default"
    assert req[":assoc"] == 1
    assert req[":assoc-count"] == 16
    assert req[":assoc-keeps-uri"] == "/echo"
    assert req[":dissoc-has-uri"] is False
    assert req[":dissoc-count"] == 14
    assert req[":destructured"] == ["/echo", ":get"]


@pytest.mark.parametrize("path", [
    "/echo/a%20b/%2F",
    "/echo/%7Euser/../x",          # nginx normalises $uri, not :uri
    "/echo//double//slash",
])
def test_uri_is_raw(ng, path):
    assert echo(ng, path=path)[":uri"] == path


@pytest.mark.parametrize("target, query", [
    ("/echo", None),
    ("/echo?", ""),
    ("/echo?a=1&b=%20x&c&d=%2F", "a=1&b=%20x&c&d=%2F"),
    ("/echo?x=1?y=2", "x=1?y=2"),
])
def test_query_string(ng, target, query):
    req = echo(ng, path=target)
    assert req[":query-string"] == query
    assert req[":uri"] == "/echo"


@pytest.mark.parametrize("method", [
    "GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "PURGE", "FOO"])
def test_request_method(ng, method):
    req = echo(ng, method=method)
    assert req[":request-method"] == ":" + method.lower()
    assert isinstance(req[":request-method"], Keyword)


def test_head_method(ng):
    r = ng.request("HEAD", "/echo")
    assert r.status == 200
    assert r.header("X-Method") == ":head"
    assert r.body == b""


def test_http_1_0_without_host(ng):
    req = raw_echo(ng, b"GET /echo?v=10 HTTP/1.0\r\n\r\n")
    assert req[":protocol"] == "HTTP/1.0"
    # no Host header: the server's name
    assert req[":server-name"] == "localhost"
    assert req[":query-string"] == "v=10"
    assert req[":headers"] == {}


def test_server_name_from_host_header(ng):
    req = echo(ng, headers={"Host": "Example.COM:8080"})
    assert req[":server-name"].lower() == "example.com"
    assert req[":server-port"] == ng.port      # the port we listen on
    assert req[":headers"]["host"] == "Example.COM:8080"


def test_headers(ng):
    req = raw_echo(ng, b"GET /echo HTTP/1.1\r\n"
                       b"Host: localhost\r\n"
                       b"X-MiXeD-Case: Value As Sent\r\n"
                       b"X-Rep: a\r\n"
                       b"X-Rep: b\r\n"
                       b"x-rep: c\r\n"
                       b"Cookie: a=1\r\n"
                       b"Cookie: b=2\r\n"
                       b"Connection: close\r\n\r\n")
    h = req[":headers"]
    assert all(k == k.lower() for k in h), h
    assert h["x-mixed-case"] == "Value As Sent"
    assert h["x-rep"] == "a,b,c"
    assert h["cookie"] == "a=1; b=2"
    assert h["host"] == "localhost"
    assert h["connection"] == "close"
    assert len(h) == 5


def test_small_body_and_content_headers(ng):
    req = echo(ng, "POST", headers={"Content-Type": "text/plain; charset=UTF-8"},
               body=b"hello body")
    assert req[":body"] == "hello body"
    assert req[":content-type"] == "text/plain; charset=UTF-8"
    assert req[":content-length"] == 10
    assert req[":character-encoding"] == "UTF-8"
    assert req[":headers"]["content-length"] == "10"


def test_binary_body(ng):
    data = bytes(range(256)) * 4
    req = echo(ng, "PUT", body=data)
    assert req[":body"].encode("latin-1") == data


def test_8mib_body(ng):
    data = os.urandom(8 * 1024 * 1024)
    r = ng.request("POST", "/digest", body=data)
    assert r.status == 200, r
    assert r.text == "%d %s" % (len(data), hashlib.sha256(data).hexdigest())


def test_chunked_body(ng):
    chunks = [b"hello ", b"chunked", b" world"]
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    req = raw_echo(ng, b"POST /echo HTTP/1.1\r\nHost: localhost\r\n"
                       b"Transfer-Encoding: chunked\r\n"
                       b"Connection: close\r\n\r\n" + body)
    assert req[":body"] == "hello chunked world"
    assert req[":headers"]["transfer-encoding"] == "chunked"
    assert req[":content-length"] is None


def test_large_chunked_body(ng):
    data = os.urandom(3 * 300 * 1024)
    pieces = [data[i:i + 300 * 1024] for i in range(0, len(data), 300 * 1024)]
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in pieces) + b"0\r\n\r\n"
    r = ng.raw(b"POST /digest HTTP/1.1\r\nHost: localhost\r\n"
               b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + body)
    assert r.split(b"\r\n\r\n", 1)[1] == b"%d %s" % (
        len(data), hashlib.sha256(data).hexdigest().encode())


@pytest.mark.log_allows(r"client intended to send too large body")
def test_body_over_client_max_body_size(ng):
    r = ng.request("POST", "/limited", body=b"x" * 2048)
    assert r.status == 413
    # the limit is per location: 1k passes
    assert ng.request("POST", "/limited", body=b"x" * 1000).status == 200


def test_handler_reads_body_partially(ng):
    data = os.urandom(1024 * 1024)
    conn = http.client.HTTPConnection("127.0.0.1", ng.port, timeout=30)
    try:
        r = ng.request("POST", "/prefix?n=10", body=data, conn=conn)
        assert r.status == 200
        assert r.body == data[:10]
        # the connection stays usable for the next request
        r = ng.request("GET", "/echo", conn=conn)
        assert r.status == 200
        assert read_edn(r.text)[":uri"] == "/echo"
    finally:
        conn.close()


def test_jvm_content_inside_if(ng):
    req = echo(ng, path="/if?jvm=1")
    assert req[":uri"] == "/if"
    assert req[":query-string"] == "jvm=1"
    # without the argument, the if block does not apply: no handler, 404
    assert ng.get("/if").status == 404
