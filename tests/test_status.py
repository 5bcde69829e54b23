"""jvm_status: the figures of every worker (nginx shared memory), in the
Prometheus text format: requests by mode and status class, in flight,
queue depth, 503s and 504s, the handler time histogram, and one series per
worker of the JVM's own figures."""

import re
import threading
import time

import pytest

from harness import Nginx, request, wait_for

# the second server: reuseport spreads new connections over the workers
HTTP = """
    jvm_pool_size 1;
    jvm_queue 4;
    server {
        listen 127.0.0.1:@PORT2@ reuseport;
        location = /status { jvm_status; jvm_mode loop; }
        location /app { jvm_content testapp.Answer; }
        location /busy { jvm_content testapp.Answer; jvm_mode pool; }
        location /slow {
            jvm_content testapp.Answer;
            jvm_mode pool;
            jvm_response_timeout 300ms;
        }
    }
"""

LOCATIONS = """
        location = /status { jvm_status; }
"""

# Java handlers, two workers (the figures are of every worker)
NGINX_ARGS = {"classpath": "java", "workers": 2}


# --- a strict reader of the text exposition format (0.0.4) -----------------

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')


def parse(text):
    """{(name, frozenset(labels)): value}, checking every line's syntax and
    that each sample belongs to a family declared by # TYPE."""
    types, samples = {}, {}
    assert text.endswith("\n")
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge", "histogram"), line
            assert name not in types, "declared twice: " + name
            types[name] = kind
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample: %r" % line
        name, labels = m.group(1), {}
        if m.group(3):
            pos = 0
            for lm in LABEL.finditer(m.group(3)):
                assert lm.start() == pos, "bad labels: %r" % line
                labels[lm.group(1)] = lm.group(2)
                pos = lm.end()
            assert pos == len(m.group(3)), "bad labels: %r" % line
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in types or types.get(family) == "histogram", \
            "no # TYPE for " + name
        key = (name, frozenset(labels.items()))
        assert key not in samples, "duplicate sample: " + line
        samples[key] = float(m.group(4))
    return samples


STATUS_CALLS = [0]


def status(ng_):
    """The parsed figures; each call is itself a 2xx of mode loop, counted
    after it answered."""
    STATUS_CALLS[0] += 1
    r = request(ng_.port2, "GET", "/status")
    assert r.status == 200, r.text
    assert r.header("Content-Type").startswith("text/plain; version=0.0.4")
    return parse(r.text)


def value(s, name, **labels):
    return s[(name, frozenset(labels.items()))]


def test_output_parses_and_has_every_family(ng):
    s = status(ng)
    names = {n for n, _ in s}
    for n in ("nginx_jvm_workers", "nginx_jvm_requests_total",
              "nginx_jvm_requests_in_flight", "nginx_jvm_queue_depth",
              "nginx_jvm_rejected_total", "nginx_jvm_timeouts_total",
              "nginx_jvm_handler_seconds_bucket",
              "nginx_jvm_handler_seconds_sum",
              "nginx_jvm_handler_seconds_count",
              "nginx_jvm_heap_used_bytes", "nginx_jvm_heap_committed_bytes",
              "nginx_jvm_gc_collections_total", "nginx_jvm_gc_seconds_total",
              "nginx_jvm_threads", "nginx_jvm_classes_loaded"):
        assert n in names, n
    # the first server's location answers the same
    r = request(ng.port, "GET", "/status")
    assert r.status == 200 and "nginx_jvm_workers" in r.text


def test_every_worker_publishes_its_jvm_figures(ng):
    assert wait_for(lambda: value(status(ng), "nginx_jvm_workers") == 2, 60)
    s = status(ng)
    pids = {dict(l)["pid"] for n, l in s if n == "nginx_jvm_heap_used_bytes"}
    assert pids == {str(p) for p in ng.worker_pids()}
    workers = {dict(l)["worker"] for n, l in s if n == "nginx_jvm_threads"}
    assert workers == {"0", "1"}
    for n, l in s:
        if n == "nginx_jvm_heap_used_bytes":
            committed = s[("nginx_jvm_heap_committed_bytes", l)]
            assert 0 < s[(n, l)] <= committed
        if n in ("nginx_jvm_threads", "nginx_jvm_classes_loaded"):
            assert s[(n, l)] > 0


def settled_status(ng):
    """A snapshot once every worker has published what it counted before:
    two snapshots a publication (1 s) apart whose request counts differ by
    the first status request at most (counted as it answered)."""
    def settled():
        a = status(ng)
        time.sleep(1.2)                 # a publication of every worker
        b = status(ng)
        moved = {k: b[k] - a.get(k, 0) for k in b
                 if k[0] == "nginx_jvm_requests_total" and b[k] != a.get(k, 0)}
        loop_2xx = ("nginx_jvm_requests_total",
                    frozenset({("mode", "loop"), ("status", "2xx")}))
        return b if set(moved) <= {loop_2xx} and moved.get(loop_2xx, 0) <= 1 \
            else None
    s = wait_for(settled, 60)
    assert s, "the figures kept moving"
    return s


def test_counters_add_up_across_workers(ng, mode):
    # every worker publishes what it counted each second: from a snapshot
    # taken once that has happened, an earlier test's last requests are not
    # counted (the status requests of the wait are in `extra` below)
    calls = STATUS_CALLS[0]
    before = settled_status(ng)
    seen = set()
    for i in range(40):
        r = request(ng.port2, "GET", "/app?status=200")
        assert r.status == 200
        seen.add(r.header("X-Pid"))
    for i in range(10):
        assert request(ng.port2, "GET", "/app?status=404").status == 404
    for i in range(5):
        assert request(ng.port2, "GET", "/app?status=503").status == 503
    assert len(seen) == 2, "both workers served"

    def delta(s, cls):
        return (value(s, "nginx_jvm_requests_total", mode=mode, status=cls)
                - value(before, "nginx_jvm_requests_total", mode=mode,
                        status=cls))

    # the other worker's figures arrive within its next publication (1 s)
    assert wait_for(lambda: delta(status(ng), "4xx") == 10, 60)
    s = status(ng)
    # the 2xx: 40, and in loop mode the status requests answered since
    # `before`, as far as their worker has published them yet
    extra = STATUS_CALLS[0] - calls if mode == "loop" else 0
    assert 40 <= delta(s, "2xx") <= 40 + extra
    assert delta(s, "5xx") == 5
    # answered by handlers, not refused: no 503 counted as rejected
    assert value(s, "nginx_jvm_rejected_total") == \
        value(before, "nginx_jvm_rejected_total")
    # the histogram counts every response, cumulatively
    count = value(s, "nginx_jvm_handler_seconds_count")
    total = sum(v for (n, _), v in s.items()
                if n == "nginx_jvm_requests_total")
    assert count == total
    buckets = sorted((float(dict(l)["le"]), v) for (n, l), v in s.items()
                     if n == "nginx_jvm_handler_seconds_bucket")
    assert buckets[-1] == (float("inf"), count)
    assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:]))
    assert value(s, "nginx_jvm_handler_seconds_sum") > 0


@pytest.mark.log_allows(r"the thread pool's queue is full")
def test_in_flight_queue_and_503(ng):
    before = status(ng)
    answers = []

    def busy():
        answers.append(request(ng.port2, "GET", "/busy?sleep=800").status)

    threads = [threading.Thread(target=busy) for _ in range(14)]
    for t in threads:
        t.start()
    # while they are under way (5 x 800 ms a worker)
    during = wait_for(lambda: (lambda s: s if value(
        s, "nginx_jvm_requests_in_flight") >= 2 and value(
        s, "nginx_jvm_queue_depth") >= 1 else None)(status(ng)), 60)
    for t in threads:
        t.join()
    refused = answers.count(503)
    # 14 requests over 2 workers of 1 thread and a queue of 4 each
    assert refused >= 2 and answers.count(200) + refused == 14
    assert during, "never 2 in flight and 1 queued"
    assert wait_for(lambda: value(status(ng), "nginx_jvm_rejected_total")
                    - value(before, "nginx_jvm_rejected_total") == refused, 60)
    # the status request itself is in flight while it answers
    assert wait_for(lambda: value(status(ng), "nginx_jvm_requests_in_flight")
                    == 1, 60)


@pytest.mark.log_allows(r"jvm_response_timeout")
def test_504_counted_across_workers(ng):
    before = value(status(ng), "nginx_jvm_timeouts_total")
    for _ in range(3):
        assert request(ng.port2, "GET", "/slow?sleep=1000").status == 504
    assert value(status(ng), "nginx_jvm_timeouts_total") == before + 3
    time.sleep(1)                       # the handlers finish, late, unread


def test_bad_configuration(ng):
    n = Nginx("location /s { jvm_status; jvm_content testapp.Answer; }",
              classpath="java")
    try:
        r = n.test_config()
        assert r.returncode != 0
        assert '"jvm_content" directive is duplicate' in r.stderr
        n2 = Nginx("location /s { jvm_status x; }", classpath="java")
        r = n2.test_config()
        assert r.returncode != 0
        assert 'invalid number of arguments in "jvm_status"' in r.stderr
        n2.cleanup()
    finally:
        n.cleanup()
