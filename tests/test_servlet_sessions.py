"""HttpSessions shared by nginx's workers (issue 47, plan step 5;
runtime/servlet/README.md, Sessions): Tomcat beneath nginx with two
workers, its sessions in the shared dictionary `sessions` (the default when
nginx.conf declares one) and in Redis (-Dnginx.jvm.servlet.sessions=redis://),
through real HTTP, each request on a new connection, and each step that
must cross workers sent on a connection that another worker accepted
(--reuseport spreads them; the servlet says its pid, and the tests assert
the pids differ).

`make all` builds the engine into build/servlet (`make servlet`); without
it these tests skip. SERVLET_TARGET=DIR runs them on an engine built
elsewhere (a directory as build/servlet: the jar and tomcat-lib/)."""

import http.client
import os
import re
import socket
import ssl
import threading
import time
from pathlib import Path

import pytest

from harness import ROOT, Launcher, request, wait_for
from redisserver import REDIS_LIB, REDIS_SERVER, RedisServer

TARGET = Path(os.environ.get("SERVLET_TARGET") or ROOT / "build" / "servlet")
JAR = TARGET / "nginx-jvm-servlet.jar"
SERVLET = "-Dnginx.jvm.servlet.class=nginx.jvm.servlet.SessionServlet"
LOGGER = r"nginx\.jvm\.servlet\.sessions"
TRACE = r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: |\s+Suppressed: |stderr: )"
ID = re.compile(r"^[0-9A-F]{32}$")

pytestmark = pytest.mark.skipif(
    not JAR.exists(), reason="the servlet engine is not built: make servlet")


def launcher(*extra, workers=2, classpath=()):
    cp = ":".join([str(JAR), str(TARGET / "tomcat-lib") + "/*"] + list(classpath))
    return Launcher(["--handler", "nginx.jvm.servlet.TomcatHandler",
                     "--classpath", cp, "--async", "--reuseport",
                     "--jvm-option", SERVLET] + list(extra),
                    mode="pool", workers=workers)


@pytest.fixture(scope="module", params=["dict", "redis"])
def srv(request):
    """Two workers; the store: the dictionary `sessions` (chosen by its
    name alone), or a redis-server of the test's own."""
    if request.param == "dict":
        n = launcher("--shared-dict", "sessions:1m")
        n.store = "dict"
        with n:
            n.pids = sorted(n.worker_pids())
            yield n
        return
    if not os.access(REDIS_SERVER, os.X_OK) or not (REDIS_LIB / ".done").exists():
        pytest.skip("redis-server or build/redis-lib (make redis-deps) is missing")
    with RedisServer(persist=False) as redis:
        n = launcher("--jvm-option", "-Dnginx.jvm.servlet.sessions=" + redis.uri,
                     classpath=[str(REDIS_LIB) + "/*"])
        n.store = "redis"
        n.redis = redis
        with n:
            n.pids = sorted(n.worker_pids())
            yield n


def fields(body):
    return dict(l.split("=", 1) for l in body.decode().splitlines() if "=" in l)


def connection(srv, on=None, avoid=None, tries=400):
    """A new connection, accepted by worker `on` (or by any but `avoid`):
    new connections until one is, asked with GET /pid (no session)."""
    for _ in range(tries):
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        c.request("GET", "/pid")
        r = c.getresponse()
        pid = int(fields(r.read())["pid"])
        if (on is None or pid == on) and (avoid is None or pid != avoid):
            return c, pid
        c.close()
    raise AssertionError("no connection on the worker wanted after %d" % tries)


class Browser:
    """A client with its JSESSIONID cookie: every request on a new
    connection, on the worker asked for."""

    def __init__(self, srv, cookie=None):
        self.srv = srv
        self.cookie = cookie
        self.set_cookie = None

    def go(self, path, on=None, avoid=None, cookie=None):
        c, pid = connection(self.srv, on, avoid)
        cookie = cookie if cookie is not None else self.cookie
        headers = {"Cookie": "JSESSIONID=" + cookie} if cookie else {}
        try:
            r = request(self.srv.port, "GET", path, headers=headers, conn=c)
        finally:
            c.close()
        r.pid = pid
        r.fields = fields(r.body) if r.status == 200 else {}
        if r.fields:
            assert int(r.fields["pid"]) == pid
        self.set_cookie = r.header("Set-Cookie")
        if self.set_cookie:
            m = re.match(r"JSESSIONID=([^;]*)", self.set_cookie)
            self.cookie = m.group(1)
        return r


def test_an_attribute_set_on_one_worker_is_read_on_another(srv):
    b = Browser(srv)
    r = b.go("/set?name=colour&value=blue")
    assert r.status == 200 and r.fields["new"] == "true"
    assert ID.match(b.cookie)
    made_on = r.pid
    r = b.go("/get?name=colour", avoid=made_on)
    assert r.pid != made_on
    assert r.fields["value"] == "blue"
    assert r.fields["new"] == "false"
    assert r.fields["id"] == b.cookie
    assert not b.set_cookie, "the same session: no new cookie"
    # and back on the first worker: nothing stale kept there
    b.go("/set?name=colour&value=green", avoid=made_on)
    assert b.go("/get?name=colour", on=made_on).fields["value"] == "green"


def test_a_flash_attribute_survives_the_redirect(srv):
    """Spring's redirect-after-post: the attribute is set, the answer is a
    302, and the redirected GET (a new connection, another worker) reads
    and removes it."""
    b = Browser(srv)
    r = b.go("/flash?msg=saved")
    assert r.status == 302
    assert r.header("Location").endswith("/show")
    assert "jsessionid" not in r.header("Location").lower()
    r2 = b.go("/show", avoid=r.pid)
    assert r2.fields["flash"] == "saved"
    assert b.go("/show", avoid=r2.pid).fields["flash"] == "null"
    assert b.go("/show", on=r2.pid).fields["flash"] == "null"


def test_invalidate_is_seen_by_every_worker(srv):
    b = Browser(srv)
    r = b.go("/set?name=a&value=1")
    b.go("/get?name=a", avoid=r.pid)
    r = b.go("/invalidate", on=r.pid)
    assert r.fields["invalidated"] == "true"
    for w in srv.pids:
        assert b.go("/get?name=a", on=w).fields["value"] == "(no session)"


def test_the_max_inactive_interval_expires_on_every_worker(srv):
    b = Browser(srv)
    r = b.go("/set?name=a&value=1")
    # 4 s: a request that finds the worker busy (a loaded machine) must
    # still come within it; each request gives it its 4 s again, on
    # whichever worker
    r = b.go("/interval?s=4", avoid=r.pid)
    assert r.fields["interval"] == "4"
    for i in range(3):
        time.sleep(1)
        r = b.go("/get?name=a", avoid=r.pid)
        assert r.fields["value"] == "1", "request %d, %s" % (i, r.fields)
        assert r.fields["interval"] == "4"
    time.sleep(5)
    for w in srv.pids:
        assert b.go("/get?name=a", on=w).fields["value"] == "(no session)"


def test_the_session_timeout_is_the_stores_time_to_live(srv):
    """30 minutes (Tomcat's default session-timeout), kept in the store."""
    b = Browser(srv)
    b.go("/set?name=a&value=1")
    if srv.store == "redis":
        ttl = int(srv.redis.command("PTTL", "nginx-jvm:jsession:/:" + b.cookie))
        assert 1_790_000 < ttl <= 1_800_000
    r = b.go("/get?name=a")
    assert r.fields["interval"] == "1800"


def test_change_session_id_moves_the_session(srv):
    b = Browser(srv)
    r = b.go("/set?name=secret&value=42")
    old = b.cookie
    r = b.go("/rotate", avoid=r.pid)
    assert r.fields["old"] == old
    assert b.cookie and b.cookie != old and ID.match(b.cookie)
    assert "HttpOnly" in b.set_cookie
    r = b.go("/get?name=secret", avoid=r.pid)
    assert r.fields["value"] == "42" and r.fields["id"] == b.cookie
    for w in srv.pids:
        assert b.go("/get?name=secret", on=w, cookie=old).fields["value"] == "(no session)"


def test_a_login_that_changes_the_id_then_redirects(srv):
    """As Spring Security: a session before login (the fixation attempt's
    id), changeSessionId at login, the user in the new session."""
    b = Browser(srv)
    r = b.go("/set?name=cart&value=3")
    before = b.cookie
    r = b.go("/login?user=ann", avoid=r.pid)
    assert b.cookie != before
    r = b.go("/get?name=user", avoid=r.pid)
    assert r.fields["value"] == "ann"
    assert b.go("/get?name=cart", avoid=r.pid).fields["value"] == "3"
    assert b.go("/get?name=user", cookie=before).fields["value"] == "(no session)"


def test_invalidate_then_a_new_session_in_one_request(srv):
    """Spring Security's other fixation protection: the old session
    invalidated, a new one made in the same request with what is kept."""
    b = Browser(srv)
    r = b.go("/set?name=keep&value=k")
    b.go("/set?name=drop&value=d", avoid=r.pid)
    old = b.cookie
    r = b.go("/renew?name=keep")
    assert r.fields["old"] == old and b.cookie != old
    assert r.fields["names"] == "keep"
    r = b.go("/get?name=keep", avoid=r.pid)
    assert r.fields["value"] == "k" and r.fields["names"] == "keep"
    for w in srv.pids:
        assert b.go("/get?name=drop", on=w, cookie=old).fields["value"] == "(no session)"


def test_an_attribute_changed_in_place_is_saved(srv):
    b = Browser(srv)
    r = b.go("/append?item=a")
    r = b.go("/append?item=b", avoid=r.pid)
    assert r.fields["list"] == "a,b"
    r = b.go("/append?item=c", avoid=r.pid)
    assert r.fields["list"] == "a,b,c"


def at_once(srv, cookie, paths):
    """GETs each (worker pid, path) at the same time, each on a new
    connection that worker accepted; the replies."""
    conns = [connection(srv, on=pid)[0] for pid, _ in paths]
    replies = [None] * len(paths)

    def go(i):
        replies[i] = request(srv.port, "GET", paths[i][1],
                             headers={"Cookie": "JSESSIONID=" + cookie}, conn=conns[i])

    ts = [threading.Thread(target=go, args=(i,)) for i in range(len(paths))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    for c in conns:
        c.close()
    assert [r.status for r in replies] == [200] * len(paths)
    return replies


def test_overlapping_requests_of_one_session_keep_each_others_changes(srv):
    """A long request and a short one of one session, on two workers: the
    long one read the session before the short one saved it, and writes
    back only what it changed, merged into the store's entry: both
    attributes are kept. The same attribute set by both: the last write."""
    b = Browser(srv)
    r = b.go("/set?name=base&value=0")
    one, two = r.pid, [p for p in srv.pids if p != r.pid][0]
    for i, (slow, quick) in enumerate(((one, two), (two, one))):
        at_once(srv, b.cookie, [(slow, "/slow?name=long%d&value=1&ms=900" % i),
                                (quick, "/slow?name=short%d&value=2&ms=100" % i)])
        names = b.go("/get?name=base").fields["names"].split(",")
        assert {"base", "long%d" % i, "short%d" % i} <= set(names), names
    at_once(srv, b.cookie, [(one, "/slow?name=z&value=late&ms=900"),
                            (two, "/slow?name=z&value=early&ms=100")])
    assert b.go("/get?name=z").fields["value"] == "late"
    assert b.go("/get?name=base").fields["value"] == "0"


def test_simultaneous_saves_of_one_session_are_merged(srv):
    """Two requests that save one session at the same moment on two
    workers, each its own attribute: with the dictionary, under a lock of
    the session's, both are kept. (Redis: a write is checked afterwards and
    made again if another undid it, which narrows the window without
    closing it: README, Sessions.)"""
    if srv.store != "dict":
        pytest.skip("Redis has no lock for the merge (nginx.jvm.Redis has no SET NX)")
    b = Browser(srv)
    r = b.go("/set?name=base&value=0")
    one, two = r.pid, [p for p in srv.pids if p != r.pid][0]
    for i in range(5):
        at_once(srv, b.cookie, [(one, "/slow?name=x%d&value=1&ms=200" % i),
                                (two, "/slow?name=y%d&value=2&ms=200" % i)])
        names = b.go("/get?name=base").fields["names"].split(",")
        assert {"base", "x%d" % i, "y%d" % i} <= set(names), names


def test_an_async_servlets_change_is_saved(srv):
    b = Browser(srv)
    r = b.go("/set?name=a&value=1")
    r = b.go("/async?name=late&value=yes", avoid=r.pid)
    assert r.status == 200
    # saved when the async request ends: at most a moment after its answer
    assert wait_for(lambda: b.go("/get?name=late", avoid=r.pid).fields["value"] == "yes", 10)


@pytest.mark.log_allows(LOGGER + r".*is not Serializable", r"Servlet\.service\(\)", TRACE,
                        r"IllegalArgumentException")
def test_an_attribute_that_is_not_serializable_is_an_error(srv):
    b = Browser(srv)
    b.go("/set?name=a&value=1")
    since = srv.log_size()
    r = b.go("/notserializable")
    assert r.status == 500
    assert srv.wait_log(r"session attribute \"thing\": java\.lang\.Object is not Serializable", since)
    assert b.go("/get?name=a").fields["names"] == "a"


@pytest.mark.log_allows(LOGGER + r".*cannot be saved")
def test_a_nested_object_that_is_not_serializable_is_an_error(srv):
    """The List is Serializable, what it holds is not: found when the
    session is written, a 500 and an error naming the attribute and the
    class, and the session as it was."""
    b = Browser(srv)
    r = b.go("/set?name=a&value=1")
    since = srv.log_size()
    r = b.go("/nested", avoid=r.pid)
    assert r.status == 500
    assert not r.header("Set-Cookie")
    lines = srv.wait_log(r"\[error\].*session attribute \"nested\" \(java\.util\.ArrayList\) cannot be"
                         r" saved: java\.io\.NotSerializableException: java\.lang\.Object", since)
    assert lines and "answering 500 to GET /nested" in lines[0]
    r = b.go("/get?name=a", avoid=r.pid)
    assert r.fields["value"] == "1" and r.fields["names"] == "a"


@pytest.mark.log_allows(LOGGER + r".*over a quarter of the shared dictionary")
def test_a_session_too_large_for_the_dictionary_is_an_error(srv):
    """Over a quarter of the dictionary (here 256 KB of 1 MB), a session is
    refused before it is written, which would evict most others: a 500 and
    an error that says what to do; the session as it was, and the others."""
    if srv.store != "dict":
        pytest.skip("the shared dictionary's bound")
    other = Browser(srv)
    other.go("/set?name=o&value=kept")
    b = Browser(srv)
    b.go("/set?name=a&value=1")
    for kb in (2048, 300):
        since = srv.log_size()
        r = b.go("/big?kb=%d" % kb)
        assert r.status == 500, kb
        lines = srv.wait_log(r"\[error\].*a session of \d+ bytes is over a quarter of the shared"
                             r" dictionary \"sessions\" \(1048576 bytes\), whose other sessions would"
                             r" be evicted to make room: declare it larger", since)
        assert lines, srv.log_text(since)
        assert "answering 500 to GET /big" in lines[0]
        assert len(srv.log_lines(r"over a quarter", since)) == 1
    assert b.go("/get?name=a").fields["names"] == "a"
    assert other.go("/get?name=o").fields["value"] == "kept"
    # a new session that cannot be saved: no cookie for a session that is not there
    r = Browser(srv).go("/big?kb=300")
    assert r.status == 500 and not r.header("Set-Cookie")
    assert sorted(srv.worker_pids()) == srv.pids, "no worker died"


def test_a_full_dictionary_evicts_the_least_recently_used_sessions(srv):
    if srv.store != "dict":
        pytest.skip("the shared dictionary's bound")
    first = Browser(srv)
    first.go("/set?name=a&value=first")
    browsers = []
    for i in range(90):                     # 90 x 16 KB in 1 MB
        b = Browser(srv)
        assert b.go("/big?kb=16").status == 200
        browsers.append(b)
    assert first.go("/get?name=a").fields["value"] == "(no session)"
    assert browsers[-1].go("/get?name=big").fields["names"] == "big"
    assert sorted(srv.worker_pids()) == srv.pids


# --- the attacker's view ------------------------------------------------------

@pytest.mark.parametrize("cookie", [
    "0123456789ABCDEF0123456789ABCDEF",        # the right shape, no such session
    "A" * 4000,                                 # overlong
    "../../etc/passwd",
    "lock:jsession:/:0123456789ABCDEF0123456789ABCDEF",
    "0123456789abcdef0123456789abcdef",        # lower case
    "\"0123456789ABCDEF0123456789ABCDEF\"",
])
def test_a_forged_cookie_is_no_session_and_is_not_adopted(srv, cookie):
    b = Browser(srv, cookie)
    r = b.go("/get?name=a")
    assert r.status == 200 and r.fields["value"] == "(no session)"
    r = b.go("/set?name=a&value=mine")
    assert r.status == 200
    assert ID.match(b.cookie) and b.cookie != cookie.strip('"'), "a new id, never the client's"


def test_another_sessions_data_never_shows(srv):
    alice, bob = Browser(srv), Browser(srv)
    alice.go("/set?name=secret&value=alice-only")
    bob.go("/set?name=other&value=bob")
    assert alice.cookie != bob.cookie
    for w in srv.pids:
        r = bob.go("/get?name=secret", on=w)
        assert r.fields["value"] == "null" and r.fields["names"] == "other"
    # an id that is alice's but for one character
    near = alice.cookie[:-1] + ("0" if alice.cookie[-1] != "0" else "1")
    assert Browser(srv, near).go("/get?name=secret").fields["value"] == "(no session)"
    # alice's id with more after it
    assert Browser(srv, alice.cookie + "0").go("/get?name=secret").fields["value"] == "(no session)"


def test_an_overlong_cookie_header_is_nginxs_to_refuse(srv):
    r = request(srv.port, "GET", "/get?name=a",
                headers={"Cookie": "JSESSIONID=" + "A" * 20000})
    assert r.status in (400, 494)
    assert sorted(srv.worker_pids()) == srv.pids


def test_several_session_cookies(srv):
    """Tomcat takes the first JSESSIONID that names a session."""
    b = Browser(srv)
    b.go("/set?name=a&value=1")
    r = request(srv.port, "GET", "/get?name=a", headers={
        "Cookie": "JSESSIONID=0123456789ABCDEF0123456789ABCDEF; JSESSIONID=" + b.cookie})
    assert fields(r.body)["value"] == "1"


def test_a_client_that_leaves_mid_request(srv):
    """The servlet goes on and its session changes are kept; the worker
    serves on."""
    b = Browser(srv)
    r = b.go("/set?name=a&value=1")
    c, pid = connection(srv, avoid=r.pid)
    c.sock.sendall(("GET /slow?name=b&value=2&ms=500 HTTP/1.1\r\nHost: x\r\n"
                    "Cookie: JSESSIONID=%s\r\n\r\n" % b.cookie).encode())
    time.sleep(0.1)
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    assert wait_for(lambda: b.go("/get?name=b", on=pid).fields["value"] == "2", 10)
    # the same, for a new session whose client never got the cookie
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.sendall(b"GET /slow?name=b&value=2&ms=300 HTTP/1.1\r\nHost: x\r\n\r\n")
    s.close()
    time.sleep(0.6)
    assert b.go("/get?name=a").fields["value"] == "1"
    assert sorted(srv.worker_pids()) == srv.pids


def test_an_answer_whole_before_the_servlet_returns(srv):
    """A servlet that writes the whole Content-Length it set (as Spring's
    message converters do) has ended its response (Tomcat closes it): its
    client has the answer while the servlet still runs, and may ask again
    at once, on another connection. The session, new or not, is written
    before that answer leaves, not when the servlet returns (here a second
    later)."""
    b = Browser(srv)
    r = b.go("/whole?name=a&value=1&ms=1500")
    assert r.status == 200 and r.header("Content-Length") == str(len(r.body))
    assert ID.match(b.cookie) and r.fields["id"] == b.cookie
    for on in (dict(on=r.pid), dict(avoid=r.pid)):
        got = b.go("/get?name=a", **on)
        assert got.fields.get("value") == "1", (on, got.fields)
        assert not b.set_cookie, "the same session: no new cookie"
    # a session the client already had: the change is there at once too
    r = b.go("/whole?name=a&value=2&ms=1500")
    assert b.go("/get?name=a", avoid=r.pid).fields["value"] == "2"
    # once the servlet returns (nothing more to write), it stays so
    time.sleep(1.6)
    assert b.go("/get?name=a").fields["value"] == "2"


def test_a_client_that_leaves_an_async_request(srv):
    """The request is over when the client leaves; the servlet's thread
    changes the session afterwards: written then, at once."""
    b = Browser(srv)
    r = b.go("/set?name=a&value=1")
    c, pid = connection(srv, avoid=r.pid)
    c.sock.sendall(("GET /async?name=after&value=kept&ms=500 HTTP/1.1\r\nHost: x\r\n"
                    "Cookie: JSESSIONID=%s\r\n\r\n" % b.cookie).encode())
    time.sleep(0.1)
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    assert wait_for(lambda: b.go("/get?name=after", avoid=pid).fields["value"] == "kept", 10)
    assert b.go("/get?name=a").fields["value"] == "1"


@pytest.mark.parametrize("junk", ["not a session", "S\x01\x00\x20" + "A" * 32])
def test_an_entry_that_does_not_read_is_no_session(srv, junk):
    """An entry changed in Redis by someone else (or written by another
    version): no session, a [warn] line, and a new session for the client."""
    if srv.store != "redis":
        pytest.skip("the test writes Redis's entry itself")
    b = Browser(srv)
    b.go("/set?name=a&value=1")
    old = b.cookie
    srv.redis.command("SET", "nginx-jvm:jsession:/:" + old, junk)
    since = srv.log_size()
    assert b.go("/get?name=a").fields["value"] == "(no session)"
    assert srv.wait_log(r"\[warn\].*" + LOGGER + r": session %s\.\.\. in Redis .*"
                        r"read as no session" % old[:6], since)
    b.go("/set?name=a&value=2")
    assert b.cookie != old


UNAVAILABLE = (LOGGER + r": Redis at 127\.0\.0\.1:\d+ (is unavailable|did not answer)"
               r".*answering 503 to GET /")


@pytest.mark.log_allows(UNAVAILABLE)
def test_redis_down_answers_503_then_comes_back(srv):
    """Redis down: a request that names a session, or makes one, is a 503
    with Retry-After and one line in the log (not a new, empty session);
    Redis back, the sessions work again."""
    if srv.store != "redis":
        pytest.skip("Redis's")
    b = Browser(srv)
    b.go("/set?name=a&value=1")
    since = srv.log_size()
    srv.redis.stop()
    try:
        t0 = time.monotonic()
        r = b.go("/get?name=a")
        assert time.monotonic() - t0 < 10, "bounded by the connect timeout"
        assert r.status == 503 and r.header("Retry-After") == "5", r
        assert not r.header("Set-Cookie")
        assert len(srv.wait_log(UNAVAILABLE, since)) == 1, srv.log_text(since)
        r = Browser(srv).go("/set?name=a&value=1")
        assert r.status == 503 and not r.header("Set-Cookie"), r
    finally:
        srv.redis.start()
    assert wait_for(lambda: b.go("/set?name=a&value=2").status == 200, 30)
    assert b.go("/get?name=a").fields["value"] == "2"


def test_the_cookie(srv):
    b = Browser(srv)
    b.go("/set?name=a&value=1")
    c = b.set_cookie
    assert re.match(r"JSESSIONID=[0-9A-F]{32}; Path=/; HttpOnly$", c), c
    r = b.go("/encode")
    assert r.fields["url"] == "/x", "never ;jsessionid= in a URL"


def test_no_worker_died(srv):
    assert sorted(srv.worker_pids()) == srv.pids


# --- no store: per worker, said once; and the cookie behind TLS ------------------

@pytest.fixture(scope="module")
def tls():
    n = launcher("--tls-self-signed", workers=1)
    with n:
        yield n


def test_behind_tls_the_cookie_is_secure_and_sessions_per_worker_are_said(tls):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    since = tls.log_size()
    c = http.client.HTTPSConnection("127.0.0.1", tls.port, context=ctx, timeout=30)
    try:
        c.request("GET", "/set?name=a&value=1")
        r = c.getresponse()
        r.read()
        cookie = r.getheader("Set-Cookie")
        assert re.match(r"JSESSIONID=[0-9A-F]{32}; Path=/; Secure; HttpOnly$", cookie), cookie
        c.request("GET", "/set?name=a&value=2")
        c.getresponse().read()
    finally:
        c.close()
    lines = tls.wait_log(r"\[warn\].*sessions are kept in this worker's memory", since)
    assert lines and len(tls.log_lines(r"kept in this worker's memory")) == 1
