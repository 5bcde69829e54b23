"""nginx.jvm.RedisBridge: a jvm_topic carried across hosts over a Redis
pub/sub channel (tests/apps/clj/testapp/bridge.clj). Two hosts (two nginx
instances of two workers each) and a redis-server the test starts on
loopback. A message published on one host's topic reaches the server-sent
event clients of both hosts exactly once; one worker per host subscribes;
the bridge comes back by itself when Redis restarts."""

import os
import socket
import threading
import time
import uuid

import pytest

from harness import ROOT, Nginx, read_edn, request, wait_for
from redisserver import RedisServer, classpath, one_mode_only, require_redis

require_redis()

HTTP = """
    jvm_topic t 256k;
    jvm_shared_dict b 64k;
    jvm_init testapp.bridge/init;
"""

LOCATIONS = """
        location / { jvm_async on; jvm_content testapp.bridge/app; }
"""

DOWN = (r"\[error\].*nginx\.jvm\.RedisBridge: RedisBridge\[t <-> 127\.0\.0\.1:"
        r"\d+ \S+\]: (no subscription to Redis|publishing to Redis failed)")


@pytest.fixture(scope="module")
def redis():
    with RedisServer(persist=False) as r:
        yield r


@pytest.fixture(scope="module")
def channel():
    return "test-bridge-" + uuid.uuid4().hex[:8]


def host(mode, redis, channel):
    main = ("env NGINX_JVM_TEST_REDIS=%s;\nenv NGINX_JVM_TEST_CHANNEL=%s;\n"
            % (redis.uri, channel))
    return Nginx(LOCATIONS, http=HTTP, classpath=classpath(), workers=2,
                 mode=mode, main=main)


@pytest.fixture(scope="module")
def hosts(mode, redis, channel):
    with host(mode, redis, channel) as a, host(mode, redis, channel) as b:
        assert wait_for(lambda: subscriptions(redis, channel) == 2, 30), \
            "each host subscribed"
        yield a, b


def subscriptions(redis, channel):
    try:
        return redis.command("PUBSUB", "NUMSUB", channel)[1]
    except OSError:
        return -1


class Events:
    """A server-sent event client: the data lines it got, in order."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sock.sendall(b"GET /events HTTP/1.0\r\nHost: x\r\n\r\n")
        self.data = b""
        self.pid = None
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        assert wait_for(lambda: self.pid, 30), "the stream started"

    def _read(self):
        while True:
            try:
                b = self.sock.recv(65536)
            except OSError:
                return
            if not b:
                return
            with self.lock:
                self.data += b
                if self.pid is None and b"\r\n\r\n: " in self.data:
                    self.pid = self.data.split(b"\r\n\r\n: ", 1)[1].split(b"\n")[0]

    def messages(self):
        with self.lock:
            return [line[6:].decode() for line in self.data.split(b"\n")
                    if line.startswith(b"data: ")]

    def close(self):
        self.sock.close()


def clients(n, per_host=4):
    """per_host clients, and more until both workers have some (bounded)."""
    got = []
    for _ in range(40):
        got.append(Events(n.port))
        if len(got) >= per_host and len({c.pid for c in got}) == 2:
            break
    return got


def publish(n, msg):
    r = request(n.port, "GET", "/publish?msg=" + msg, timeout=60)
    assert r.status == 200 and r.text == "true", r


def received_exactly(cs, sent, timeout=30):
    """Every client got every message of sent, once, in order, and nothing
    else arrives in the second after."""
    def done():
        return all([m for m in c.messages() if m in sent] == sent for c in cs)
    ok = wait_for(done, timeout)
    time.sleep(1.0)                 # time for a duplicate to show
    for c in cs:
        mine = [m for m in c.messages() if m in sent]
        assert mine == sent, (c.pid, mine)
    return ok


@pytest.fixture
def streams(hosts):
    a, b = hosts
    ca, cb = clients(a), clients(b)
    yield ca, cb
    for c in ca + cb:
        c.close()


def test_one_worker_per_host_subscribes(hosts, redis, channel):
    for _ in range(6):
        assert subscriptions(redis, channel) == 2
        time.sleep(0.3)
    for n in hosts:
        leaders = set()
        for _ in range(40):
            r = request(n.port, "GET", "/status")
            s = read_edn(r.text)
            if s[":leader"]:
                leaders.add(r.header("X-Pid"))
        assert len(leaders) == 1, "one worker talks to Redis"


def test_a_message_reaches_every_client_of_both_hosts_once(streams, hosts):
    a, b = hosts
    ca, cb = streams
    sent = ["from-a-%d-%s" % (i, uuid.uuid4().hex[:6]) for i in range(10)]
    for m in sent:
        publish(a, m)
    received_exactly(ca + cb, sent)
    back = ["from-b-%d-%s" % (i, uuid.uuid4().hex[:6]) for i in range(10)]
    for m in back:
        publish(b, m)
    received_exactly(ca + cb, back)


def test_both_hosts_at_once(streams, hosts):
    a, b = hosts
    ca, cb = streams
    sa = ["a%d" % i for i in range(20)]
    sb = ["b%d" % i for i in range(20)]
    for x, y in zip(sa, sb):
        publish(a, x)
        publish(b, y)
    for c in ca + cb:
        assert wait_for(lambda: len([m for m in c.messages()
                                     if m in sa or m in sb]) >= 40, 30)
    time.sleep(1.0)
    for c in ca + cb:
        got = [m for m in c.messages() if m in sa or m in sb]
        assert sorted(got) == sorted(sa + sb), "each once"
        assert [m for m in got if m in sa] == sa, "a publisher's order"
        assert [m for m in got if m in sb] == sb


def test_what_others_write_on_the_channel_is_dropped(streams, hosts, redis,
                                                     channel):
    a, _ = hosts
    ca, cb = streams
    for junk in ("hello", "NJB1", "NJB1\x05abc", "NJB1\x02xyq-payload",
                 "NJB1\xff" + "z" * 10):
        redis.command("PUBLISH", channel, junk)
    marker = "after-junk-" + uuid.uuid4().hex[:6]
    publish(a, marker)
    received_exactly(ca + cb, [marker])
    for c in ca + cb:
        assert [m for m in c.messages() if "payload" in m or m == "hello"] == []


@pytest.mark.log_allows(DOWN)
def test_redis_restarts_and_the_bridge_comes_back(streams, hosts, redis,
                                                  channel):
    a, b = hosts
    ca, cb = streams
    since = {id(n): n.log_size() for n in hosts}
    redis.stop()
    lost = "while-down-" + uuid.uuid4().hex[:6]
    publish(a, lost)
    received_exactly(ca, [lost])    # the host itself still has it
    assert wait_for(lambda: a.log_lines(DOWN, since[id(a)]), 60)
    redis.start()                   # the same port
    assert wait_for(lambda: subscriptions(redis, channel) == 2, 30), \
        "both hosts subscribed again"
    back = "after-restart-" + uuid.uuid4().hex[:6]
    publish(a, back)
    received_exactly(ca + cb, [back])
    for c in cb:
        assert lost not in c.messages(), "at most once: lost while down"
    for n in hosts:
        # one line per outage and direction, not one per retry
        lines = n.log_lines(DOWN, since[id(n)])
        assert 1 <= len(lines) <= 2 * n.workers, lines


def test_a_client_that_leaves_is_dropped(hosts):
    a, b = hosts
    gone = clients(b, per_host=2)
    for c in gone:
        c.close()
    stay = clients(b, per_host=1)
    m = "after-leave-" + uuid.uuid4().hex[:6]
    publish(a, m)
    received_exactly(stay, [m])
    for c in stay:
        c.close()


# --- examples/live over the bridge: its chat across two hosts ---------------

LIVE = """
        location / { jvm_async on; jvm_content live.core/app; }
"""

LIVE_HTTP = """
    jvm_topic chat 1m;
    jvm_shared_dict chat 64k;
"""


@pytest.fixture(scope="module")
def live_hosts(mode, redis):
    one_mode_only(mode)
    pytest.importorskip("websockets")
    cp = classpath() + [str(ROOT / "examples" / "live" / "src")]
    main = "env NGINX_JVM_REDIS=%s;\n" % redis.uri

    def live():
        return Nginx(LIVE, http=LIVE_HTTP, classpath=cp, mode=mode,
                     workers=2, main=main)
    with live() as a, live() as b:
        yield a, b


def test_the_live_chat_spans_two_hosts(live_hosts, redis):
    from websockets.sync.client import connect
    a, b = live_hosts
    with connect("ws://127.0.0.1:%d/chat" % a.port) as ca, \
            connect("ws://127.0.0.1:%d/chat" % b.port) as cb:
        # each host's bridge starts with its first chat socket
        assert wait_for(lambda: subscriptions(redis, "nginx-jvm:live:chat")
                        == 2, 30), "both hosts bridged"
        ca.send("hello from a")
        cb.send("hello from b")
        for c in (ca, cb):
            got = []
            deadline = time.monotonic() + 30
            while sorted(got) != ["hello from a", "hello from b"]:
                assert time.monotonic() < deadline, got
                try:
                    m = c.recv(timeout=0.5)
                except TimeoutError:
                    continue
                if not m.startswith("* someone"):
                    got.append(m)
            with pytest.raises(TimeoutError):   # once, no echo
                while True:
                    m = c.recv(timeout=1.0)
                    assert m.startswith("* someone"), m


# --- over a Redis Stream: at least once, through a change of leader ---------

KILLED = r"\[alert\].*worker process \d+ exited on signal 9"


@pytest.fixture(scope="module")
def stream_hosts(mode, redis):
    one_mode_only(mode)
    key = "test-stream-" + uuid.uuid4().hex[:8]
    main = ("env NGINX_JVM_TEST_REDIS=%s;\nenv NGINX_JVM_TEST_CHANNEL=unused;\n"
            "env NGINX_JVM_TEST_STREAM=%s;\n" % (redis.uri, key))

    def one():
        return Nginx(LOCATIONS, http=HTTP, classpath=classpath(), workers=2,
                     mode=mode, main=main)
    with one() as a, one() as b:
        assert wait_for(lambda: all(leader(n) for n in (a, b)), 30)
        yield a, b


def leader(n):
    """The pid of the host's worker that reads the stream, or None."""
    for _ in range(20):
        r = request(n.port, "GET", "/status")
        s = read_edn(r.text)
        if s[":leader"] and s[":subscribed"]:
            return r.header("X-Pid")
    return None


def test_a_stream_carries_messages_across_hosts_once(stream_hosts):
    a, b = stream_hosts
    ca, cb = clients(a), clients(b)
    try:
        sent = ["s-%d-%s" % (i, uuid.uuid4().hex[:6]) for i in range(10)]
        for m in sent:
            publish(a, m)
        received_exactly(ca + cb, sent)
    finally:
        for c in ca + cb:
            c.close()


@pytest.mark.log_allows(KILLED)
def test_a_stream_delivers_what_came_while_the_leader_changed(stream_hosts):
    a, b = stream_hosts
    old = leader(b)
    assert old
    # clients of the worker that stays
    every = clients(b, per_host=6)
    stay = [c for c in every if c.pid.decode() != old]
    assert stay, "a client on the other worker"
    os.kill(int(old), 9)
    sent = ["k-%d-%s" % (i, uuid.uuid4().hex[:6]) for i in range(5)]
    for m in sent:
        publish(a, m)               # while host b has no reader
    assert wait_for(lambda: all(set(sent) <= set(c.messages()) for c in stay),
                    60), [c.messages() for c in stay]
    for c in every:
        c.close()
    assert wait_for(lambda: leader(b), 30), "a new leader"
