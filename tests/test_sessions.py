"""Ring sessions over nginx.jvm.session's stores, through a real Ring app
with wrap-session (tests/apps/clj/testapp/sessions.clj): the shared
dictionary store (every worker of one nginx) and the Redis store (every
host sharing one redis-server, which the test starts on loopback). Two
hosts are two nginx instances of two workers each. The Redis locations run
on the pool in loop mode (a Redis call never runs on the event loop; one
location that tries is refused with a clear error)."""

import re
import socket
import time
import urllib.parse

import pytest

from harness import Nginx, read_edn, request, ring_classpath, wait_for
from redisserver import RedisServer, classpath, one_mode_only, require_redis

require_redis()

HTTP = """
    jvm_shared_dict sessions 256k;
"""

UNAVAILABLE = (r"\[error\].*nginx\.jvm\.session: Redis at 127\.0\.0\.1:\d+ "
               r"(is unavailable|did not answer): .*answering 503 to get /redis")


def locations(mode):
    # a Redis call blocks: never on the event loop
    off_loop = "jvm_mode pool; " if mode == "loop" else ""
    return """
        location /dict { jvm_content testapp.sessions/dict-app; }
        location /dict-short { jvm_content testapp.sessions/dict-short-app; }
        location /dict-forge { jvm_content testapp.sessions/forge-deep; }
        location /redis { %(o)s jvm_content testapp.sessions/redis-app; }
        location /redis-short { %(o)s jvm_content testapp.sessions/redis-short-app; }
        location /redis-on-loop { jvm_mode loop; jvm_content testapp.sessions/redis-app; }
""" % {"o": off_loop}


@pytest.fixture(scope="module")
def redis():
    with RedisServer(persist=True) as r:
        yield r


def host(mode, redis):
    return Nginx(locations(mode), http=HTTP, classpath=classpath(), workers=2,
                 mode=mode, main="env NGINX_JVM_TEST_REDIS=%s;\n" % redis.uri)


@pytest.fixture(scope="module")
def hosts(mode, redis):
    with host(mode, redis) as a, host(mode, redis) as b:
        yield a, b


class Client:
    """A browser's cookie jar, for one cookie name."""

    def __init__(self, name):
        self.name = name
        self.value = None

    def get(self, port, path, **params):
        headers = {}
        if self.value is not None:
            headers["Cookie"] = "%s=%s" % (self.name, self.value)
        r = request(port, "GET", path + "?" + urllib.parse.urlencode(params),
                    headers=headers, timeout=60)
        for c in r.header_all("Set-Cookie"):
            m = re.match(r"%s=([^;]*)" % self.name, c)
            if m:
                self.value = m.group(1)
        return r


def session(r):
    assert r.status == 200, r
    return read_edn(r.text)


@pytest.mark.parametrize("store", ["dict", "redis"])
def test_create_read_update_delete(hosts, store):
    a, _ = hosts
    c = Client("dsid" if store == "dict" else "rsid")
    assert not session(c.get(a.port, "/" + store))
    assert c.value is None, "reading makes no session"
    assert session(c.get(a.port, "/" + store, op="set", v="one")) == ":ok"
    key = c.value
    assert key and re.fullmatch(r"[A-Za-z0-9_-]{22}", key), key
    assert session(c.get(a.port, "/" + store))[":v"] == "one"
    c.get(a.port, "/" + store, op="set", v="two")
    assert c.value == key, "an update keeps the key"
    assert session(c.get(a.port, "/" + store))[":v"] == "two"
    assert session(c.get(a.port, "/" + store, op="delete")) == ":deleted"
    c.value = key                   # a client that kept the old cookie
    assert not session(c.get(a.port, "/" + store))


@pytest.mark.parametrize("store", ["dict", "redis"])
def test_every_worker_sees_the_session(hosts, store):
    a, _ = hosts
    c = Client("dsid" if store == "dict" else "rsid")
    pids = set()
    n = 0
    while len(pids) < 2 and n < 200:
        r = c.get(a.port, "/" + store, op="incr")
        n += 1
        assert session(r)[":n"] == n, "one count across workers"
        pids.add(r.header("X-Pid"))
    assert len(pids) == 2, "both workers served the session"


def test_two_hosts_share_the_redis_sessions(hosts, redis):
    a, b = hosts
    c = Client("rsid")
    for i in range(1, 7):
        r = c.get((a, b)[i % 2].port, "/redis", op="incr")
        assert session(r)[":n"] == i
    keys = redis.command("KEYS", "test:session:*")
    assert "test:session:" + c.value in keys, "namespaced keys"
    value = redis.command("GET", "test:session:" + c.value)
    assert read_edn(value) == {":n": 6}, "EDN in Redis: " + value
    # a session on one host's dictionary is not the other's
    d = Client("dsid")
    d.get(a.port, "/dict", op="set", v="a-only")
    assert session(d.get(a.port, "/dict"))[":v"] == "a-only"
    assert not session(d.get(b.port, "/dict"))


@pytest.mark.parametrize("store", ["dict", "redis"])
def test_an_unused_session_expires(hosts, redis, store):
    a, _ = hosts
    c = Client("dsid" if store == "dict" else "rsid")
    path = "/%s-short" % store
    c.get(a.port, path, op="set", v="soon")
    assert session(c.get(a.port, path))[":v"] == "soon"
    if store == "redis":
        ttl = redis.command("PTTL", "test:short:" + c.value)
        assert 0 < ttl <= 1500, ttl
    # each read gives it its time again: 1 s apart it stays
    for _ in range(2):
        time.sleep(1.0)
        assert session(c.get(a.port, path))[":v"] == "soon"
    # unread for longer than its TTL (a read would give it its time again)
    assert wait_for(lambda: not session(c.get(a.port, path)), 60,
                    interval=2.0), "the session expired"


@pytest.mark.parametrize("store", ["dict", "redis"])
@pytest.mark.parametrize("cookie", [
    "garbage%%$$\x7f",
    "A" * 7000,                                     # huge, nginx still takes it
    "6f1c2d3e-0a1b-4c5d-8e9f-001122334455",          # the memory store's UUID
    "uKWfWkN1hS0xLnRrCz4wBg%3D%3D--0f8a7c1b2d",     # a cookie-store value
    "A" * 22,                                       # our shape, no such key
    "../../etc/passwd",
])
def test_a_hostile_cookie_gets_a_fresh_session(hosts, store, cookie):
    a, _ = hosts
    c = Client("dsid" if store == "dict" else "rsid")
    c.value = cookie
    assert not session(c.get(a.port, "/" + store))
    assert session(c.get(a.port, "/" + store, op="set", v="x")) == ":ok"
    assert c.value != cookie and re.fullmatch(r"[A-Za-z0-9_-]{22}", c.value)
    assert session(c.get(a.port, "/" + store))[":v"] == "x"


def test_a_value_that_is_not_edn_in_redis_reads_as_no_session(hosts, redis):
    a, _ = hosts
    c = Client("rsid")
    c.get(a.port, "/redis", op="set", v="x")
    for forged in ("#=(java.lang.System/exit 0)", "(1 2", "#foo/bar {}",
                   "[1 2 3]", "\x00\xff"):
        redis.command("SET", "test:session:" + c.value, forged)
        assert not session(c.get(a.port, "/redis")), forged
    assert a.get("/dict").status == 200, "the worker lives"


def test_the_dictionary_bounds_the_sessions(hosts):
    a, _ = hosts
    clients = []
    for i in range(300):            # 300 sessions of 2 KB in a 256 KB zone
        c = Client("dsid")
        assert session(c.get(a.port, "/dict", op="big", n=2000)) == ":ok"
        clients.append(c)
    assert session(clients[-1].get(a.port, "/dict"))[":big"] == "x" * 2000
    gone = [c for c in clients if not session(c.get(a.port, "/dict"))]
    assert len(gone) > 100, "the least recently used went"
    assert clients[0] in gone


@pytest.mark.log_allows(r"\[error\].*over the store's :max-bytes 8192",
                        r"\[error\].*not EDN data",
                        r"\[error\].*nests deeper than the store's :max-depth 100",
                        r"\[error\].*(at |\.\.\. \d+ more|Caused by)")
def test_a_session_too_large_or_not_data_is_refused(hosts):
    a, _ = hosts
    c = Client("dsid")
    since = a.log_size()
    assert c.get(a.port, "/dict", op="big", n=9000).status == 500
    assert c.get(a.port, "/dict", op="object").status == 500
    # the map and 99 vectors: the deepest a store reads back; one more is refused
    assert session(c.get(a.port, "/dict", op="deep", n=99)) == ":ok"
    assert c.get(a.port, "/dict", op="deep", n=100).status == 500
    assert a.log_lines(r"over the store's :max-bytes", since)
    assert a.log_lines(r"not EDN data", since)
    assert a.log_lines(r"nests deeper than the store's :max-depth 100", since)
    s = session(c.get(a.port, "/dict"))[":deep"]
    for _ in range(99):
        s = s[0]
    assert s == "x", "the deepest session allowed reads back"


@pytest.mark.log_allows(r"\[error\].*would block the event loop",
                        r"\[error\].*(at |\.\.\. \d+ more|Caused by)")
def test_redis_on_the_event_loop_is_refused(hosts):
    a, _ = hosts
    since = a.log_size()
    c = Client("rsid")
    assert c.get(a.port, "/redis-on-loop", op="set", v="x").status == 500
    assert a.wait_log(r"a Redis call would block the event loop: call Redis "
                      r"from a jvm_mode pool or virtual location", since)


@pytest.mark.log_allows(UNAVAILABLE)
def test_redis_down_answers_503_then_comes_back(hosts, redis):
    a, b = hosts
    c = Client("rsid")
    c.get(a.port, "/redis", op="set", v="kept")
    since = a.log_size()
    redis.stop()
    t0 = time.monotonic()
    r = c.get(a.port, "/redis")
    took = time.monotonic() - t0
    assert r.status == 503 and r.header("Retry-After"), r
    assert took < 10, "bounded by the connect timeout"
    assert len(a.log_lines(UNAVAILABLE, since)) == 1, a.log_text(since)
    redis.start()                   # the same port, its append-only file
    r = c.get(a.port, "/redis")
    assert session(r)[":v"] == "kept", "the store works again, persisted"
    assert session(c.get(b.port, "/redis"))[":v"] == "kept"


@pytest.mark.log_allows(UNAVAILABLE)
def test_a_redis_that_hangs_answers_503_within_the_timeout(hosts, redis):
    a, _ = hosts
    c = Client("rsid")
    c.get(a.port, "/redis", op="set", v="x")
    since = a.log_size()
    redis.pause()                   # accepts, never answers
    try:
        t0 = time.monotonic()
        r = c.get(a.port, "/redis")
        took = time.monotonic() - t0
    finally:
        redis.resume()
    assert r.status == 503, r
    assert took < 10, "bounded by the command timeout (1 s)"
    assert len(a.log_lines(UNAVAILABLE, since)) == 1, a.log_text(since)
    assert wait_for(lambda: c.get(a.port, "/redis").status == 200, 60)
    assert session(c.get(a.port, "/redis"))[":v"] == "x"


def test_a_client_that_leaves_mid_request_costs_nothing(hosts):
    a, _ = hosts
    for path in ("/dict", "/redis"):
        s = socket.create_connection(("127.0.0.1", a.port))
        s.sendall(("GET %s?op=incr HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
        s.close()
    assert a.get("/dict").status == 200
    assert Client("rsid").get(a.port, "/redis").status == 200


@pytest.mark.log_allows(r"\[error\].*the Redis client \(Jedis\) is not on the class path",
                        r"\[error\].*(at |\.\.\. \d+ more|Caused by)")
def test_the_dictionary_store_needs_no_redis_client(mode, redis):
    """Jedis is optional: without build/redis-lib the shared-dict store
    works, and the Redis store says what is missing."""
    one_mode_only(mode)
    with Nginx(locations(mode), http=HTTP, classpath=ring_classpath(),
               mode=mode,
               main="env NGINX_JVM_TEST_REDIS=%s;\n" % redis.uri) as n:
        c = Client("dsid")
        assert session(c.get(n.port, "/dict", op="set", v="no-jedis")) == ":ok"
        assert session(c.get(n.port, "/dict"))[":v"] == "no-jedis"
        assert Client("rsid").get(n.port, "/redis").status == 500
        assert n.wait_log(r"the Redis client \(Jedis\) is not on the class "
                          r"path: add build/redis-lib/\*")


DEEP = 100000


@pytest.mark.parametrize("shape", ["vector", "map", "set", "tags", "meta",
                                   "discard", "mixed"])
def test_a_session_nested_too_deep_in_redis_reads_as_no_session(
        hosts, redis, shape):
    """Written into Redis by someone else (or by a bug): 100,000 levels
    would overflow the EDN reader's stack (a StackOverflowError, a 500).
    Past the store's :max-depth (100) it is no session, said at
    [warn] without the key; the worker lives and the cookie's owner can
    start again."""
    forged = {
        "vector": "[" * DEEP + "]" * DEEP,
        "map": "{:a " * DEEP + "1" + "}" * DEEP,
        "set": "{:a " + "#{" * DEEP + "}" * DEEP + "}",
        "tags": "{:a " + "#inst " * DEEP + '"2026-01-01"}',
        "meta": "{:a " + "^:m " * DEEP + "x}",
        "discard": "{:a " + "#_ " * DEEP + "1 " * (DEEP + 1) + "}",
        "mixed": "{:a " + "[#inst {:b (" * (DEEP // 4) + "}",
    }[shape]
    a, _ = hosts
    c = Client("rsid")
    c.get(a.port, "/redis", op="set", v="x")
    since = a.log_size()
    redis.command("SET", "test:session:" + c.value, forged)
    r = c.get(a.port, "/redis")
    assert r.status == 200 and not session(r), r
    assert a.wait_log(r"\[warn\].*nginx\.jvm\.session: a stored session "
                      r"nests deeper than :max-depth 100: read as no "
                      r"session", since)
    assert c.value not in a.log_text(since), "the key stays out of the log"
    assert session(c.get(a.port, "/redis", op="set", v="again")) == ":ok"
    assert session(c.get(a.port, "/redis"))[":v"] == "again"


def test_a_session_nested_too_deep_in_the_dictionary_reads_as_no_session(
        hosts):
    """The same for the shared-dict store, whose reads run on the event
    loop in loop mode."""
    a, _ = hosts
    c = Client("dsid")
    c.get(a.port, "/dict", op="set", v="x")
    since = a.log_size()
    assert a.get("/dict-forge?n=%d&key=%s" % (DEEP, c.value)).status == 200
    r = c.get(a.port, "/dict")
    assert r.status == 200 and not session(r), r
    assert a.wait_log(r"\[warn\].*a stored session nests deeper than "
                      r":max-depth 100: read as no session", since)
    assert a.get("/dict-forge?n=98&key=%s" % c.value).status == 200
    s = session(c.get(a.port, "/dict"))[":a"]     # the map and 98 vectors
    for _ in range(97):
        s = s[0]
    assert s == [], "within :max-depth it reads back"
    assert a.get("/dict").status == 200, "the worker lives"


def test_a_session_nested_within_the_limit_reads_back(hosts, redis):
    """99 levels (maps, a vector, a set) are within :max-depth 100."""
    a, _ = hosts
    c = Client("rsid")
    c.get(a.port, "/redis", op="set", v="x")
    redis.command("SET", "test:session:" + c.value,
                  "{:v " * 97 + '[#{"deep"}]' + "}" * 97)
    s = session(c.get(a.port, "/redis"))
    for _ in range(97):
        s = s[":v"]
    assert s == [frozenset({"deep"})], s
