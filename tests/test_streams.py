"""Long-lived streams from asynchronous handlers: server-sent events written
after the handler returned, each flushed at once, not cut by timeouts while
the client stays, and stopped promptly when it leaves."""

import time

from harness import open_get, read_edn, read_until, wait_for

LOCATIONS = """
        location /sse { jvm_async on; jvm_response_timeout 1s;
                        jvm_content testapp.streams/sse; }
        location /producer { jvm_content testapp.streams/producer; }
"""


def open_stream(ng, path):
    return open_get(ng.port, path)


def test_events_written_after_the_handler_returned(ng):
    s = open_stream(ng, "/sse?name=short-%s&n=3&ms=50" % ng.mode)
    with s:
        data = read_until(s, b"0\r\n\r\n")
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    assert b"text/event-stream" in head
    for i in range(3):
        assert ("data: tick %d" % i).encode() in body
    assert body.endswith(b"0\r\n\r\n"), "the stream ends when the writer closes it"


def test_each_event_arrives_when_written(ng):
    """Events 400 ms apart arrive one by one, not at the end."""
    s = open_stream(ng, "/sse?name=paced-%s&n=4&ms=400" % ng.mode)
    with s:
        arrivals = []
        seen = b""
        start = time.monotonic()
        s.settimeout(10)
        while len(arrivals) < 4:
            chunk = s.recv(65536)
            assert chunk, "the stream ended early"
            seen += chunk
            while ("data: tick %d" % len(arrivals)).encode() in seen:
                arrivals.append(time.monotonic() - start)
        assert arrivals[3] - arrivals[0] >= 1.0, arrivals


def test_a_stream_outlives_the_response_timeout(ng):
    """jvm_response_timeout is 1 s: a stream of 3 s is not cut."""
    s = open_stream(ng, "/sse?name=long-%s&n=10&ms=300" % ng.mode)
    with s:
        data = read_until(s, b"0\r\n\r\n", timeout=15)
    assert b"data: tick 9" in data
    assert data.endswith(b"0\r\n\r\n")


def test_client_leaving_stops_the_producer(ng):
    name = "gone-%s" % ng.mode
    s = open_stream(ng, "/sse?name=%s&n=0&ms=100" % name)
    read_until(s, b"data: tick 2")
    s.close()
    left = time.monotonic()

    def stopped():
        return read_edn(ng.get("/producer?name=" + name).text).get(
            read_edn(":stopped"))
    assert wait_for(stopped, 60), "the producer's next write failed"
    assert "IOException" in stopped()
    assert time.monotonic() - left < 3
