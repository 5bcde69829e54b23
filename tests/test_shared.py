"""Shared dictionaries (jvm_shared_dict, nginx.jvm.SharedDict): every
worker sees the same entries; atomic increments from every worker and
thread; expiry; LRU eviction; contents kept across a reload; bad input."""

import threading
import time

import pytest

from harness import (Keyword, Nginx, alive, clear_dicts, config_test,
                     dict_config, dict_ok, dict_op, read_edn, wait_for)

LOCATIONS, HTTP = dict_config(small="32k")

# Java handlers, two workers (what one writes the other reads)
NGINX_ARGS = {"classpath": "java", "workers": 2}


@pytest.fixture(autouse=True)
def _clear(request):
    clear_dicts(request)


def test_put_get_each_type(ng):
    assert dict_ok(ng, op="put", key="s", value="héllo") == "true"
    assert dict_ok(ng, op="get", key="s") == "S:héllo"
    assert dict_ok(ng, op="put", key="b", bytes=5) == "true"
    assert dict_ok(ng, op="get", key="b") == "B:5:0001020304"
    assert dict_ok(ng, op="put", key="n", value="42", type="long") == "true"
    assert dict_ok(ng, op="get", key="n") == "N:42"
    assert dict_ok(ng, op="getstring", key="n") == "42"
    assert dict_ok(ng, op="get", key="absent") == "nil"
    # a larger value than the natives' stack buffer, and an empty one
    assert dict_ok(ng, op="put", key="big", bytes=100000) == "true"
    assert dict_ok(ng, op="get", key="big") == "B:100000:0001020304050607"
    assert dict_ok(ng, op="put", key="e", value="") == "true"
    assert dict_ok(ng, op="get", key="e") == "S:"
    assert dict_ok(ng, op="size") == "5"
    assert dict_ok(ng, op="capacity") == str(1024 * 1024)


def test_add_replace_delete(ng):
    assert dict_ok(ng, op="replace", key="k", value="1") == "false"
    assert dict_ok(ng, op="get", key="k") == "nil"
    assert dict_ok(ng, op="add", key="k", value="1") == "true"
    assert dict_ok(ng, op="add", key="k", value="2") == "false"
    assert dict_ok(ng, op="get", key="k") == "S:1"
    assert dict_ok(ng, op="replace", key="k", value="three") == "true"
    assert dict_ok(ng, op="get", key="k") == "S:three"
    assert dict_ok(ng, op="delete", key="k") == "true"
    assert dict_ok(ng, op="delete", key="k") == "false"
    assert dict_ok(ng, op="get", key="k") == "nil"


def test_incr(ng):
    assert dict_ok(ng, op="incr", key="c") == "1"
    assert dict_ok(ng, op="incr", key="c", delta=10) == "11"
    assert dict_ok(ng, op="incr", key="c", delta=-20) == "-9"
    assert dict_ok(ng, op="incr", key="c2", delta=5, init=100) == "105"
    assert dict_ok(ng, op="get", key="c2") == "N:105"


def test_keys_bounded_most_recent_first(ng):
    for i in range(10):
        dict_ok(ng, op="put", key="k%d" % i, value="v")
    assert dict_ok(ng, op="keys", limit=3).split("\n") == ["k9", "k8", "k7"]
    assert len(dict_ok(ng, op="keys", limit=100).split("\n")) == 10
    dict_ok(ng, op="get", key="k0")
    assert dict_ok(ng, op="keys", limit=1) == "k0"


def test_every_worker_sees_the_same_entries(ng):
    assert len(ng.worker_pids()) == 2
    dict_ok(ng, op="put", key="shared", value="x")
    seen = {}

    def probe():
        r = dict_op(ng, op="get", key="shared")
        seen[r.header("X-Pid")] = r.text
        return len(seen) == 2
    assert wait_for(probe, 30, interval=0), "both workers answered"
    assert set(seen.values()) == {"S:x"}
    # and a write by one is read by the other at once
    for i in range(20):
        r = dict_op(ng, op="incr", key="ping")
        assert r.text == str(i + 1), r.text


def test_atomic_incr_from_all_workers_and_threads(ng):
    """1,000,000 increments: 16 requests at once over both workers, each
    on its handler's thread and 3 more threads of its own."""
    requests, per = 16, 62500
    results = []

    def hammer():
        r = dict_op(ng, op="hammer", key="hits", n=per, threads=3)
        results.append((r.status, r.text, r.header("X-Pid")))
    start = time.monotonic()
    threads = [threading.Thread(target=hammer) for _ in range(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    took = time.monotonic() - start
    assert len(results) == requests
    assert all(s == 200 and text == str(per) for s, text, _ in results), results
    assert len({pid for _, _, pid in results}) == 2, "both workers took part"
    assert dict_ok(ng, op="get", key="hits") == "N:%d" % (requests * per)
    assert took < 60, took


def test_ttl_expiry(ng):
    assert dict_ok(ng, op="put", key="t", value="v", ttl=300) == "true"
    assert dict_ok(ng, op="incr", key="tc", ttl=300) == "1"
    assert dict_ok(ng, op="incr", key="tc") == "2"
    assert dict_ok(ng, op="put", key="forever", value="v") == "true"
    assert dict_ok(ng, op="get", key="t") == "S:v"
    time.sleep(0.5)
    assert dict_ok(ng, op="get", key="t") == "nil"
    assert dict_ok(ng, op="incr", key="tc") == "1", "an expired counter restarts"
    assert dict_ok(ng, op="add", key="t", value="again") == "true"
    assert dict_ok(ng, op="get", key="forever") == "S:v"
    assert dict_ok(ng, op="keys", limit=10).split("\n") == ["t", "forever", "tc"] \
        or set(dict_ok(ng, op="keys", limit=10).split("\n")) == {"t", "forever", "tc"}


def test_lru_eviction_when_full(ng):
    """32k zone, 1000 entries of 200 bytes: the oldest go, the recently
    read one stays, and every put succeeds."""
    assert dict_ok(ng, op="fill", dict="small", prefix="e", n=1000, bytes=200,
              keep="e0") == "0"
    assert dict_ok(ng, op="get", dict="small", key="e0").startswith("B:200:")
    assert dict_ok(ng, op="get", dict="small", key="e1") == "nil"
    assert dict_ok(ng, op="get", dict="small", key="e999").startswith("B:200:")
    assert int(dict_ok(ng, op="evictions", dict="small")) > 800
    size = int(dict_ok(ng, op="size", dict="small"))
    assert 10 < size < 200, size


def test_put_fails_when_even_eviction_cannot_make_room(ng):
    dict_ok(ng, op="put", dict="small", key="a", value="1")
    # less than the zone, more than the slab allocator can give at once
    assert dict_ok(ng, op="put", dict="small", key="huge", bytes=30000) == "false"
    assert dict_ok(ng, op="add", dict="small", key="huge", bytes=30000) == "false"
    assert dict_ok(ng, op="get", dict="small", key="huge") == "nil"
    assert dict_ok(ng, op="put", dict="small", key="a", value="2") == "true"
    assert dict_ok(ng, op="get", dict="small", key="a") == "S:2"


@pytest.mark.parametrize("params, message", [
    (dict(op="get", dict="nope", key="k"),
     r'IllegalArgumentException: no shared dictionary "nope": declare it'),
    (dict(op="put", key="", value="v"), "the key is empty"),
    (dict(op="put", keylen=70000, value="v"), "a key of 70000 bytes is too large"),
    (dict(op="put", key="k", bytes=2 * 1024 * 1024), "can never fit"),
    (dict(op="put", key="k", value="v", ttl=-1), "time to live is negative"),
    (dict(op="put", key="k", type="double"), "not java.lang.Double"),
    (dict(op="put", key="k"), "null is not a value"),
    (dict(op="keys", limit=0), "limit must be positive"),
])
def test_bad_input_is_an_exception(ng, params, message):
    dict_ok(ng, op="put", key="k", value="before")
    r = dict_op(ng, **params)
    assert r.status == 400 and message in r.text, r.text
    assert dict_ok(ng, op="get", key="k") == "S:before"


def test_incr_of_a_string_is_an_exception(ng):
    dict_ok(ng, op="put", key="s", value="abc")
    r = dict_op(ng, op="incr", key="s")
    assert r.status == 400
    assert 'the value of "s" in shared dictionary "d" is not a number' in r.text
    assert dict_ok(ng, op="get", key="s") == "S:abc"


MAX, MIN = 2 ** 63 - 1, -2 ** 63


def overflows(key, start, delta):
    return ('ArithmeticException: incr of "%s" in shared dictionary "d" '
            'overflows a long: %d + %s; nothing was changed'
            % (key, start, delta if delta >= 0 else "(%d)" % delta))


@pytest.mark.parametrize("start, delta", [
    (MAX, 1), (MAX - 5, 6), (1, MAX), (MIN, -1), (MIN + 5, -6), (-2, MIN),
    (-1, MIN)])
def test_incr_beyond_a_long_is_an_exception(ng, start, delta):
    """A counter at either end of a long never wraps around to the other
    sign (the wrap is what a quota check would misread): the incr fails
    naming the key and the numbers, and the value stays."""
    assert dict_ok(ng, op="incr", key="c", delta=start) == str(start)
    r = dict_op(ng, op="incr", key="c", delta=delta)
    assert r.status == 400, r.text
    assert r.text == overflows("c", start, delta)
    assert dict_ok(ng, op="get", key="c") == "N:%d" % start
    # one step back, and the same delta again: within a long or not
    back = -1 if delta > 0 else 1
    assert dict_ok(ng, op="incr", key="c", delta=back) == str(start + back)
    r = dict_op(ng, port=ng.port, op="incr", key="c", delta=delta)
    total = start + back + delta
    if MIN <= total <= MAX:
        assert (r.status, r.text) == (200, str(total))
    else:
        assert (r.status, r.text) == (400, overflows("c", start + back, delta))


@pytest.mark.parametrize("init, delta", [(MAX, 1), (MIN, -1), (1, MAX)])
def test_incr_of_a_new_key_beyond_a_long_creates_nothing(ng, init, delta):
    r = dict_op(ng, op="incr", key="n", delta=delta, init=init, ttl=60000)
    assert r.status == 400, r.text
    assert r.text == overflows("n", init, delta)
    assert dict_ok(ng, op="get", key="n") == "nil"
    assert dict_ok(ng, op="size") == "0"


def test_incr_to_the_ends_of_a_long(ng):
    assert dict_ok(ng, op="incr", key="c", delta=MAX, init=0) == str(MAX)
    assert dict_ok(ng, op="incr", key="c", delta=MIN) == "-1"
    assert dict_ok(ng, op="incr", key="c", delta=MIN + 1) == str(MIN)
    assert dict_ok(ng, op="incr", key="c", delta=0) == str(MIN)
    assert dict_ok(ng, op="incr", key="d", delta=-1, init=MIN + 1) == str(MIN)


def test_clojure_incr_beyond_a_long(mode):
    with Nginx("        location /limits "
               "{ jvm_content testapp.shared/incr-limits; }\n",
               http="    jvm_shared_dict d 1m;\n", mode=mode) as n:
        r = n.get("/limits")
        assert r.status == 200, r.text
        res = read_edn(r.text)
        assert res == {
            ":to-max": MAX,
            ":past-max": ["ArithmeticException", overflows("c", MAX, 1)
                          .split(": ", 1)[1]],
            ":after-max": MAX, ":back": MAX - 1,
            ":init-past-min": ["ArithmeticException",
                               overflows("m", MIN, -1).split(": ", 1)[1]],
            ":absent": Keyword(":absent"), ":to-min": MIN,
            ":past-min": ["ArithmeticException", overflows("m", MIN, -1)
                          .split(": ", 1)[1]],
            ":after-min": MIN}, res


def test_contents_survive_a_reload(tmp_path, mode):
    with Nginx(LOCATIONS, http=HTTP, classpath="java", workers=2,
               mode=mode) as n:
        dict_ok(n, op="put", key="kept", value="yes")
        dict_ok(n, op="incr", key="count", delta=7)
        dict_ok(n, op="put", dict="small", key="kept", value="too")
        old = set(n.worker_pids())
        assert n.control("reload").returncode == 0
        assert wait_for(lambda: not any(alive(p) for p in old), 30)
        assert n.wait_ready(exclude=old)
        r = dict_op(n, op="get", key="kept")
        assert r.header("X-Pid") not in {str(p) for p in old}
        assert r.text == "S:yes"
        assert dict_ok(n, op="incr", key="count") == "8"
        assert dict_ok(n, op="get", dict="small", key="kept") == "S:too"
        # a dictionary whose size changes starts empty; the others keep theirs
        with open(n.conf) as f:
            text = f.read()
        with open(n.conf, "w") as f:
            f.write(text.replace("jvm_shared_dict small 32k;",
                                 "jvm_shared_dict small 64k;"))
        old = set(n.worker_pids())
        assert n.control("reload").returncode == 0
        assert wait_for(lambda: not any(alive(p) for p in old), 30)
        assert n.wait_ready(exclude=old)
        assert dict_ok(n, op="get", dict="small", key="kept") == "nil"
        assert dict_ok(n, op="capacity", dict="small") == str(64 * 1024)
        assert dict_ok(n, op="get", key="kept") == "S:yes"


@pytest.mark.parametrize("directive, message", [
    ("jvm_shared_dict d abc;", 'jvm_shared_dict "d": invalid size "abc"'),
    ("jvm_shared_dict d 1k;", 'jvm_shared_dict "d": size "1k" is too small'),
    ("jvm_shared_dict d 1m; jvm_shared_dict d 2m;",
     'jvm_shared_dict "d" is duplicate'),
    ("jvm_shared_dict d;",
     'invalid number of arguments in "jvm_shared_dict" directive'),
])
def test_bad_directive_fails_config_test(directive, message):
    t = config_test(LOCATIONS, http="    " + directive + "\n", classpath="java")
    assert t.returncode != 0
    assert message in t.stderr, t.stderr


def test_clojure_wrapper(mode):
    with Nginx("        location /clj { jvm_content testapp.shared/handler; }\n"
               "        location /got { jvm_content testapp.shared/received; }\n",
               http="    jvm_shared_dict d 1m;\n    jvm_topic t 64k;\n",
               mode=mode) as n:
        r = n.get("/clj")
        assert r.status == 200, r.text
        res = read_edn(r.text)
        assert res == {
            ":put": True, ":put-kw": True, ":put-int": True, ":put-bytes": True,
            ":add": False, ":replace": True, ":get": "3", ":get-kw": "kw",
            ":lookup-kw": "3", ":not-found": Keyword(":none"), ":bytes": "xyz",
            ":incr": 6, ":incr-by": 110, ":entry": 110, ":count": 5,
            ":keys": ["a", "b/c", "bytes", "m", "n"], ":delete": True,
            ":after-delete": None, ":capacity": 1048576,
            ":printed": '#shared/dict "d"', ":bad-type": Keyword(":iae"),
            ":unknown": Keyword(":iae"), ":publish": True,
            ":publish-bad": Keyword(":iae")}, res
        assert wait_for(lambda: read_edn(n.get("/got").text) == ["one"], 60)
