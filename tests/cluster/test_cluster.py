"""Failures under load through the front (issue 20): an application host
lost and brought back, Redis restarted. Every request and every chat
message is recorded; the figures go to build/cluster-test/figures.json
(bench/results/2026-11-25-cluster.md)."""

import os
import statistics
import subprocess
import time

from clients import (Broadcaster, ChatClient, Load, get, sign_in,
                     signed_in_as)


def wait_delivery(sender, receivers, prefix, limit=60):
    """Sends numbered messages until every receiver has one: the bridge of
    every host involved is subscribed to Redis. Answers the seconds it
    took."""
    start = time.monotonic()
    n = 0
    while time.monotonic() - start < limit:
        sender.send("%s%d" % (prefix, n))
        n += 1
        time.sleep(0.1)
        if all(r.received(prefix) for r in receivers):
            return time.monotonic() - start
    missing = [r.name for r in receivers if not r.received(prefix)]
    raise AssertionError("no %s message reached %s in %ds"
                         % (prefix, missing, limit))


def landed(broadcasts, clients, prefix, rejoined=None, limit=30):
    """Waits until every client has every broadcast sent after its last
    connect, and `rejoined` every one sent after the first it received,
    or `limit` seconds: the assertions after it say what is missing."""
    sent_at = dict((m, t) for t, m in broadcasts.sent)

    def missing(c, since):
        return {m for t, m in broadcasts.sent if t > since} \
            - {m for _, m in c.received(prefix)}

    def done():
        if any(missing(c, c.connections[-1][0]) for c in clients):
            return False
        if rejoined:
            got = rejoined.received(prefix)
            return got and not missing(rejoined, sent_at[got[0][1]])
        return True

    start = time.monotonic()
    while not done() and time.monotonic() - start < limit:
        time.sleep(0.1)


def outcomes(records):
    counts = {}
    for r in records:
        counts[r[3]] = counts.get(r[3], 0) + 1
    return counts


def test_host_lost_and_back(njc):
    victim = "app2"
    users = [("load%d" % i, sign_in(njc.notes, "load%d" % i))
             for i in range(4)]
    # with no route cookie the front goes round the hosts: three each
    subscribers = [ChatClient(njc.live, name="sub%d" % i) for i in range(9)]
    hosts = {s.host for s in subscribers}
    assert hosts == set(njc.apps), hosts
    publisher = ChatClient(njc.live, cookie=njc.route("app1"), name="pub")
    assert publisher.host == "app1"
    wait_delivery(publisher, subscribers, "warm-")
    on_victim = [s for s in subscribers if s.host == victim]

    load = Load(njc, users, threads=4, seconds=120).start()
    broadcasts = Broadcaster(publisher, "b-", interval=0.1).start()
    rejoined = None
    try:
        time.sleep(4)
        killed = time.monotonic()
        njc.kill(victim)
        time.sleep(8)
        restarting = time.monotonic()
        njc.start(victim)
        restarted = time.monotonic()
        # the front tries the host again after fail_timeout (5 s)
        while not load.served_by(victim, since=restarted) and \
                time.monotonic() - restarted < 60:
            time.sleep(0.1)
        # a chat client on the host that came back: its bridge subscribes
        # to Redis when its first chat socket opens; then 2 s of
        # broadcasts to it
        rejoined = ChatClient(njc.live, cookie=njc.route(victim),
                              name="rejoined")
        start = time.monotonic()
        while len(rejoined.received("b-")) < 20 and \
                time.monotonic() - start < 60:
            time.sleep(0.1)
    finally:
        broadcasts.stop()
        # the last broadcasts land
        landed(broadcasts, subscribers, "b-", rejoined)
        load.stop()
        for c in subscribers + [publisher] + ([rejoined] if rejoined else []):
            c.close()

    # HTTP: nothing fails but what was in flight on the victim when it
    # died (each of the load's threads has at most one request in flight)
    failed = load.failures()
    assert len(failed) <= load.threads, outcomes(failed)
    assert all(killed - 0.5 <= r[1] and r[0] <= killed + 2 for r in failed), \
        failed
    # every session made before the kill is read on every request after it
    assert not [r for r in load.records if r[3] == "no session"]
    assert load.served_by(victim, since=0) and \
        [r for r in load.served_by(victim) if r[0] < killed]
    # back: the front sends it requests again (after fail_timeout at most)
    back = load.served_by(victim, since=restarted)
    assert back, "%s got no request after it came back" % victim
    assert signed_in_as(get(njc.notes, cookie=users[0][1]), users[0][0])

    # WebSocket: the victim's clients reconnected to another host, and
    # every client received every broadcast sent after its last connect
    # (the others: every one), once
    reconnects = []
    for s in on_victim:
        assert s.losses, "%s kept its connection to a dead host" % s.name
        assert s.host != victim, s.connections
        reconnects.extend(back_at - lost for lost, back_at in s.losses)
    for s in subscribers:
        if s not in on_victim:
            assert not s.losses, (s.name, s.losses)
        since = s.connections[-1][0]
        expected = {m for t, m in broadcasts.sent if t > since}
        texts = [m for _, m in s.received("b-")]
        missing = expected - set(texts)
        assert not missing, "%s (on %s) missed %d of %d broadcasts: %s" % (
            s.name, s.host, len(missing), len(expected), sorted(missing)[:10])
        assert len(texts) == len(set(texts)), "%s: duplicates" % s.name

    # the host that came back carries broadcasts again: once its bridge
    # is subscribed (the first one that arrives), every later one
    assert rejoined.connections[0][1] == victim
    texts = [m for _, m in rejoined.received("b-")]
    assert texts, "no broadcast reached the client on %s" % victim
    sent_at = dict((m, t) for t, m in broadcasts.sent)
    first = sent_at[texts[0]]
    missing = {m for t, m in broadcasts.sent if t > first} - set(texts)
    assert not missing, sorted(missing)[:10]

    njc.figures["host_lost"] = {
        "requests": len(load.records),
        "failed": len(failed),
        "failures": outcomes(failed),
        "requests_per_second": round(
            len(load.records) / (load.records[-1][1] - load.records[0][0]),
            1),
        "victim": victim,
        "victim_start_seconds": round(restarted - restarting, 1),
        "victim_first_request_after_start_s": round(back[0][0] - restarted,
                                                    2),
        "ws_clients_on_victim": len(on_victim),
        "ws_reconnect_ms_max": round(max(reconnects) * 1000, 1),
        "ws_reconnect_ms_mean": round(statistics.mean(reconnects) * 1000, 1),
        "broadcasts_sent": len(broadcasts.sent),
        "rejoined_first_broadcast_after_connect_s": round(
            rejoined.received("b-")[0][0] - rejoined.connections[0][0], 2),
    }
    print(njc.figures["host_lost"])


def test_host_unplugged_and_back(njc):
    """A host that vanishes from the network (its link down: no resets,
    only silence), under the same load: requests in flight on it wait for
    the front's proxy_read_timeout (10 s), then go to another host; new
    ones wait for proxy_connect_timeout (1 s) until the host is taken out.
    Chat clients learn it by their pings (1 s, 1 s for the pong)."""
    victim = "app3"
    users = [("cut%d" % i, sign_in(njc.notes, "cut%d" % i))
             for i in range(4)]
    subscribers = [ChatClient(njc.live, name="sub%d" % i, ping=1)
                   for i in range(6)]
    assert {s.host for s in subscribers} == set(njc.apps)
    publisher = ChatClient(njc.live, cookie=njc.route("app1"), name="pub")
    wait_delivery(publisher, subscribers, "warm-")
    on_victim = [s for s in subscribers if s.host == victim]

    load = Load(njc, users, threads=4, seconds=120).start()
    broadcasts = Broadcaster(publisher, "c-", interval=0.1).start()
    try:
        time.sleep(3)
        cut = time.monotonic()
        njc.unplug(victim)
        time.sleep(14)
        njc.plug(victim)
        plugged = time.monotonic()
        while not load.served_by(victim, since=plugged) and \
                time.monotonic() - plugged < 60:
            time.sleep(0.1)
        time.sleep(1)
    finally:
        njc.plug(victim)
        broadcasts.stop()
        landed(broadcasts, subscribers, "c-")      # the last ones land
        load.stop()
        for c in subscribers + [publisher]:
            c.close()

    failed = load.failures()
    assert not failed, outcomes(failed)
    assert not [r for r in load.records if r[3] == "no session"]
    slow = [r[1] - r[0] for r in load.records
            if r[0] >= cut - 1 and r[1] - r[0] > 0.5]
    assert max(slow) < 12, max(slow)        # 10 s read timeout, then retried
    assert load.served_by(victim, since=plugged), "%s did not rejoin" % victim
    reconnects = []
    for s in on_victim:
        assert s.losses and s.host != victim, (s.name, s.connections)
        reconnects.extend(b - lost for lost, b in s.losses)
    for s in subscribers:
        since = s.connections[-1][0]
        expected = {m for t, m in broadcasts.sent if t > since}
        texts = [m for _, m in s.received("c-")]
        assert not expected - set(texts), (s.name, len(expected - set(texts)))
        assert len(texts) == len(set(texts)), "%s: duplicates" % s.name

    njc.figures["host_unplugged"] = {
        "requests": len(load.records),
        "failed": len(failed),
        "slowest_request_s": round(max(slow), 2),
        "requests_slower_than_0.5s": len(slow),
        "ws_clients_on_victim": len(on_victim),
        "ws_detect_and_reconnect_s_max": round(
            max(s.losses[0][1] for s in on_victim) - cut, 2),
        "ws_reconnect_ms_max": round(max(reconnects) * 1000, 1),
        "victim_first_request_after_plug_s": round(
            load.served_by(victim, since=plugged)[0][0] - plugged, 2),
    }
    print(njc.figures["host_unplugged"])


def test_redis_restarted(njc):
    before = sign_in(njc.notes, "ada")
    users = [("redis%d" % i, sign_in(njc.notes, "redis%d" % i))
             for i in range(4)]
    a = ChatClient(njc.live, cookie=njc.route("app1"), name="on-app1")
    c = ChatClient(njc.live, cookie=njc.route("app3"), name="on-app3")
    assert (a.host, c.host) == ("app1", "app3")
    wait_delivery(a, [c], "warm-")

    load = Load(njc, users, threads=4, seconds=120).start()
    try:
        time.sleep(3)
        stopped = time.monotonic()
        njc.stop("redis")              # SIGTERM: the append-only file kept
        time.sleep(2)
        njc.start("redis")
        up = time.monotonic()
        # the bridge: app1's chat reaches app3's again
        bridged = wait_delivery(a, [c], "probe-")
        time.sleep(3)
    finally:
        load.stop()
        a.close()
        c.close()

    # sessions made before the restart are back (appendonly yes)
    assert signed_in_as(get(njc.notes, cookie=before), "ada")
    assert not [r for r in load.records if r[3] == "no session"]
    # requests fail only while Redis is away (503, Retry-After), and
    # then no more
    failed = load.failures()
    late = [r for r in failed if r[0] > up + 3]
    assert not late, late[:5]
    assert all(r[3] == "status 503" for r in failed), outcomes(failed)
    notes_ok = [r for r in load.records
                if r[2] == njc.notes and r[3] == "ok" and r[0] > up]
    assert notes_ok
    # the hosts' WebSockets never noticed
    assert not a.losses and not c.losses

    njc.figures["redis_restart"] = {
        "requests": len(load.records),
        "failed": len(failed),
        "failures": outcomes(failed),
        "redis_away_seconds": round(up - stopped, 1),
        "sessions_back_after_redis_up_s": round(notes_ok[0][0] - up, 2),
        "bridge_back_after_redis_up_s": round(bridged, 2),
    }
    print(njc.figures["redis_restart"])


def cpu_seconds(host):
    """The CPU time (user + system) of every process of a host so far."""
    ticks = 0
    pids = subprocess.run(["ip", "netns", "pids", "njc-" + host],
                          stdout=subprocess.PIPE, text=True).stdout.split()
    for pid in pids:
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def test_cpu_per_request(njc):
    """What a request costs each tier, in CPU time (less sensitive to a
    shared machine than a rate): the live page (a static page from the
    JVM) and the notes page of a signed-in user (Compojure, HTML, a session
    read from Redis), each alone for a few seconds through the front,
    after a warm-up."""
    users = [("cost%d" % i, sign_in(njc.notes, "cost%d" % i))
             for i in range(4)]
    tiers = ("front", "app1", "app2", "app3", "redis")
    figures = {}
    for what, url in (("live page", njc.live), ("notes page", njc.notes)):
        # a warm-up first: the JIT compiles what the load runs
        warm = Load(njc, users, threads=4, seconds=8, pause=0, urls=[url])
        warm.start()
        for w in warm.workers:
            w.join()
        before = {t: cpu_seconds(t) for t in tiers}
        load = Load(njc, users, threads=4, seconds=6, pause=0, urls=[url])
        load.start()
        for w in load.workers:
            w.join()
        used = {t: cpu_seconds(t) - before[t] for t in tiers}
        ok = [r for r in load.records if r[3] == "ok"]
        assert len(ok) == len(load.records), outcomes(load.failures())
        n = len(ok)
        apps = sum(used[a] for a in njc.apps)
        figures[what] = {
            "requests": n,
            "requests_per_second": round(n / 6, 1),
            "app_host_cpu_us": round(apps / n * 1e6, 1),
            "front_cpu_us": round(used["front"] / n * 1e6, 1),
            "redis_cpu_us": round(used["redis"] / n * 1e6, 1),
        }
    njc.figures["cpu_per_request"] = figures
    print(figures)
