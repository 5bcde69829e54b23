"""Shared dictionaries as OpenResty's: lists (lpush, rpush, lpop, rpop,
llen), ttl and expire, getStale, flushExpired.  Each operation and its
types, atomicity of pushes and pops across workers and threads, short
expiries, out of memory and eviction in a small zone, bad input; the
Clojure wrapper."""

import threading
import time
import urllib.parse

import pytest

from harness import (Keyword, Nginx, clear_dicts, dict_config, dict_ok,
                     dict_op, read_edn, wait_for)

LOCATIONS, HTTP = dict_config(small="64k")

# Java handlers, two workers (what one writes the other reads)
NGINX_ARGS = {"classpath": "java", "workers": 2}


@pytest.fixture(autouse=True)
def _clear(request):
    clear_dicts(request)


def test_push_pop_both_ends_and_each_type(ng):
    assert dict_ok(ng, op="llen", key="l") == "0"
    assert dict_ok(ng, op="lpop", key="l") == "nil"
    assert dict_ok(ng, op="rpop", key="l") == "nil"
    assert dict_ok(ng, op="rpush", key="l", value="b") == "1"
    assert dict_ok(ng, op="lpush", key="l", value="a") == "2"
    assert dict_ok(ng, op="rpush", key="l", value="42", type="long") == "3"
    assert dict_ok(ng, op="rpush", key="l", bytes=5) == "4"
    assert dict_ok(ng, op="lpush", key="l", value="héllo") == "5"
    assert dict_ok(ng, op="rpush", key="l", value="") == "6"
    # a value larger than the natives' stack buffer
    assert dict_ok(ng, op="rpush", key="l", bytes=100000) == "7"
    assert dict_ok(ng, op="llen", key="l") == "7"
    assert dict_ok(ng, op="size") == "1", "a list is one entry"
    assert dict_ok(ng, op="keys") == "l"
    assert dict_ok(ng, op="lpop", key="l") == "S:héllo"
    assert dict_ok(ng, op="lpop", key="l") == "S:a"
    assert dict_ok(ng, op="rpop", key="l") == "B:100000:0001020304050607"
    assert dict_ok(ng, op="rpop", key="l") == "S:"
    assert dict_ok(ng, op="rpop", key="l") == "B:5:0001020304"
    assert dict_ok(ng, op="rpop", key="l") == "N:42"
    assert dict_ok(ng, op="llen", key="l") == "1"
    assert dict_ok(ng, op="rpop", key="l") == "S:b"
    # the last value taken: no entry left
    assert dict_ok(ng, op="llen", key="l") == "0"
    assert dict_ok(ng, op="size") == "0"
    assert dict_ok(ng, op="ttl", key="l") == "-1"
    assert dict_ok(ng, op="lpop", key="l") == "nil"


def test_a_list_is_an_entry_like_any_other(ng):
    for v in "abc":
        dict_ok(ng, op="rpush", key="l", value=v)
    assert dict_ok(ng, op="delete", key="l") == "true"
    assert dict_ok(ng, op="llen", key="l") == "0"
    assert dict_ok(ng, op="delete", key="l") == "false"
    # set over a list replaces it; a list over an expired value is new
    dict_ok(ng, op="rpush", key="l", value="a")
    assert dict_ok(ng, op="put", key="l", value="1") == "true"
    assert dict_ok(ng, op="get", key="l") == "S:1"
    assert dict_ok(ng, op="put", key="t", value="v", ttl=100) == "true"
    time.sleep(0.3)
    assert dict_ok(ng, op="lpush", key="t", value="x") == "1"
    assert dict_ok(ng, op="ttl", key="t") == "0", "a new list never expires"
    assert dict_ok(ng, op="add", key="t", value="v") == "false"


@pytest.mark.parametrize("params, message", [
    (dict(op="lpush", value="x"), 'the value of "s" in shared dictionary '
     '"d" is not a list'),
    (dict(op="rpush", value="x"), "is not a list"),
    (dict(op="lpop"), "is not a list"),
    (dict(op="rpop"), "is not a list"),
    (dict(op="llen"), "is not a list"),
])
def test_list_operations_on_a_value_are_refused(ng, params, message):
    dict_ok(ng, op="put", key="s", value="before")
    r = dict_op(ng, key="s", **params)
    assert r.status == 400 and message in r.text, r.text
    assert dict_ok(ng, op="get", key="s") == "S:before"


@pytest.mark.parametrize("params, message", [
    (dict(op="get"), 'the value of "l" in shared dictionary "d" is a list'),
    (dict(op="getstring"), "is a list"),
    (dict(op="getstale"), "is a list"),
    (dict(op="incr"), "is not a number"),
])
def test_value_operations_on_a_list_are_refused(ng, params, message):
    dict_ok(ng, op="rpush", key="l", value="x")
    r = dict_op(ng, key="l", **params)
    assert r.status == 400 and message in r.text, r.text
    assert dict_ok(ng, op="llen", key="l") == "1"
    assert dict_ok(ng, op="lpop", key="l") == "S:x"


@pytest.mark.parametrize("params, message", [
    (dict(op="lpush", key="", value="v"), "the key is empty"),
    (dict(op="rpush", keylen=70000, value="v"),
     "a key of 70000 bytes is too large"),
    (dict(op="rpush", key="k", bytes=2 * 1024 * 1024), "can never fit"),
    (dict(op="lpush", key="k", type="double"), "not java.lang.Double"),
    (dict(op="lpush", key="k"), "null is not a value"),
    (dict(op="expire", key="k", ttl=-1), "time to live is negative"),
    (dict(op="flushexpired", limit=-1), "max must not be negative"),
    (dict(op="lpop", key=""), "the key is empty"),
    (dict(op="ttl", keylen=70000), "too large"),
])
def test_bad_input_is_an_exception(ng, params, message):
    dict_ok(ng, op="rpush", key="k", value="before")
    r = dict_op(ng, **params)
    assert r.status == 400 and message in r.text, r.text
    assert dict_ok(ng, op="llen", key="k") == "1"
    assert dict_ok(ng, op="lpop", key="k") == "S:before"


def test_ttl_and_expire(ng):
    assert dict_ok(ng, op="ttl", key="none") == "-1"
    assert dict_ok(ng, op="expire", key="none", ttl=1000) == "false"
    assert dict_ok(ng, op="put", key="forever", value="v") == "true"
    assert dict_ok(ng, op="ttl", key="forever") == "0"
    assert dict_ok(ng, op="put", key="t", value="v", ttl=5000) == "true"
    assert 4000 < int(dict_ok(ng, op="ttl", key="t")) <= 5000
    # a new time to live; 0: never again
    assert dict_ok(ng, op="expire", key="t", ttl=60000) == "true"
    assert 59000 < int(dict_ok(ng, op="ttl", key="t")) <= 60000
    assert dict_ok(ng, op="expire", key="t", ttl=0) == "true"
    assert dict_ok(ng, op="ttl", key="t") == "0"
    # a list expires as a whole
    for v in "abc":
        dict_ok(ng, op="rpush", key="l", value=v)
    assert dict_ok(ng, op="expire", key="l", ttl=300) == "true"
    assert 0 < int(dict_ok(ng, op="ttl", key="l")) <= 300
    assert dict_ok(ng, op="llen", key="l") == "3"
    assert dict_ok(ng, op="expire", key="forever", ttl=300) == "true"
    time.sleep(0.5)
    assert dict_ok(ng, op="ttl", key="l") == "-1"
    assert dict_ok(ng, op="llen", key="l") == "0"
    assert dict_ok(ng, op="lpop", key="l") == "nil"
    assert dict_ok(ng, op="get", key="forever") == "nil"
    assert dict_ok(ng, op="expire", key="forever", ttl=1000) == "false"
    assert dict_ok(ng, op="get", key="t") == "S:v"


def test_get_stale_after_expiry(ng):
    assert dict_ok(ng, op="getstale", key="none") == "nil"
    assert dict_ok(ng, op="put", key="s", value="old", ttl=200) == "true"
    assert dict_ok(ng, op="getstale", key="s") == "fresh S:old"
    dict_ok(ng, op="incr", key="n", ttl=200)
    time.sleep(0.4)
    assert dict_ok(ng, op="get", key="s") == "nil"
    assert dict_ok(ng, op="ttl", key="s") == "-1"
    # reads leave an expired entry in place: still stale, in every worker
    for _ in range(10):
        assert dict_ok(ng, op="getstale", key="s") == "stale S:old"
    assert dict_ok(ng, op="getstale", key="n") == "stale N:1"
    assert dict_ok(ng, op="keys") == "", "keys are live ones"
    # a write replaces it
    assert dict_ok(ng, op="add", key="s", value="new") == "true"
    assert dict_ok(ng, op="getstale", key="s") == "fresh S:new"
    # flushExpired frees it
    assert dict_ok(ng, op="flushexpired") == "1"
    assert dict_ok(ng, op="getstale", key="n") == "nil"


def test_flush_expired_counts(ng):
    # the entries that expire must all be in before the first does: their
    # time from what three requests take on this machine, 1.5 s at least
    start = time.monotonic()
    for i in range(3):
        assert dict_ok(ng, op="put", key="k%d" % i, value="v") == "true"
    ttl = max(1500, int((time.monotonic() - start) / 3 * 12 * 3 * 1000))
    start = time.monotonic()
    for i in range(5):
        assert dict_ok(ng, op="put", key="e%d" % i, value="v", ttl=ttl) == "true"
    for i in range(2):
        dict_ok(ng, op="rpush", key="l%d" % i, value="a")
        dict_ok(ng, op="rpush", key="l%d" % i, value="b")
        assert dict_ok(ng, op="expire", key="l%d" % i, ttl=ttl) == "true"
    assert dict_ok(ng, op="flushexpired") == "0", "nothing expired yet"
    assert time.monotonic() - start < ttl / 1000 - 0.1, "too slow to tell"
    time.sleep(ttl / 1000 + 0.2)
    assert dict_ok(ng, op="flushexpired", limit=3) == "3"
    assert dict_ok(ng, op="flushexpired", limit=0) == "4"
    assert dict_ok(ng, op="flushexpired") == "0"
    assert dict_ok(ng, op="size") == "3"
    assert dict_ok(ng, op="evictions") == "0", "flushed is not evicted"


def test_push_and_pop_are_atomic_across_workers_and_threads(ng):
    """24 requests at once over both workers, each pushing 3,000 distinct
    values at the head of one list on its handler's thread and 2 more,
    each push followed by a pop at the tail: every value comes out once."""
    requests, per = 24, 3000
    results = []

    def run(i):
        r = dict_op(ng, op="pushpop", key="q", prefix="r%d" % i, n=per,
               threads=2)
        results.append((r.status, r.text, r.header("X-Pid")))
    threads = [threading.Thread(target=run, args=(i,))
               for i in range(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert len(results) == requests
    assert all(s == 200 for s, _, _ in results), \
        [t for s, t, _ in results if s != 200][:3]
    assert len({pid for _, _, pid in results}) == 2, "both workers took part"
    popped = [v for _, text, _ in results for v in text.split("\n") if v]
    left = int(dict_ok(ng, op="llen", key="q"))
    for _ in range(left):
        v = dict_ok(ng, op="rpop", key="q")
        assert v.startswith("S:"), v
        popped.append(v[2:])
    assert dict_ok(ng, op="llen", key="q") == "0"
    pushed = {"r%d-%s-%d" % (i, t, k)
              for i in range(requests)
              for t, n in [("main", per - 2 * (per // 3)), ("0", per // 3),
                           ("1", per // 3)]
              for k in range(n)}
    assert len(pushed) == requests * per
    assert len(popped) == len(set(popped)), "a value came out twice"
    assert set(popped) == pushed, "values lost: %d" % len(pushed - set(popped))


def test_a_list_grows_until_no_room_and_gives_it_back(ng):
    """64k zone: a list of 200-byte values grows until the zone is full
    (the other entries evicted to make room), then refuses as put does;
    delete, expiry and flushExpired give the memory back."""
    dict_ok(ng, op="put", dict="small", key="other", value="v")
    dict_ok(ng, op="rpush", dict="small", key="l2", value="v")
    n1 = int(dict_ok(ng, op="pushmany", dict="small", key="l", n=10000,
                bytes=200))
    assert 100 < n1 < 320, n1
    assert dict_ok(ng, op="get", dict="small", key="other") == "nil"
    assert dict_ok(ng, op="llen", dict="small", key="l2") == "0", \
        "another list is evicted as a whole"
    assert int(dict_ok(ng, op="evictions", dict="small")) >= 2
    # full: a push fails and leaves the list as it was
    assert dict_ok(ng, op="rpush", dict="small", key="l", bytes=200) == "0"
    assert dict_ok(ng, op="llen", dict="small", key="l") == str(n1)
    assert dict_ok(ng, op="popall", dict="small", key="l") \
        == ",".join(str(i) for i in range(n1))
    # popped to the end: the memory is back
    n2 = int(dict_ok(ng, op="pushmany", dict="small", key="l", n=10000,
                bytes=200))
    assert abs(n2 - n1) <= 2, (n1, n2)
    assert dict_ok(ng, op="delete", dict="small", key="l") == "true"
    n3 = int(dict_ok(ng, op="pushmany", dict="small", key="l", n=10000,
                bytes=200))
    assert abs(n3 - n1) <= 2, (n1, n3)
    assert dict_ok(ng, op="expire", dict="small", key="l", ttl=100) == "true"
    time.sleep(0.3)
    assert dict_ok(ng, op="flushexpired", dict="small") == "1"
    assert dict_ok(ng, op="size", dict="small") == "0"
    n4 = int(dict_ok(ng, op="pushmany", dict="small", key="l", n=10000,
                bytes=200))
    assert abs(n4 - n1) <= 2, (n1, n4)


def test_lists_are_evicted_least_recently_used_first(ng):
    """Lists among values in a 64k zone: those used lately stay, the
    others go whole, and every put succeeds."""
    for i in range(20):
        for v in range(5):
            dict_ok(ng, op="rpush", dict="small", key="l%d" % i, value="x" * 100)
    assert dict_ok(ng, op="size", dict="small") == "20"
    # l0 used again: the most recent
    assert dict_ok(ng, op="rpush", dict="small", key="l0", value="y") == "6"
    assert dict_ok(ng, op="fill", dict="small", prefix="e", n=600, bytes=200,
              keep="e0") == "0"
    assert dict_ok(ng, op="llen", dict="small", key="l1") == "0"
    assert dict_ok(ng, op="llen", dict="small", key="l19") == "0"
    assert int(dict_ok(ng, op="evictions", dict="small")) > 20
    # an item's allocation evicts too, and a value larger than a slab page
    # but smaller than the zone finds no room
    assert dict_ok(ng, op="rpush", dict="small", key="l0", bytes=60000) in (
        "0", "1"), "no room, or room made"
    assert dict_ok(ng, op="lpush", dict="small", key="huge", bytes=63000) == "0"
    assert dict_ok(ng, op="llen", dict="small", key="huge") == "0"


def test_clojure_wrapper(mode):
    with Nginx("        location /lists { jvm_content testapp.shared/lists; }\n",
               http="    jvm_shared_dict d 1m;\n", mode=mode) as n:
        r = n.get("/lists")
        assert r.status == 200, r.text
        res = read_edn(r.text)
        assert res == {
            ":lpush": 1, ":lpush-kw": 2, ":rpush-int": 3, ":rpush-bytes": 4,
            ":llen": 4, ":llen-absent": 0, ":lpop": "a", ":rpop-bytes": "xyz",
            ":rpop-int": 3, ":lpop-last": "b", ":lpop-empty": None,
            ":ttl-absent": None, ":put": True, ":ttl-put": True,
            ":expire": True, ":ttl-never": 0, ":expire-absent": False,
            ":stale-fresh": {Keyword(":value"): "value",
                             Keyword(":stale?"): False},
            ":stale-absent": None, ":expire-short": True,
            ":stale": {Keyword(":value"): "value", Keyword(":stale?"): True},
            ":get-expired": None, ":flush": 1, ":flush-again": 0,
            ":not-list": 'the value of "s" in shared dictionary "d" is not '
                         'a list',
            ":is-list": 'the value of "l2" in shared dictionary "d" is a '
                        'list (read it with lpop, rpop or llen)'}, res


def test_a_client_that_leaves_mid_operation_leaves_a_whole_list(ng):
    """Clients that send a request pushing thousands of values and leave
    at once, or mid-request: the workers go on, and the list holds every
    value one request pushed, in order, nothing half-made."""
    import socket
    pids = set(ng.worker_pids())
    for i, cut in enumerate([None, 10, 30]):
        q = urllib.parse.urlencode(dict(op="pushmany", key="l%d" % i,
                                        n=2000, bytes=10))
        data = ("GET /dict?%s HTTP/1.1\r\nHost: x\r\n\r\n" % q).encode()
        s = socket.create_connection(("127.0.0.1", ng.port2))
        s.sendall(data if cut is None else data[:cut])
        s.close()
    # the others never were requests; the first ran to its end, or never
    # ran: a task whose client left before it started is skipped (the
    # race is real in pool and virtual modes), so l0 is whole or empty
    whole = ("0", "2000")
    assert wait_for(lambda: dict_ok(ng, op="llen", key="l0") in whole, 30)
    time.sleep(1)
    n = dict_ok(ng, op="llen", key="l0")
    assert n in whole, n
    assert dict_ok(ng, op="popall", key="l0") \
        == ",".join(str(i) for i in range(int(n)))
    assert dict_ok(ng, op="llen", key="l1") == "0"
    assert dict_ok(ng, op="llen", key="l2") == "0"
    assert set(ng.worker_pids()) == pids


def test_lists_and_expiries_survive_a_reload(mode):
    from harness import alive
    with Nginx(LOCATIONS, http=HTTP, classpath="java", workers=2,
               mode=mode) as n:
        for v in "abc":
            dict_ok(n, op="rpush", key="kept", value=v)
        dict_ok(n, op="put", key="t", value="v", ttl=60000)
        old = set(n.worker_pids())
        assert n.control("reload").returncode == 0
        assert wait_for(lambda: not any(alive(p) for p in old), 30)
        assert n.wait_ready(exclude=old)
        assert dict_ok(n, op="llen", key="kept") == "3"
        assert 50000 < int(dict_ok(n, op="ttl", key="t")) <= 60000
        assert dict_ok(n, op="lpop", key="kept") == "S:a"
        assert dict_ok(n, op="rpop", key="kept") == "S:c"
