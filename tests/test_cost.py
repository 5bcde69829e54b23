"""What a request cost the JVM, in production: $jvm_alloc_bytes and
$jvm_cpu_us in an access log, and their histograms in jvm_status, in every
mode. A handler that allocates a known array, one that spins for a known
time, a static file that never reaches the JVM."""

import re
import socket
import threading

import pytest

from harness import Nginx, parse_raw, request, wait_for
from test_status import parse, value

HTTP = """
    log_format cost '$uri $jvm_alloc_bytes $jvm_cpu_us';
    log_format each '$arg_alloc $jvm_alloc_bytes $msec $request_time';
"""

LOCATIONS = """
        access_log @PREFIX@/logs/cost.log cost;
        location = /status { jvm_status; }
        location /cost { jvm_content testapp.Cost; }
        location /async { jvm_async on; jvm_content testapp.Cost$Async; }
        location /each {
            access_log @PREFIX@/logs/each.log each;
            jvm_content testapp.Cost;
        }
        location /logged {
            jvm_mode loop;
            jvm_content testapp.Cost;
            jvm_log testapp.Cost;
        }
        location /pooled { jvm_mode pool; jvm_content testapp.Cost; }
        location /static/ { alias @PREFIX@/html/; }
"""

MB8 = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def ng(mode):
    with Nginx(LOCATIONS, http=HTTP, mode=mode, classpath="java") as n:
        with open(n.path("html", "f.txt"), "w") as f:
            f.write("static\n")
        yield n


def cost_lines(ng_, n, log="cost.log"):
    """The access log's lines once it has n of them, as (uri, bytes, us)."""
    path = ng_.path("logs", log)

    def read():
        with open(path) as f:
            return [l.split() for l in f.read().splitlines()]
    assert wait_for(lambda: len(read()) >= n, 60), read()
    return read()


def cpu_seconds(pid):
    """The process's user and system CPU time, in seconds (/proc)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / 100.0


def test_costs_in_the_log_and_the_histograms(ng):
    """Run as one test: the histograms count every JVM request of this
    nginx, so the order is fixed (nothing before the first /status)."""
    # a static request: no JVM handler ran
    r = ng.request("GET", "/static/f.txt")
    assert r.status == 200 and r.text == "static\n"

    # a known allocation, three times
    for _ in range(3):
        r = ng.request("GET", "/cost?alloc=%d" % MB8)
        assert r.status == 200, r.text

    # a known busy spin: 300 ms of the wall clock, the worker's CPU beside it
    pid = ng.worker_pids()[0]
    before = cpu_seconds(pid)
    r = ng.request("GET", "/cost?spin=300")
    assert r.status == 200, r.text
    spun_us = int(r.text)
    used_us = (cpu_seconds(pid) - before) * 1e6

    log = cost_lines(ng, 5)
    assert log[0] == ["/static/f.txt", "-", "-"], log[0]
    for uri, alloc, cpu in log[1:4]:
        assert uri == "/cost"
        assert int(alloc) >= MB8, log
        # the array and what serving the request took, nothing like twice it
        assert int(alloc) < MB8 + 1024 * 1024, log
        assert int(cpu) >= 0
    uri, alloc, cpu = log[4]
    cpu = int(cpu)
    assert uri == "/cost" and int(alloc) >= 0
    # one thread spun: its CPU time is no more than the spin's wall time
    # (plus the request's own work) and most of what the worker used
    # meanwhile (/proc counts in 10 ms ticks)
    assert 20000 <= cpu <= spun_us + 20000, (cpu, spun_us, used_us)
    assert cpu >= 0.6 * used_us - 20000, (cpu, spun_us, used_us)
    assert cpu <= used_us + 20000, (cpu, spun_us, used_us)

    # the histograms: the four /cost requests (this /status is counted after
    # it answered)
    s = parse(request(ng.port, "GET", "/status").text)
    assert value(s, "nginx_jvm_handler_alloc_bytes_count") == 4
    assert value(s, "nginx_jvm_handler_cpu_seconds_count") == 4
    assert value(s, "nginx_jvm_handler_alloc_bytes_bucket", le="+Inf") == 4
    # the three arrays of 8 MB are above 4 MB, below 16 MB
    assert value(s, "nginx_jvm_handler_alloc_bytes_bucket", le="16777216") == 4
    assert value(s, "nginx_jvm_handler_alloc_bytes_bucket", le="4194304") == 1
    assert value(s, "nginx_jvm_handler_alloc_bytes_sum") >= 3 * MB8
    # the spin: above 20 ms of CPU (the first requests of a new JVM may be
    # too: classes load, code compiles)
    assert value(s, "nginx_jvm_handler_cpu_seconds_bucket", le="0.01") <= 3
    assert value(s, "nginx_jvm_handler_cpu_seconds_bucket", le="+Inf") == 4
    assert value(s, "nginx_jvm_handler_cpu_seconds_sum") >= cpu / 1e6

    # now the status request itself is in the log, measured
    log = cost_lines(ng, 6)
    assert log[5][0] == "/status" and int(log[5][1]) > 0, log[5]



def test_async_handlers_are_measured_on_their_thread(ng):
    """jvm_async on: the handler's call is counted (here it answers within
    it), once."""
    before = len(cost_lines(ng, 1))
    r = ng.request("GET", "/async?alloc=%d" % MB8)
    assert r.status == 200, r.text
    uri, alloc, cpu = cost_lines(ng, before + 1)[before]
    assert uri == "/async"
    assert MB8 <= int(alloc) < MB8 + 1024 * 1024, alloc
    assert int(cpu) >= 0


MB = 1024 * 1024
SPIN_MS = 300


def test_concurrent_requests_each_get_their_own_figure(ng):
    """Requests whose handlers run at once (pool: a thread each of the
    pool; virtual: a virtual thread each, on the carriers): each allocates
    its own amount, i MB, then spins, and each line of the access log shows
    its own request's amount, never another's (the amounts are 1 MB apart,
    a request's own work is far less).  nginx's own times show that the
    handlers did overlap."""
    n = 12
    barrier = threading.Barrier(n)
    replies = [None] * n

    def client(i):
        s = socket.create_connection(("127.0.0.1", ng.port), timeout=60)
        try:
            barrier.wait(30)
            s.sendall(b"GET /each?alloc=%d&spin=%d HTTP/1.1\r\n"
                      b"Host: x\r\nConnection: close\r\n\r\n"
                      % ((i + 1) * MB, SPIN_MS))
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            replies[i] = parse_raw(data)
        finally:
            s.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(r is not None and r.status == 200 for r in replies), replies

    lines = cost_lines(ng, n, "each.log")
    assert len(lines) == n, lines
    amounts = set()
    for asked, alloc, _, _ in lines:
        asked, alloc = int(asked), int(alloc)
        assert asked <= alloc < asked + MB // 2, lines
        amounts.add(asked)
    assert amounts == {(i + 1) * MB for i in range(n)}, lines

    if ng.mode in ("loop", "coloop"):
        # on the loop one after the other (a coloop handler that never
        # parks holds the loop), within nginx's cached time: no spans
        return
    # the requests' spans in nginx (end - request time): handlers at once
    spans = [(float(end) - float(took), float(end))
             for _, _, end, took in lines]
    most = max(sum(1 for start, end in spans if start <= t < end)
               for t, _ in spans)
    assert most >= n // 2, spans


def test_a_log_handler_costs_no_other_request(ng):
    """jvm_log's handler (not counted: docs/directives.md) runs on the loop
    in loop mode, after the access log's line: what it allocates goes to no
    request, not to the next one, whatever that one's mode (here pool,
    whose start on the loop hands the C module no figure of its own)."""
    before = len(cost_lines(ng, 0))
    r = ng.request("GET", "/logged?alloc=%d" % MB8)
    assert r.status == 200, r.text
    r = ng.request("GET", "/pooled")
    assert r.status == 200, r.text
    logged, plain = cost_lines(ng, before + 2)[before:before + 2]
    assert logged[0] == "/logged" and plain[0] == "/pooled", (logged, plain)
    assert MB8 <= int(logged[1]) < MB8 + MB, logged
    assert int(plain[1]) < MB, plain

