"""A handler's own Content-Length never breaks the framing of the
connection: the next response on a keep-alive connection stays intact."""

import socket

import pytest

from harness import parse_raw, request

LOCATIONS = """
        location /string-too-short { jvm_content testapp.lengths/string-too-short; }
        location /stream-too-short { jvm_content testapp.lengths/stream-too-short; }
        location /stream-too-long { jvm_content testapp.lengths/stream-too-long; }
        location /stream-exact { jvm_content testapp.lengths/stream-exact; }
        location /head-length { jvm_content testapp.lengths/head-length; }
        location /no-body { jvm_content testapp.lengths/no-body; }
"""


def two_on_one_connection(n, path):
    """GET path then GET /stream-exact on one connection; both replies."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", n.port, timeout=10)
    try:
        first = request(n.port, "GET", path, conn=conn)
        second = request(n.port, "GET", "/stream-exact", conn=conn)
    finally:
        conn.close()
    return first, second


def test_inline_body_gets_its_true_length(ng):
    first, second = two_on_one_connection(ng, "/string-too-short")
    assert first.header("Content-Length") == "5"
    assert first.body == b"hello"
    assert (second.status, second.body) == (200, b"hello")


def test_streamed_body_longer_than_its_length_is_cut(ng):
    first, second = two_on_one_connection(ng, "/stream-too-short")
    assert first.header("Content-Length") == "3"
    assert first.body == b"hel"
    assert (second.status, second.body) == (200, b"hello")


@pytest.mark.log_allows(r"the response body ended after 5 of the 10 bytes")
def test_streamed_body_shorter_than_its_length_closes(ng):
    data = ng.raw(b"GET /stream-too-long HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /stream-exact HTTP/1.1\r\nHost: x\r\n\r\n")
    reply = parse_raw(data)
    assert reply.header("Content-Length") == "10"
    # the connection closed after the short body: no second response
    assert reply.body == b"hello"
    assert ng.wait_log(r"\[error\].*the response body ended after 5 of the "
                       r"10 bytes")


def test_head_keeps_a_stated_length_and_has_no_body(ng):
    data = ng.raw(b"HEAD /head-length HTTP/1.1\r\nHost: x\r\n"
                  b"Connection: close\r\n\r\n")
    reply = parse_raw(data)
    assert reply.status == 200
    assert reply.header("Content-Length") == "1234"
    assert reply.body == b""


def test_no_body_has_length_zero_but_not_for_head(ng):
    r = ng.get("/no-body")
    assert r.header("Content-Length") == "0"
    data = ng.raw(b"HEAD /no-body HTTP/1.1\r\nHost: x\r\n"
                  b"Connection: close\r\n\r\n")
    reply = parse_raw(data)
    assert reply.header("Content-Length") is None
    assert reply.body == b""
