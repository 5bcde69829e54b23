"""A body that never yields a byte stops when its client leaves.

A seq of empty strings without end (`(repeat "")`) or an InputStream
whose every read gives 0 bytes produces nothing, forever: nothing is ever
written to the client, so no failed write tells the worker it left.  Each
must still stop once the client has gone, in every mode: the producer is
no longer called, the worker's CPU falls back to idle, no task is left and
the stream is closed.  While the client stays the worker goes on serving
others.
"""

import os
import socket
import time

import pytest

from harness import Nginx, request, wait_for

LOCATIONS = """
        location /ring/empties { jvm_content testapp.endless/empties; }
        location /ring/repeat { jvm_content testapp.endless/repeat-empty; }
        location /ring/realized { jvm_mode loop;
                                  jvm_content testapp.endless/realized-count; }
        location /java/ { jvm_content testapp.Endless; }
        location /status/ { jvm_mode loop; jvm_content testapp.Endless; }
"""


@pytest.fixture(scope="module")
def ng(mode):
    with Nginx(LOCATIONS, mode=mode) as n:
        assert n.get("/status/ok").text == "ok"
        yield n


def cpu_seconds(pid):
    """User and system time of every thread of the process."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle(pid, over=1.0, most=0.1):
    """The process used at most `most` of a core over `over` seconds."""
    before = cpu_seconds(pid)
    time.sleep(over)
    return cpu_seconds(pid) - before <= most * over


def open_and_wait(ng, path, wait=0.5):
    s = socket.create_connection(("127.0.0.1", ng.port), timeout=10)
    s.sendall(("GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n" % path).encode())
    time.sleep(wait)
    return s


def live(ng):
    # the /status/live request itself is in flight while it answers
    return ng.get("/status/live").text


def settled(ng, pid):
    assert wait_for(lambda: live(ng) == "0 1", 60), live(ng)
    assert wait_for(lambda: idle(pid), 60), \
        "the worker still spins after the client left"


def stops_counting(count):
    """The counter stands still for half a second."""
    def still():
        a = count()
        time.sleep(0.5)
        return count() == a
    return wait_for(still, 60)


def test_ring_seq_of_empty_strings_stops(ng):
    (pid,) = ng.worker_pids()
    name = "empties-%s-%d" % (ng.mode, time.monotonic_ns())
    s = open_and_wait(ng, "/ring/empties?name=" + name)

    def count():
        return int(ng.get("/ring/realized?name=" + name).text)

    # the stream is alive, and the worker serves others meanwhile
    assert count() > 0
    assert ng.get("/status/ok").text == "ok"
    s.close()
    assert stops_counting(count), "the seq is still realized after the client left"
    settled(ng, pid)
    assert ng.log_problems() == []


def test_ring_repeat_empty_stops(ng):
    (pid,) = ng.worker_pids()
    s = open_and_wait(ng, "/ring/repeat")
    assert ng.get("/status/ok").text == "ok"
    s.close()
    settled(ng, pid)
    assert ng.log_problems() == []


def test_java_stream_reading_zero_bytes_stops_and_is_closed(ng):
    (pid,) = ng.worker_pids()
    name = "zeros-%s-%d" % (ng.mode, time.monotonic_ns())
    s = open_and_wait(ng, "/java/zeros?name=" + name)

    def reads():
        return ng.get("/status/reads?name=" + name).text.split()

    assert int(reads()[0]) > 0
    assert ng.get("/status/ok").text == "ok"
    s.close()
    assert stops_counting(lambda: reads()[0]), "still read after the client left"
    assert wait_for(lambda: reads()[1] == "true", 60), "the stream was not closed"
    settled(ng, pid)
    assert ng.log_problems() == []


def test_several_dead_streams_at_once_all_stop(ng):
    """Clients of dead streams that leave at different moments."""
    (pid,) = ng.worker_pids()
    socks = [open_and_wait(ng, p, wait=0.05) for p in
             ["/ring/repeat", "/java/zeros?name=many-%s" % ng.mode,
              "/ring/empties?name=many-%s" % ng.mode] * 3]
    assert ng.get("/status/ok").text == "ok"
    for s in socks:
        s.close()
        time.sleep(0.05)
    settled(ng, pid)
    assert ng.log_problems() == []
