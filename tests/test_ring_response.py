"""Ring responses: status, headers and every body kind, and HEAD."""

import hashlib
import os

import pytest

from harness import dechunk, parse_raw, Nginx, wait_for

LOCATIONS = """
        location /status { jvm_content testapp.ring/status; }
        location /empty { jvm_content testapp.ring/empty-body; }
        location /nil { jvm_content testapp.ring/nil-body; }
        location /headers { jvm_content testapp.ring/headers; }
        location /charset { jvm_content testapp.ring/charset; }
        location /bytes { jvm_content testapp.ring/bytes-body; }
        location /seq { jvm_content testapp.ring/seq-body; }
        location /stream { jvm_content testapp.ring/stream-body; }
        location /closes { jvm_content testapp.ring/stream-closes; }
        location /file { jvm_content testapp.ring/file-body; }
        location /streamable { jvm_content testapp.ring/streamable; }
        location /big-string { jvm_content testapp.ring/big-string; }
        location /big-bytes { jvm_content testapp.ring/big-bytes; }
"""

FILE_SIZE = 100000


@pytest.fixture(scope="module")
def ng(mode):
    with Nginx(LOCATIONS, mode=mode) as n:
        with open(n.path("html", "data.bin"), "wb") as f:
            f.write(os.urandom(FILE_SIZE))
        yield n


def pattern(n):
    """What testapp.PatternStream produces: byte i is i % 251."""
    block = bytes(range(251))
    return (block * (n // 251 + 1))[:n]


def letters(n):
    block = bytes(range(97, 97 + 26))
    return (block * (n // 26 + 1))[:n]


def head_raw(ng, path):
    """A HEAD request on a closed-after connection: (Reply, bytes after the
    header), read to EOF."""
    data = ng.raw(b"HEAD %s HTTP/1.1\r\nHost: localhost\r\n"
                  b"Connection: close\r\n\r\n" % path.encode())
    reply = parse_raw(data)
    return reply, reply.body


@pytest.mark.parametrize("code", [200, 201, 404, 418, 500, 503, 599])
def test_status_codes(ng, code):
    r = ng.get("/status?code=%d" % code)
    assert r.status == code
    # the handler's body, not an nginx error page
    assert r.body == b"status %d" % code


def test_status_204_has_no_body(ng):
    data = ng.raw(b"GET /status?code=204 HTTP/1.1\r\nHost: localhost\r\n"
                  b"Connection: close\r\n\r\n")
    r = parse_raw(data)
    assert r.status == 204
    assert r.body == b""
    assert r.header("Transfer-Encoding") is None


def test_redirect_location_stays_relative(ng):
    r = ng.get("/status?code=302")
    assert r.status == 302
    assert r.header_all("Location") == ["/elsewhere"]


def test_empty_string_body_is_200_with_content_length_0(ng):
    r = ng.get("/empty")
    assert r.status == 200
    assert r.header("Content-Length") == "0"
    assert r.body == b""


def test_nil_body(ng):
    data = ng.raw(b"GET /nil HTTP/1.1\r\nHost: localhost\r\n"
                  b"Connection: close\r\n\r\n")
    r = parse_raw(data)
    assert r.status == 200
    assert r.header("X-Nil") == "yes"
    if r.header("Transfer-Encoding") == "chunked":
        assert dechunk(r.body) == (b"", True)
    else:
        assert r.body == b""


def test_headers_string_and_vector(ng):
    r = ng.get("/headers")
    assert r.status == 200
    assert r.header_all("X-Single") == ["one"]
    assert r.header_all("X-Number") == ["42"]
    assert r.header_all("Set-Cookie") == ["a=1; Path=/", "b=2; Path=/"]
    assert r.header("Content-Type") == "text/plain"
    assert r.body == b"headers"


@pytest.mark.parametrize("cs, expected", [
    (None, b"\xc3\xa9"),            # UTF-8 by default
    ("UTF-8", b"\xc3\xa9"),
    ("ISO-8859-1", b"\xe9"),
    ("UTF-16BE", b"\x00\xe9"),
])
def test_string_body_charset(ng, cs, expected):
    r = ng.get("/charset" + ("?cs=" + cs if cs else ""))
    assert r.status == 200
    assert r.body == expected
    assert r.header("Content-Length") == str(len(expected))
    if cs:
        assert r.header("Content-Type") == "text/plain; charset=" + cs


def test_byte_array_body(ng):
    r = ng.get("/bytes")
    assert r.status == 200
    assert r.body == bytes(range(256))
    assert r.header("Content-Length") == "256"
    assert r.header("Content-Type") == "application/octet-stream"


def test_seq_body_is_chunked(ng):
    r = ng.get("/seq?n=1000")
    assert r.status == 200
    assert r.header("Transfer-Encoding") == "chunked"
    assert r.body == "".join("line %d\n" % i for i in range(1000)).encode()


def test_seq_body_http_1_0(ng):
    data = ng.raw(b"GET /seq?n=10 HTTP/1.0\r\n\r\n")
    r = parse_raw(data)
    assert r.status == 200
    assert r.header("Transfer-Encoding") is None
    assert r.body == "".join("line %d\n" % i for i in range(10)).encode()


def closes(ng):
    r = ng.get("/closes")
    assert r.status == 200
    return int(r.body)


def closed_since(ng, before):
    """Waits for one more close: off the event loop, a stream may be closed
    just after the response went out."""
    return wait_for(lambda: closes(ng) == before + 1, 60)


def test_input_stream_body_large(ng):
    before = closes(ng)
    n = 5 * 1000 * 1000
    r = ng.get("/stream?n=%d" % n)
    assert r.status == 200
    assert len(r.body) == n
    assert hashlib.sha256(r.body).digest() == \
        hashlib.sha256(pattern(n)).digest()
    # the runtime closes the stream when it is done
    assert closed_since(ng, before)


def test_input_stream_body_small(ng):
    r = ng.get("/stream?n=10")
    assert r.status == 200
    assert r.body == pattern(10)


def test_file_body(ng):
    path = ng.path("html", "data.bin")
    with open(path, "rb") as f:
        data = f.read()
    r = ng.get("/file?path=" + path)
    assert r.status == 200
    assert r.body == data
    assert r.header("Content-Length") == str(FILE_SIZE)
    assert r.header("Last-Modified")
    assert r.header("ETag")


def test_file_body_range(ng):
    path = ng.path("html", "data.bin")
    with open(path, "rb") as f:
        data = f.read()
    r = ng.get("/file?path=" + path, headers={"Range": "bytes=10-19"})
    assert r.status == 206
    assert r.body == data[10:20]
    assert r.header("Content-Range") == "bytes 10-19/%d" % FILE_SIZE
    r = ng.get("/file?path=" + path, headers={"Range": "bytes=-5"})
    assert r.status == 206
    assert r.body == data[-5:]


def test_file_body_conditional(ng):
    path = ng.path("html", "data.bin")
    first = ng.get("/file?path=" + path)
    r = ng.get("/file?path=" + path,
               headers={"If-Modified-Since": first.header("Last-Modified")})
    assert r.status == 304
    assert r.body == b""
    r = ng.get("/file?path=" + path,
               headers={"If-None-Match": first.header("ETag")})
    assert r.status == 304
    # an older date: the file is sent
    r = ng.get("/file?path=" + path,
               headers={"If-Modified-Since": "Thu, 01 Jan 1970 00:00:01 GMT"})
    assert r.status == 200
    assert len(r.body) == FILE_SIZE


def test_streamable_response_body(ng):
    r = ng.get("/streamable")
    assert r.status == 200
    assert r.body == b"hello ring 0\nhello ring 1\nhello ring 2\n"


@pytest.mark.parametrize("n", [65535, 65536, 65537, 70000, 1000000])
def test_large_string_body(ng, n):
    r = ng.get("/big-string?n=%d" % n)
    assert r.status == 200
    assert r.body == letters(n)


@pytest.mark.parametrize("n", [65536, 70000, 1000000])
def test_large_byte_array_body(ng, n):
    r = ng.get("/big-bytes?n=%d" % n)
    assert r.status == 200
    assert r.body == letters(n)


@pytest.mark.parametrize("path", [
    "/big-string?n=100000",
    "/charset",
    "/bytes",
    "/seq?n=1000",
    "/streamable",
])
def test_head_sends_no_body(ng, path):
    r, rest = head_raw(ng, path)
    assert r.status == 200
    assert rest == b""


def test_head_input_stream(ng):
    before = closes(ng)
    r, rest = head_raw(ng, "/stream?n=1000000")
    assert r.status == 200
    assert rest == b""
    # not sent, but still closed
    assert closed_since(ng, before)


def test_head_file(ng):
    path = ng.path("html", "data.bin")
    r, rest = head_raw(ng, "/file?path=" + path)
    assert r.status == 200
    assert rest == b""
    assert r.header("Content-Length") == str(FILE_SIZE)
    assert r.header("Last-Modified")
