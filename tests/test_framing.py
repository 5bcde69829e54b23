"""What a handler answers never breaks the framing of the connection, nor
sends what it did not mean: a File path holding a NUL, a length with no
body, a 1xx status and header values with control characters each answer
500 with an error-log line, or are framed as the bytes that follow.  Ring
(testapp.framing) and Java (testapp.Framing) handlers, in the content,
rewrite and access phases and in header filters."""

import urllib.parse

import pytest

from harness import Nginx, parse_raw

LOCATIONS = """
        location /clj/file { jvm_content testapp.framing/file; }
        location /clj/no-body { jvm_content testapp.framing/no-body; }
        location /clj/status { jvm_content testapp.framing/status; }
        location /clj/header { jvm_content testapp.framing/header; }
        location /clj/stream { jvm_content testapp.framing/stream; }
        location /clj/big { jvm_content testapp.framing/big; }
        location /java/ { jvm_content testapp.Framing; }
        location /clj-rewrite/file { jvm_rewrite testapp.framing/file; }
        location /clj-rewrite/no-body { jvm_rewrite testapp.framing/no-body; }
        location /clj-access/file { jvm_access testapp.framing/file; }
        location /java-rewrite/ { jvm_rewrite testapp.Framing; }
        location /java-access/ { jvm_access testapp.Framing; }
        location /clj-filter/ { jvm_header_filter testapp.framing/filter-headers;
                                return 200 "filtered\\n"; }
        location /java-filter/ { jvm_header_filter testapp.Framing$Filter;
                                 return 200 "filtered\\n"; }
"""

CONTENT = ["clj", "java"]
PHASES = ["clj-rewrite", "clj-access", "java-rewrite", "java-access"]
FILTERS = ["clj-filter", "java-filter"]

SECRET = b"the secret key\n"


@pytest.fixture(scope="module")
def ng(mode):
    with Nginx(LOCATIONS, mode=mode) as n:
        with open(n.path("html", "secret.key"), "wb") as f:
            f.write(SECRET)
        with open(n.path("html", "public.txt"), "wb") as f:
            f.write(b"public\n")
        yield n


def responses(data, methods):
    """The responses in `data` (read to EOF), one per request method in
    `methods`, each framed as a client frames it: none for HEAD, 204 and
    304, else by its Content-Length.  Returns (replies, bytes left)."""
    out = []
    for method in methods:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            break
        reply = parse_raw(head + sep)
        assert reply.header("Transfer-Encoding") is None, reply
        if method == "HEAD" or reply.status in (204, 304):
            n = 0
        elif reply.header("Content-Length") is not None:
            n = int(reply.header("Content-Length"))
        else:
            n = len(rest)           # framed by the end of the connection
        reply.body = rest[:n]
        data = rest[n:]
        out.append(reply)
    return out, data


def pipelined(ng, first, method="GET"):
    """`method first`, then GET of a short answer on the same connection:
    (the first reply, the second); both must be there, framed right."""
    other = "/java/header?v=next"
    data = ng.raw(("%s %s HTTP/1.1\r\nHost: x\r\n\r\n"
                   "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                   % (method, first, other)).encode(), timeout=30)
    replies, rest = responses(data, [method, "GET"])
    assert len(replies) == 2 and rest == b"", data
    second = replies[1]
    assert (second.status, second.header("X-Test"), second.body) == \
        (200, "next", b"ok"), data
    return replies[0]


def q(s):
    """Percent-encoded, a character a byte (the handlers decode so)."""
    return urllib.parse.quote(s, safe="", encoding="latin-1")


# --- a File whose path holds a NUL ------------------------------------------

NUL_LOG = r"whose path holds a NUL"


def file_path(ng, prefix, name):
    return "/%s/file?dir=%s&name=%s" % (prefix, q(ng.path("html")), name)


@pytest.mark.parametrize("prefix", CONTENT + PHASES)
def test_file_is_served(ng, prefix):
    r = ng.get(file_path(ng, prefix, "public"))
    assert (r.status, r.body) == (200, b"public\n")


@pytest.mark.log_allows(NUL_LOG)
@pytest.mark.parametrize("prefix", CONTENT + PHASES)
def test_file_path_with_nul_is_a_logged_500(ng, prefix):
    """`(io/file dir (str name ".txt"))` with name "secret.key\\0": a C
    string ends at the NUL, and nginx would send dir/secret.key."""
    since = ng.log_size()
    r = ng.get(file_path(ng, prefix, "secret.key%00"))
    assert r.status == 500
    assert SECRET not in r.body
    assert ng.wait_log(r"\[error\] .*the handler answered the file "
                       r'".*/html/secret\.key\\0\.txt", ' + NUL_LOG, since)


# --- a length with no body ----------------------------------------------------

@pytest.mark.parametrize("prefix", CONTENT + ["clj-rewrite", "java-rewrite"])
@pytest.mark.parametrize("code", [200, 201, 302, 404])
def test_length_without_body_is_not_sent(ng, prefix, code):
    """Content-Length: 100 and no bytes: the client would wait for them, and
    read the next response as this one's body."""
    first = pipelined(ng, "/%s/no-body?code=%d" % (prefix, code))
    assert first.status == code
    assert first.header("Content-Length") in ("0", None)
    assert first.body == b""


@pytest.mark.parametrize("prefix", CONTENT + ["clj-rewrite", "java-rewrite"])
def test_head_keeps_the_length(ng, prefix):
    first = pipelined(ng, "/%s/no-body?length=1234" % prefix, "HEAD")
    assert first.status == 200
    assert first.header("Content-Length") == "1234"


@pytest.mark.parametrize("prefix", CONTENT)
def test_304_keeps_the_length(ng, prefix):
    first = pipelined(ng, "/%s/no-body?code=304&length=1234" % prefix)
    assert first.status == 304
    assert first.header("Content-Length") == "1234"


@pytest.mark.parametrize("prefix", CONTENT)
def test_204_has_no_length(ng, prefix):
    first = pipelined(ng, "/%s/no-body?code=204&length=1234" % prefix)
    assert first.status == 204
    assert first.header("Content-Length") is None


@pytest.mark.parametrize("prefix", CONTENT)
def test_byte_body_gets_its_true_length(ng, prefix):
    """A byte array too large for the response buffer is sent in pieces; its
    length is still the array's, whatever the handler said."""
    first = pipelined(ng, "/%s/big?length=10" % prefix)
    assert first.header("Content-Length") == "100000"
    assert first.body == b"x" * 100000


@pytest.mark.parametrize("prefix", CONTENT)
def test_stream_longer_than_its_length_is_cut(ng, prefix):
    first = pipelined(ng, "/%s/stream?length=3" % prefix)
    assert (first.header("Content-Length"), first.body) == ("3", b"hel")


@pytest.mark.log_allows(r"the response body ended after 5 of the 10 bytes")
@pytest.mark.parametrize("prefix", CONTENT)
def test_stream_shorter_than_its_length_closes(ng, prefix):
    since = ng.log_size()
    data = ng.raw(b"GET /%s/stream?length=10 HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /java/header?v=next HTTP/1.1\r\nHost: x\r\n\r\n"
                  % prefix.encode(), timeout=30)
    reply = parse_raw(data)
    assert reply.header("Content-Length") == "10"
    assert reply.body == b"hello", "closed after the short body"
    assert ng.wait_log(r"\[error\] .*the response body ended after 5 of the "
                       r"10 bytes", since)


@pytest.mark.log_allows(r"a jvm_header_filter handler cannot set "
                        r"Content-Length")
@pytest.mark.parametrize("prefix", FILTERS)
def test_filter_cannot_set_the_length(ng, prefix):
    since = ng.log_size()
    r = ng.get("/%s/x?length=100" % prefix, timeout=30)
    assert r.status == 500
    assert ng.wait_log(r"\[error\] .*a jvm_header_filter handler cannot set "
                       r"Content-Length", since)


# --- 1xx ----------------------------------------------------------------------

STATUS_LOG = r"which is not a final status"


@pytest.mark.log_allows(STATUS_LOG)
@pytest.mark.parametrize("prefix", CONTENT + FILTERS)
@pytest.mark.parametrize("code", [100, 101, 103, 199])
def test_interim_status_is_a_logged_500(ng, prefix, code):
    """A 1xx is no answer: a client reads on for the final response, which
    would be the body after it."""
    since = ng.log_size()
    path = "/%s/status?code=%d" % (prefix, code)
    data = ng.raw(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                   % path).encode(), timeout=30)
    assert parse_raw(data).status == 500
    assert ng.wait_log(r"\[error\] .*status %d, %s" % (code, STATUS_LOG),
                       since)


# --- header values --------------------------------------------------------------

CONTROL_LOG = r'header field "X-Test": it holds the control character'


@pytest.mark.log_allows(CONTROL_LOG)
@pytest.mark.parametrize("prefix", CONTENT + FILTERS)
@pytest.mark.parametrize("char", ["\x0b", "\x7f", "\x01", "\x1f", "\x0c",
                                  "\x1b"])
def test_control_character_in_value_is_a_logged_500(ng, prefix, char):
    since = ng.log_size()
    path = "/%s/header?v=%s" % (prefix, q("a" + char + "b"))
    data = ng.raw(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                   % path).encode(), timeout=30)
    reply = parse_raw(data)
    assert reply.status == 500
    assert char.encode() not in data
    assert ng.wait_log(r"\[error\] .*%s 0x%02X" % (CONTROL_LOG, ord(char)),
                       since)


@pytest.mark.parametrize("prefix", CONTENT + FILTERS)
def test_htab_and_obs_text_are_sent(ng, prefix):
    """RFC 9110, 5.5: a field value may hold HTAB, SP and obs-text
    (0x80-0xFF) between visible characters."""
    for value in ["a\tb", "a b", "caf\xe9 \xff\x80"]:
        path = "/%s/header?v=%s" % (prefix, q(value))
        data = ng.raw(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close"
                       "\r\n\r\n" % path).encode(), timeout=30)
        reply = parse_raw(data)
        assert reply.status == 200, data
        assert b"\r\nX-Test: " + value.encode("latin-1") + b"\r\n" in data


@pytest.mark.log_allows(r'header field name "X:Y": it is no HTTP token')
@pytest.mark.parametrize("prefix", FILTERS)
def test_filter_name_must_be_a_token(ng, prefix):
    """"X:Y: v" would read to a client as the field X."""
    since = ng.log_size()
    r = ng.get("/%s/x?name=X%%3AY&v=v" % prefix, timeout=30)
    assert r.status == 500
    assert ng.wait_log(r'\[error\] .*header field name "X:Y": it is no '
                       r'HTTP token', since)
