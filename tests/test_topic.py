"""Topics (jvm_topic, nginx.jvm.Topic): every worker's subscribers get every
message once, in the order published; a full ring refuses at once and
counts; a dead worker does not block the ring."""

import http.client
import os
import signal
import time
import urllib.parse

import pytest

from harness import START_WAIT, Nginx, alive, config_test, request, wait_for

LOCATIONS = """
        location /topic { jvm_content testapp.TopicApp; }
"""

HTTP = """
    jvm_topic t 64k;
    jvm_topic small 32k;
    jvm_init testapp.TopicInit;
    server {
        listen 127.0.0.1:@PORT2@ reuseport;
        location /topic { jvm_content testapp.TopicApp; }
    }
"""

KILLED = r"\[alert\].*worker process \d+ exited on signal 9"


def start(mode):
    return Nginx(LOCATIONS, http=HTTP, classpath="java", workers=2, mode=mode)


@pytest.fixture(scope="module")
def ng(mode):
    with start(mode) as n:
        yield n


def op(ng_, conn=None, **params):
    path = "/topic?" + urllib.parse.urlencode(params)
    if conn is not None:
        return request(ng_.port, "GET", path, conn=conn)
    return request(ng_.port2, "GET", path, timeout=60)


def each_worker(n, **params):
    """The same operation answered by every worker: {pid: text}."""
    answers = {}

    def more():
        r = op(n, **params)
        assert r.status == 200, r.text
        answers.setdefault(r.header("X-Pid"), r.text)
        return len(answers) == n.workers
    assert wait_for(more, 30, interval=0), "every worker answered"
    return answers


def received(n):
    return {pid: [m for m in text.split("\n") if m]
            for pid, text in each_worker(n, op="received").items()}


def test_every_worker_gets_every_message_once_in_order(ng):
    each_worker(ng, op="clear")
    publishers = set()
    for rnd in range(10):
        r = op(ng, op="publish", msg="{pid}-%d-{i}" % rnd, n=20)
        assert r.status == 200 and r.text == "20", r.text
        publishers.add(r.header("X-Pid"))
    assert len(publishers) == 2, "both workers published"
    got = wait_for(lambda: (lambda g: all(len(v) >= 200 for v in g.values())
                            and g)(received(ng)), 60)
    assert got, received(ng)
    lists = list(got.values())
    assert len(lists) == 2 and all(len(l) == 200 for l in lists), lists
    assert lists[0] == lists[1], "every worker saw the one order"
    assert len(set(lists[0])) == 200, "each message once"
    for pid in publishers:
        mine = [tuple(int(x) for x in m.split("-")[1:])
                for m in lists[0] if m.startswith(pid + "-")]
        assert mine == sorted(mine), "a publisher's messages in its order"
    # delivered on the event loop: one thread per worker
    for text in each_worker(ng, op="threads").values():
        assert len(set(text.split("\n"))) == 1


def test_bytes_and_strings(ng):
    each_worker(ng, op="clear")
    assert op(ng, op="publish-bytes", bytes=3000).text == "true"
    assert op(ng, op="publish", msg="é").text == "1"
    assert wait_for(lambda: all(v == ["bytes:3000", "é"]
                                for v in received(ng).values()), 60)


def test_subscribe_and_close(ng):
    conn = http.client.HTTPConnection("127.0.0.1", ng.port, timeout=30)
    try:
        assert op(ng, conn, op="sub2").text == "2"
        before = int(op(ng, conn, op="second").text)
        assert op(ng, conn, op="publish", msg="x", n=5).text == "5"
        assert wait_for(lambda: int(op(ng, conn, op="second").text)
                        == before + 5, 60)
        assert op(ng, conn, op="unsub2").text == "1"
        assert op(ng, conn, op="publish", msg="y", n=5).text == "5"
        time.sleep(0.3)
        assert int(op(ng, conn, op="second").text) == before + 5
    finally:
        conn.close()


@pytest.mark.log_allows(r"\[error\].*nginx\.jvm\.Topic: a listener of topic")
def test_a_listener_that_throws_is_logged_and_delivery_goes_on(ng):
    each_worker(ng, op="clear")
    assert op(ng, op="publish", msg="boom").text == "1"
    assert op(ng, op="publish", msg="after").text == "1"
    assert wait_for(lambda: all(v == ["boom", "after"]
                                for v in received(ng).values()), 60)
    assert wait_for(lambda: ng.stderr_text().count("listener-boom-marker")
                    + ng.log_text().count("listener-boom-marker") >= 2, 60)


def test_overflow_refuses_at_once_and_counts(ng):
    before = [int(x) for x in op(ng, op="stats").text.split()]
    start = time.monotonic()
    r = op(ng, op="flood", bytes=1000)
    took = time.monotonic() - start
    ok, refused = (int(x) for x in r.text.split())
    assert ok > 10, r.text
    assert refused == 10
    assert took < 5, "never waits"
    after = [int(x) for x in op(ng, op="stats").text.split()]
    assert after[1] - before[1] == 10
    assert after[0] - before[0] == ok
    # once the workers have read, there is room again
    assert wait_for(lambda: op(ng, op="publish", msg="m").text == "1", 60)


@pytest.mark.parametrize("params, message", [
    (dict(op="stats", topic="nope"), 'no topic "nope": declare it'),
    (dict(op="publish-bad"), "a message is a String or a byte[], not java.lang.Integer"),
    (dict(op="publish-bytes", bytes=20000), "is larger than its largest"),
])
def test_bad_input_is_an_exception(ng, params, message):
    r = op(ng, **params)
    assert r.status == 400 and message in r.text, r.text


@pytest.mark.log_allows(KILLED)
def test_a_dead_worker_does_not_block_the_ring(mode):
    with start(mode) as n:
        victim = n.worker_pids()[0]
        os.kill(victim, signal.SIGKILL)
        # the new worker counts once its JVM has started
        assert wait_for(lambda: not alive(victim) and len(n.worker_pids()) == 2,
                        START_WAIT)
        assert n.wait_ready()
        # fill the ring over and over: the dead worker's slot must not hold it
        for _ in range(5):
            op(n, op="flood", bytes=1000)
            assert wait_for(lambda: op(n, op="publish", msg="m").text == "1", 60), \
                "room again once the live workers have read"


def test_reload_new_workers_receive(mode):
    with start(mode) as n:
        old = set(n.worker_pids())
        assert n.control("reload").returncode == 0
        assert wait_for(lambda: not any(alive(p) for p in old), 30)
        assert n.wait_ready(exclude=old)
        each_worker(n, op="clear")
        assert op(n, op="publish", msg="after-reload").text == "1"
        assert wait_for(lambda: all(v == ["after-reload"]
                                    for v in received(n).values()), 60)
        for _ in range(3):
            op(n, op="flood", bytes=1000)
            assert wait_for(lambda: op(n, op="publish", msg="m").text == "1", 60)


@pytest.mark.parametrize("directive, message", [
    ("jvm_topic t abc;", 'jvm_topic "t": invalid size "abc"'),
    ("jvm_topic t 1k;", 'jvm_topic "t": size "1k" is too small'),
    ("jvm_topic t 64k; jvm_topic t 64k;", 'jvm_topic "t" is duplicate'),
    ("jvm_topic t;", 'invalid number of arguments in "jvm_topic" directive'),
])
def test_bad_directive_fails_config_test(directive, message):
    t = config_test(LOCATIONS, http="    " + directive + "\n", classpath="java")
    assert t.returncode != 0
    assert message in t.stderr, t.stderr
