"""Request header fields changed in jvm_rewrite and jvm_access handlers,
as a following proxy_pass sends them (Request#setHeader, addHeader,
clearHeader, setHeaders; nginx.jvm.request/set-header! and friends).

The upstream is a second server of the same nginx whose Java handler
(testapp.ReqHeaders$Echo) answers every field it got, one "name: value"
line each, in order.  The proxying locations also send X-Seen, made of
nginx's variables after the change ($host, $http_host, $cookie_a,
$http_cookie, $http_user_agent, $msie, $http_x_forwarded_for): the
fields nginx keeps apart from its list must follow the list.

The handlers apply the query's e=OP:NAME:VALUE, in order; a refused
change answers 400 with the exception.  Every case runs for Java and
Ring, in the rewrite and the access phase, in the mode under test (off
the loop in pool and virtual modes: the change hops to the event loop).
"""

import os
import shutil
import socket
import subprocess
import time
from urllib.parse import quote

import pytest

from harness import Nginx, free_port, parse_raw, wait_for

PROXY = (' proxy_set_header Host $host;'
         ' proxy_set_header X-Seen "host=$host|hh=$http_host|cookie_a='
         '$cookie_a|cookies=$http_cookie|ua=$http_user_agent|msie=$msie|'
         'xff=$http_x_forwarded_for";'
         ' proxy_pass http://127.0.0.1:@PORT2@/; ')

LOCATIONS = """
        listen 127.0.0.1:@H2@ http2;
        location /j/ { jvm_rewrite testapp.ReqHeaders$Edit; @PROXY@ }
        location /ja/ { jvm_access testapp.ReqHeaders$Edit; @PROXY@ }
        location /c/ { jvm_rewrite testapp.reqheaders/edit; @PROXY@ }
        location /ca/ { jvm_async on;
                        jvm_access testapp.reqheaders/edit-async; @PROXY@ }
        location /sub/ { auth_request /auth-sub; @PROXY@ }
        location = /auth-sub { internal; jvm_mode loop;
                               jvm_rewrite testapp.ReqHeaders$SubEdit; }
        location /redir/ { jvm_rewrite testapp.ReqHeaders$Edit;
                           rewrite ^/redir/(.*)$ /j/$1 last; }
        location /content-edit { jvm_content testapp.ReqHeaders$ContentEdit; }
        location /slow/ { @SLOW_ASYNC@
                          jvm_rewrite testapp.ReqHeaders$Slow; @PROXY@ }
"""

HTTP = """
    jvm_options -Dtestapp.hdrlog=@PREFIX@/logs/hdr.txt;
    server {
        listen 127.0.0.1:@PORT2@;
        server_name echo;
        large_client_header_buffers 4 64k;
        location / { jvm_content testapp.ReqHeaders$Echo; }
    }
"""

PREFIXES = ["/j/", "/ja/", "/c/", "/ca/"]


@pytest.fixture(scope="module")
def ng(mode):
    # off the loop: a pool or virtual thread; on it, a thread of the handler's
    locations = LOCATIONS.replace("@PROXY@", PROXY).replace(
        "@SLOW_ASYNC@", "jvm_async on;" if mode == "loop" else "")
    h2 = free_port()
    with Nginx(locations.replace("@H2@", str(h2)), http=HTTP, mode=mode) as n:
        n.h2_port = h2
        yield n


@pytest.fixture(params=PREFIXES)
def at(request):
    return request.param


def edits(*ops, batch=False):
    q = "&".join("e=" + quote(op, safe="") for op in ops)
    return q + ("&batch=1" if batch else "")


def raw_get(ng, path, fields=(), conn_close=True):
    """GET with exactly these fields (repeats kept, in order)."""
    text = "GET %s HTTP/1.1\r\nHost: localhost\r\n" % path
    text += "".join("%s: %s\r\n" % f for f in fields)
    text += "Connection: close\r\n\r\n"
    return parse_raw(ng.raw(text.encode("latin-1")))


class Echo:
    """What the upstream got: its fields in order, and X-Seen's variables."""

    def __init__(self, reply):
        assert reply.status == 200, reply
        self.fields = []
        for line in reply.body.decode("latin-1").split("\n"):
            if line:
                name, _, value = line.partition(": ")
                self.fields.append((name, value))
        seen = self.all("X-Seen")
        assert len(seen) == 1, self.fields
        self.seen = dict(kv.split("=", 1) for kv in seen[0].split("|"))

    def all(self, name):
        return [v for k, v in self.fields if k.lower() == name.lower()]

    def one(self, name):
        values = self.all(name)
        assert len(values) == 1, (name, self.fields)
        return values[0]

    def names(self):
        return [k.lower() for k, _ in self.fields]


def get(ng, at, *ops, fields=(), batch=False):
    return Echo(raw_get(ng, at + "x?" + edits(*ops, batch=batch), fields))


def refused(ng, at, *ops, batch=False):
    r = raw_get(ng, at + "x?" + edits(*ops, batch=batch))
    assert r.status == 400, r
    return r.body.decode("latin-1")


# -- set, replace, add, clear -----------------------------------------------

def test_untouched_request_passes_as_it_came(ng, at):
    e = get(ng, at, fields=[("X-A", "1"), ("X-Foo", "a"), ("X-Foo", "b")])
    assert e.all("X-Foo") == ["a", "b"]
    assert e.one("X-A") == "1"


def test_set_a_new_field(ng, at):
    e = get(ng, at, "set:X-Foo:bar baz", fields=[("X-A", "1")])
    assert e.one("X-Foo") == "bar baz"
    assert e.one("X-A") == "1"


def test_set_replaces_every_field_of_the_name_in_the_first_place(ng, at):
    e = get(ng, at, "set:x-foo:new",
            fields=[("X-A", "1"), ("X-Foo", "a"), ("X-B", "2"),
                    ("x-FOO", "b"), ("X-C", "3")])
    assert e.one("X-Foo") == "new"
    names = [n for n in e.names() if n in ("x-a", "x-foo", "x-b", "x-c")]
    assert names == ["x-a", "x-foo", "x-b", "x-c"]
    # the client's spelling of the name stays where the field was kept
    assert ("X-Foo", "new") in e.fields


def test_add_a_second_value(ng, at):
    e = get(ng, at, "add:X-Foo:second", "add:X-Foo:third",
            fields=[("X-Foo", "first")])
    assert e.all("X-Foo") == ["first", "second", "third"]


def test_clear_every_field_of_the_name(ng, at):
    e = get(ng, at, "clear:X-Gone", "clear:X-Never-There",
            fields=[("X-Gone", "1"), ("X-Keep", "k"), ("x-gone", "2")])
    assert e.all("X-Gone") == []
    assert e.one("X-Keep") == "k"


def test_clear_then_set_and_an_empty_value(ng, at):
    e = get(ng, at, "clear:X-Foo", "set:X-Foo:again", "set:X-Empty:",
            fields=[("X-Foo", "a")])
    assert e.one("X-Foo") == "again"
    assert e.one("X-Empty") == ""


def test_batch_of_changes(ng, at):
    e = get(ng, at, "set:X-One:1", "clear:X-Gone", "setlist:X-List:a,b,c",
            fields=[("X-Gone", "g"), ("X-List", "old")], batch=True)
    assert e.one("X-One") == "1"
    assert e.all("X-Gone") == []
    assert e.all("X-List") == ["a", "b", "c"]


def test_many_fields(ng, at):
    n = 300
    e = get(ng, at, "many:%d" % n, fields=[("X-Many-7", "old")])
    many = [(k, v) for k, v in e.fields if k.startswith("X-Many-")]
    # the client's X-Many-7 keeps its place, the new ones follow in order
    assert many == [("X-Many-7", "v7")] + [("X-Many-%d" % i, "v%d" % i)
                                           for i in range(1, n + 1) if i != 7]


def test_removals_across_many_parts_of_the_list(ng, at):
    # nginx's list grows in parts of 20 fields: removals compact it across
    # them, emptied parts are let go, and later fields go after the rest
    e = get(ng, at, "many:60", "rep:X-Rep:50", "clear:X-Rep",
            "set:X-Many-30:new", "clear:X-Many-5", "add:X-After:1",
            "rep:X-Tail:3")
    assert e.all("X-Rep") == []
    many = [(k, v) for k, v in e.fields if k.startswith("X-Many-")]
    assert many == [("X-Many-%d" % i, "new" if i == 30 else "v%d" % i)
                    for i in range(1, 61) if i != 5]
    names = e.names()
    assert names.index("x-after") > names.index("x-many-60")
    assert e.all("X-Tail") == ["1", "2", "3"]
    e = get(ng, at, "rep:X-Rep:45", "set:X-Rep:one", "add:X-Rep:two")
    assert e.all("X-Rep") == ["one", "two"]


def test_a_large_value(ng, at):
    size = 48 * 1024
    e = get(ng, at, "fill:X-Big:%d" % size)
    value = e.one("X-Big")
    assert len(value) == size
    assert value == ("0123456789abcdef" * (size // 16 + 1))[:size]


def test_changes_stay_with_their_request_on_a_keepalive_connection(ng, at):
    with socket.create_connection(("127.0.0.1", ng.port), timeout=10) as s:
        for i in range(4):
            op = "set:X-Req:%d" % i if i % 2 == 0 else "clear:X-Base"
            s.sendall(("GET %sx?%s HTTP/1.1\r\nHost: localhost\r\n"
                       "X-Base: b\r\n\r\n" % (at, edits(op))).encode())
            head = b""
            while b"\r\n\r\n" not in head:
                head += s.recv(1)
            length = int([l for l in head.split(b"\r\n")
                          if l.lower().startswith(b"content-length:")][0]
                         .split(b":")[1])
            body = b""
            while len(body) < length:
                body += s.recv(length - len(body))
            e = Echo(parse_raw(head + body))
            if i % 2 == 0:
                assert e.one("X-Req") == str(i)
                assert e.one("X-Base") == "b"
            else:
                assert e.all("X-Req") == []
                assert e.all("X-Base") == []


def test_changes_last_through_an_internal_redirect(ng):
    # /redir/ changes, then nginx redirects to /j/, whose rewrite handler
    # runs again (same query) and sees the fields as changed: one more add
    e = Echo(raw_get(ng, "/redir/x?" + edits("add:X-Twice:1",
                                             "set:X-Once:1")))
    assert e.all("X-Twice") == ["1", "1"]
    assert e.one("X-Once") == "1"


# -- the fields nginx keeps apart -------------------------------------------

def test_host(ng, at):
    e = get(ng, at, "set:Host:Example.COM.:8080")
    # $host: the name, lower case, without port or trailing dot
    assert e.seen["host"] == "example.com"
    assert e.seen["hh"] == "Example.COM.:8080"
    assert e.one("Host") == "example.com"


def test_host_cleared(ng, at):
    e = get(ng, at, "clear:Host")
    assert e.seen["hh"] == ""
    assert e.seen["host"] == "localhost"      # the server_name


def test_bad_host_refused(ng, at):
    for bad in ("a/b", "a..b", "", "x:8o"):
        body = refused(ng, at, "set:Host:" + bad)
        assert body.startswith("IllegalArgumentException: Host"), body
    body = refused(ng, at, "add:Host:other.example")
    assert "one Host" in body, body


def test_user_agent(ng, at):
    msie = "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)"
    e = get(ng, at, "set:User-Agent:" + msie, fields=[("User-Agent", "curl")])
    assert e.one("User-Agent") == msie
    assert e.seen["ua"] == msie
    assert e.seen["msie"] == "1"
    e = get(ng, at, "set:User-Agent:curl/8", fields=[("User-Agent", msie)])
    assert e.seen["ua"] == "curl/8"
    assert e.seen["msie"] == ""
    e = get(ng, at, "clear:User-Agent", fields=[("User-Agent", msie)])
    assert e.all("User-Agent") == []
    assert e.seen["ua"] == "" and e.seen["msie"] == ""


def test_cookie(ng, at):
    e = get(ng, at, "set:Cookie:a=9", fields=[("Cookie", "a=1; b=2"),
                                              ("Cookie", "c=3")])
    assert e.all("Cookie") == ["a=9"]
    assert e.seen["cookie_a"] == "9"
    assert e.seen["cookies"] == "a=9"
    e = get(ng, at, "add:Cookie:d=4", fields=[("Cookie", "a=1")])
    assert e.all("Cookie") == ["a=1", "d=4"]
    assert e.seen["cookies"] == "a=1; d=4"
    e = get(ng, at, "clear:Cookie", fields=[("Cookie", "a=1")])
    assert e.all("Cookie") == []
    assert e.seen["cookie_a"] == "" and e.seen["cookies"] == ""


def test_x_forwarded_for(ng, at):
    e = get(ng, at, "set:X-Forwarded-For:10.0.0.1",
            "add:X-Forwarded-For:10.0.0.2",
            fields=[("X-Forwarded-For", "192.0.2.1")])
    assert e.all("X-Forwarded-For") == ["10.0.0.1", "10.0.0.2"]
    assert e.seen["xff"].replace(" ", "") == "10.0.0.1,10.0.0.2"


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_http2_request(ng, at):
    # HTTP/2: Host comes from :authority, cookies from one field each
    url = "http://127.0.0.1:%d%sx?%s" % (
        ng.h2_port, at, edits("set:X-Foo:b", "set:Cookie:a=9",
                              "set:Host:h2.example", "add:X-Foo:c"))
    out = subprocess.run(["curl", "-sS", "--http2-prior-knowledge",
                          "-H", "X-Foo: a", "-H", "Cookie: a=1",
                          "-H", "Cookie: z=2", url],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=30)
    assert out.returncode == 0, out.stderr
    fields = [tuple(line.split(": ", 1))
              for line in out.stdout.decode("latin-1").split("\n") if line]
    e = Echo.__new__(Echo)
    e.fields = fields
    e.seen = dict(kv.split("=", 1) for kv in e.one("X-Seen").split("|"))
    assert e.all("X-Foo") == ["b", "c"]
    assert e.all("Cookie") == ["a=9"]
    assert e.seen["cookie_a"] == "9"
    assert e.seen["host"] == "h2.example"
    assert e.one("Host") == "h2.example"


# -- refused ------------------------------------------------------------------

@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nX-Injected: 1",
                                   "a\rb", "a\x00b", "a\x7fb", "a\x0bb"])
def test_control_characters_refused(ng, at, value):
    body = refused(ng, at, "set:X-Foo:" + value)
    assert body.startswith("IllegalArgumentException:"), body
    assert "control character" in body
    body = refused(ng, at, "add:X-Foo:" + value)
    assert "control character" in body
    body = refused(ng, at, "set:X-Ok:1", "set:X-Foo:" + value, batch=True)
    assert "control character" in body
    # nothing reached the upstream, and the next request is clean
    e = get(ng, at, "set:X-After:1")
    assert e.all("X-Injected") == [] and e.all("X-Foo") == []


@pytest.mark.parametrize("name", ["X Foo", "X-Foo ", "X(Y)", "X\r\nY",
                                  "", "X/Y", "X\u00e9"])
def test_bad_names_refused(ng, at, name):
    body = refused(ng, at, "set:%s:1" % name)
    assert body.startswith("IllegalArgumentException:"), body
    assert "\r" not in body and "\n" not in body
    body = refused(ng, at, "clear:%s" % name)
    assert body.startswith("IllegalArgumentException:"), body


@pytest.mark.parametrize("name", ["Content-Length", "transfer-encoding"])
def test_body_framing_refused(ng, at, name):
    for op in ("set:%s:5", "add:%s:5", "clear:%s"):
        body = refused(ng, at, op.replace("%s", name))
        assert "request body" in body, body


def test_content_handler_cannot_change_fields(ng):
    r = ng.get("/content-edit")
    assert r.status == 200
    assert r.text.startswith("IllegalStateException:"), r.text
    assert "jvm_rewrite or jvm_access" in r.text


def test_a_subrequest_changes_only_its_own_fields(ng):
    # auth_request's subrequest shares its parent's fields until it changes
    # them: its handler sets X-Foo, clears X-Keep and adds a cookie
    e = Echo(raw_get(ng, "/sub/x", [("X-Foo", "client"), ("X-Keep", "1"),
                                    ("Cookie", "a=1")]))
    assert e.one("X-Foo") == "client"
    assert e.one("X-Keep") == "1"
    assert e.all("Cookie") == ["a=1"]
    assert e.seen["cookie_a"] == "1"
    assert e.seen["cookies"] == "a=1"


# -- the client leaves ---------------------------------------------------------

def test_client_vanishes_during_an_off_loop_rewrite(ng):
    log = ng.path("logs", "hdr.txt")
    before = open(log).read().count("\n") if os.path.exists(log) else 0
    for i in range(3):
        s = socket.create_connection(("127.0.0.1", ng.port), timeout=10)
        s.sendall(b"GET /slow/%d?ms=800 HTTP/1.1\r\nHost: localhost\r\n\r\n"
                  % i)
        time.sleep(0.2)
        s.close()

    def lines():
        if not os.path.exists(log):
            return None
        got = open(log).read().splitlines()[before:]
        return got if len(got) >= 3 else None

    got = wait_for(lines, 60)
    assert got and len(got) == 3, got
    for line in got:
        # the request is over: the change is refused, nothing else happens
        assert "IllegalStateException" in line, line
    e = get(ng, "/j/", "set:X-Foo:alive")
    assert e.one("X-Foo") == "alive"


def test_slow_rewrite_changes_fields_when_the_client_stays(ng):
    r = raw_get(ng, "/slow/stay?ms=50")
    assert Echo(r).one("X-Late") == "1"
