"""Tracing (docs/operations.md, "Tracing"): with OpenTelemetry configured
through jvm_options (-Dotel.*), one request is one trace, exported over
OTLP/HTTP to a real receiver on loopback (tests/otlp.py): nginx's server
span (its start and end, status, bytes, $jvm_cpu_us...), the handler's
span as its child and a span the handler made through the OpenTelemetry
API as the handler's child, in every mode of the run, for a Java and a
Clojure handler; the client's traceparent continued, sampled or not; a
subrequest's upstream sent one; a collector down or hanging costs no
request anything (the drops are counted in the error log); a server
without the configuration loads no OpenTelemetry class at all; and the
calls a handler makes through OpenTelemetry's library instrumentations
(JDBC, the JDK's HttpClient) are the handler span's children."""

import atexit
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness import (APPS, BUILD, JAR, JAVA_HOME, ROOT, Nginx, free_port,
                     request, ring_classpath, wait_for)

pytest.importorskip("opentelemetry.proto",
                    reason="opentelemetry-proto missing: scripts/install-deps.sh")
from otlp import Hanging, Receiver  # noqa: E402

OTEL_LIB = BUILD / "otel-lib"
SERVER, INTERNAL = 2, 1                 # OTLP's SpanKind numbers
ERROR = 2                               # OTLP's Status.code

_classes = None


def traced_classes():
    """tests/apps/otel compiled against the runtime and the OpenTelemetry API."""
    global _classes
    if _classes is None:
        if not (OTEL_LIB / ".done").exists():
            pytest.skip("build/otel-lib is missing: make otel-deps")
        out = tempfile.mkdtemp(prefix="nginx-jvm-otel-classes-")
        os.chmod(out, 0o755)
        atexit.register(shutil.rmtree, out, True)
        sources = [str(p) for p in (APPS / "otel").rglob("*.java")]
        javac = subprocess.run(
            [JAVA_HOME + "/bin/javac", "--release", "17", "-nowarn",
             "-cp", "%s:%s/*" % (JAR, OTEL_LIB), "-d", out] + sources,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert javac.returncode == 0, javac.stdout
        _classes = out
    return _classes


def otel_options(endpoint, *more):
    opts = ["-Dotel.traces.exporter=otlp",
            "-Dotel.exporter.otlp.endpoint=" + endpoint,
            "-Dotel.service.name=nginx-jvm-test",
            "-Dotel.bsp.schedule.delay=100"] + list(more)
    return "    jvm_options %s;\n" % " ".join(opts)


def locations(mode):
    # a handler that waits for its subrequest needs a thread of its own
    waits = "jvm_mode pool; " if mode == "loop" else ""
    return """
        jvm_warmup /java requests=3;
        location = /java { jvm_content tracing.Traced; }
        location = /fails { jvm_content tracing.Traced$Fails; }
        location = /slow { jvm_content tracing.Traced$Slow; }
        location = /clj { jvm_content testapp.tracing/handler; }
        location = /sub { %sjvm_content tracing.Sub; }
        location = /up { internal; proxy_pass http://127.0.0.1:@UP@/echo; }
        location = /static { return 200 "static\\n"; }
        location = /status { jvm_status; }
""" % waits


def traced_nginx(mode, endpoint, up_port, *more, http=""):
    return Nginx(locations(mode).replace("@UP@", str(up_port)),
                 http=otel_options(endpoint, *more) + http, mode=mode,
                 classpath=ring_classpath() + [str(OTEL_LIB) + "/*",
                                               traced_classes()])


@pytest.fixture(scope="module")
def rx():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(scope="module")
def ng(mode, rx):
    with traced_nginx(mode, "http://127.0.0.1:%d" % rx.port, rx.port) as n:
        yield n


def ids():
    """A client's fresh trace and span ids (the receiver outlives a mode)."""
    return os.urandom(16).hex(), os.urandom(8).hex()


def words(body):
    return dict(w.split("=", 1) for w in body.split())


def spans_by_name(spans):
    return {s["name"]: s for s in spans}


def check_trace(rx, seen, child_name):
    """The three spans of one request, linked, and the ids the handler saw."""
    spans = rx.wait_trace(seen["trace"], 3)
    assert len(spans) == 3, spans
    server = [s for s in spans if s["kind"] == SERVER]
    assert len(server) == 1, spans
    server = server[0]
    handler = [s for s in spans if s["parent"] == server["span"]]
    assert len(handler) == 1, spans
    handler = handler[0]
    child = spans_by_name(spans)[child_name]
    assert handler["kind"] == INTERNAL
    assert handler["span"] == seen["span"] == seen["current"]
    assert child["parent"] == handler["span"] == seen["span"]
    assert child["span"] == seen["child"]
    # nginx's request holds the handler's, which holds the child's
    assert server["start"] <= handler["start"] <= child["start"]
    assert child["end"] <= handler["end"] <= server["end"]
    assert {s["service"] for s in spans} == {"nginx-jvm-test"}
    return server, handler, child


def test_java_request_is_one_trace(ng, rx):
    r = request(ng.port, "GET", "/java?x=1", headers={"User-Agent": "tracing-test"})
    assert r.status == 200, r
    seen = words(r.text)
    assert len(seen["trace"]) == 32 and len(seen["span"]) == 16
    assert seen["traceparent"] == "00-%s-%s-01" % (seen["trace"], seen["span"])
    server, handler, child = check_trace(rx, seen, "child-work")
    a = server["attrs"]
    assert server["name"] == "GET" and server["parent"] == ""
    assert a["http.request.method"] == "GET"
    assert a["url.path"] == "/java" and a["url.query"] == "x=1"
    assert a["url.scheme"] == "http"
    assert a["server.port"] == ng.port
    assert a["client.address"] == "127.0.0.1"
    assert a["network.protocol.version"] == "1.1"
    assert a["user_agent.original"] == "tracing-test"
    assert a["http.response.status_code"] == 200
    assert a["http.response.body.size"] == len(r.body)
    assert a["nginx.bytes_sent"] > len(r.body)
    # what the request cost the JVM, as $jvm_cpu_us and $jvm_alloc_bytes say
    assert a["nginx.jvm.cpu_us"] >= 0 and a["nginx.jvm.alloc_bytes"] > 0
    # the span lasts at least what nginx logs as $request_time (which
    # ends at the event loop's last wake-up, ms resolution)
    took = (server["end"] - server["start"]) / 1e9
    assert took + 0.001 >= a["nginx.request_time"], (took, a)
    assert handler["name"] == "tracing.Traced"
    assert handler["attrs"]["nginx.jvm.handler"] == "tracing.Traced"
    assert child["attrs"]["testapp.work"] == "done"


def test_clojure_request_is_one_trace(ng, rx):
    r = request(ng.port, "GET", "/clj")
    assert r.status == 200, r
    seen = words(r.text)
    server, handler, _ = check_trace(rx, seen, "clj-child")
    assert handler["name"] == "testapp.tracing/handler"
    assert server["attrs"]["url.path"] == "/clj"


def test_client_traceparent_is_continued(ng, rx):
    tid, sid = ids()
    r = request(ng.port, "GET", "/java", headers={
        "traceparent": "00-%s-%s-01" % (tid, sid), "tracestate": "vendor=x"})
    seen = words(r.text)
    assert seen["trace"] == tid
    server, _, _ = check_trace(rx, seen, "child-work")
    assert server["parent"] == sid


def test_unsampled_client_trace_is_continued_not_exported(ng, rx):
    tid, sid = ids()
    r = request(ng.port, "GET", "/java", headers={
        "traceparent": "00-%s-%s-00" % (tid, sid)})
    seen = words(r.text)
    # parentbased_always_on: the client's decision; the ids still go on
    assert seen["trace"] == tid and seen["span"] != sid
    assert seen["traceparent"] == "00-%s-%s-00" % (tid, seen["span"])
    # a sampled request after it is exported: by then nothing of this one
    # was (one worker, one export queue, exported in the order the spans
    # ended; this request's ended at its log phase, before the next one)
    later = words(request(ng.port, "GET", "/java").text)
    assert len(rx.wait_trace(later["trace"], 3)) == 3
    assert rx.trace(tid) == []


def test_malformed_traceparent_starts_a_new_trace(ng, rx):
    r = request(ng.port, "GET", "/java", headers={
        "traceparent": "00-zz" + "0" * 30 + "-00f067aa0ba902b7-01"})
    seen = words(r.text)
    assert not seen["trace"].startswith("zz")
    server, _, _ = check_trace(rx, seen, "child-work")
    assert server["parent"] == ""


@pytest.mark.log_allows(r"the handler threw", r"traced failure",
                        r"IllegalStateException", r"^\s+at ")
def test_failing_handler_span_is_an_error(ng, rx):
    tid, sid = ids()
    r = request(ng.port, "GET", "/fails", headers={
        "traceparent": "00-%s-%s-01" % (tid, sid)})
    assert r.status == 500
    spans = rx.wait_trace(tid, 2)
    assert len(spans) == 2, spans
    server = [s for s in spans if s["kind"] == SERVER][0]
    handler = [s for s in spans if s["kind"] != SERVER][0]
    assert server["attrs"]["http.response.status_code"] == 500
    assert server["status"] == ERROR and handler["status"] == ERROR
    assert "exception" in handler["events"]


def test_subrequest_carries_traceparent(ng, rx):
    r = request(ng.port, "GET", "/sub?to=/up")
    assert r.status == 200, r
    seen = words(r.text)
    # the upstream behind the subrequest's proxy_pass got the handler's span
    tid = seen["upstream"].split("-")[1]
    assert seen["upstream"] == "00-%s-%s-01" % (tid, seen["span"])
    spans = rx.wait_trace(tid, 2)
    assert seen["span"] in {s["span"] for s in spans}
    server = [s for s in spans if s["kind"] == SERVER]
    assert len(server) == 1, spans        # the subrequest has no span of its own


def test_client_gone_mid_handler_still_ends_its_trace(ng, rx):
    """The client leaves while the handler runs: the log phase ends the
    server span (and the handler's, still running off the loop) at once;
    the handler's own end later changes nothing."""
    tid, sid = ids()
    s = socket.create_connection(("127.0.0.1", ng.port))
    s.sendall(("GET /slow?ms=600 HTTP/1.1\r\nHost: localhost\r\n"
               "traceparent: 00-%s-%s-01\r\n\r\n" % (tid, sid)).encode())
    # the handler runs: its first child span (ended at once) was exported
    assert wait_for(lambda: [x for x in rx.trace(tid)
                             if x["name"] == "slow-started"], 30), rx.trace(tid)
    s.close()
    # the handler returns: its last child span, ended just before it does
    spans = rx.wait_trace(tid, 4)
    assert len(spans) == 4, spans
    server = [x for x in spans if x["kind"] == SERVER]
    assert len(server) == 1 and server[0]["parent"] == sid, spans
    handler = [x for x in spans if x["parent"] == server[0]["span"]]
    assert len(handler) == 1, spans
    children = {x["name"]: x for x in spans if x["parent"] == handler[0]["span"]}
    assert sorted(children) == ["slow-done", "slow-started"], spans
    if ng.mode != "loop":
        # ended when the client left, not when the handler returned (on
        # the loop, the handler holds it until then)
        assert server[0]["end"] <= children["slow-done"]["start"], spans
        assert handler[0]["end"] <= children["slow-done"]["start"], spans
    # what the runtime does once the handler has returned (its own end of
    # the handler's span, already ended) exports nothing: a later request's
    # spans, of the same worker's queue, come and no more of this trace
    later = words(request(ng.port, "GET", "/java").text)
    assert len(rx.wait_trace(later["trace"], 3)) == 3
    assert len(rx.trace(tid)) == 4, rx.trace(tid)


def test_warmup_requests_are_not_traced(ng, rx):
    """jvm_warmup's requests (the worker's own, before it accepts) ran
    /java: none of them is a span."""
    later = words(request(ng.port, "GET", "/java").text)
    assert len(rx.wait_trace(later["trace"], 3)) == 3
    assert rx.spans
    assert not [s for s in rx.spans
                if s["attrs"].get("user_agent.original") == "nginx-jvm-warmup"]
    assert ng.log_lines(r"jvm_warmup|warm", 0), ng.log_text()


def test_what_no_jvm_handler_serves_is_not_traced(ng, rx):
    n = len(rx.spans)
    assert request(ng.port, "GET", "/static").status == 200
    # /java's spans come after any /static one would have (one worker's
    # queue, exported in order)
    later = words(request(ng.port, "GET", "/java").text)
    assert len(rx.wait_trace(later["trace"], 3)) == 3
    assert not [s for s in rx.spans[n:] if s["attrs"].get("url.path") == "/static"]


def timed_requests(port, n):
    took = []
    for _ in range(n):
        t = time.monotonic()
        r = request(port, "GET", "/java", timeout=10)
        took.append(time.monotonic() - t)
        assert r.status == 200, r
        assert len(words(r.text)["trace"]) == 32
    return took


# The SDK's OTLP exporter says once in a while that it cannot export
@pytest.mark.log_allows(r"Failed to export", r"ConnectException",
                        r"Connection refused", r"^\s+at ", r"^Caused by",
                        r"^\s+\.\.\. \d+ more")
def test_collector_down_costs_requests_nothing(mode, rx):
    refused = free_port()           # nothing listens there
    with traced_nginx(mode, "http://127.0.0.1:%d" % refused, rx.port,
                      "-Dotel.bsp.max.queue.size=8",
                      "-Dotel.bsp.max.export.batch.size=4") as n:
        took = timed_requests(n.port, 60)
        assert max(took) < 2.0, took


@pytest.mark.log_allows(r"Failed to export", r"timeout", r"Timeout",
                        r"^\s+at ", r"^Caused by", r"^\s+\.\.\. \d+ more")
def test_collector_hanging_costs_requests_nothing(mode, rx):
    hang = Hanging()
    try:
        # the exporter waits 10 s for an answer that never comes: its
        # queue (8 spans) fills at once, and what does not fit is dropped
        with traced_nginx(mode, "http://127.0.0.1:%d" % hang.port, rx.port,
                          "-Dotel.bsp.max.queue.size=8",
                          "-Dotel.bsp.max.export.batch.size=4",
                          "-Dotel.exporter.otlp.timeout=10000") as n:
            since = n.log_size()
            t0 = time.monotonic()
            took = timed_requests(n.port, 60)
            assert max(took) < 2.0, took
            # 60 requests in less than one export's timeout: none waited on it
            assert time.monotonic() - t0 < 10, took
            assert wait_for(lambda: hang.held, 10), "the exporter never connected"
            line = n.wait_log(r"tracing: \d+ spans dropped", since=since,
                              timeout=30)
            assert line, n.log_text(since)
            # and counted in jvm_status, every worker's
            assert wait_for(lambda: int(re.search(
                r"^nginx_jvm_trace_dropped_total (\d+)$",
                n.get("/status").text, re.M).group(1)) > 0, 10)
    finally:
        hang.close()


def test_off_loads_no_opentelemetry_class(mode, rx):
    """No otel.traces.exporter: the SDK on the class path stays unloaded."""
    d = tempfile.mkdtemp(prefix="nginx-jvm-otel-off-")
    os.chmod(d, 0o755)
    try:
        log = os.path.join(d, "classes.log")
        # only a handler that names no OpenTelemetry class (handlers load
        # at the worker's start)
        waits = "jvm_mode pool; " if mode == "loop" else ""
        with Nginx("""
        location = /sub { %sjvm_content tracing.Sub; }
        location = /up { internal; proxy_pass http://127.0.0.1:%d/echo; }
""" % (waits, rx.port),
                   http="    jvm_options -Xlog:class+load=info:file=%s;\n" % log,
                   mode=mode, classpath=ring_classpath()
                   + [str(OTEL_LIB) + "/*", traced_classes()]) as n:
            r = request(n.port, "GET", "/sub?to=/up")
            assert words(r.text)["span"] == "null"
            assert words(r.text)["upstream"] == "-"    # no traceparent sent
            assert wait_for(lambda: os.path.exists(log), 10)
            with open(log) as f:
                loaded = f.read()
            assert "nginx.jvm.Worker" in loaded
            assert "io.opentelemetry" not in loaded
            assert "nginx.jvm.TracingSdk" not in loaded
    finally:
        shutil.rmtree(d, True)


# --- Library instrumentations: JDBC and the JDK's HttpClient ----------------

OTEL_TEST_LIB = BUILD / "otel-test-lib"
PG_DRIVER = BUILD / "realapp-lib" / "postgresql-42.7.4.jar"
INSTRUMENTED = APPS / "otel-instrumentation" / "tracing"
CLIENT = 3                              # OTLP's SpanKind CLIENT


def instrumented(source, libs):
    """A handler of tests/apps/otel-instrumentation compiled against the
    runtime, the OpenTelemetry API and its library instrumentations: the
    directory of its classes (removed at exit)."""
    if not (OTEL_TEST_LIB / ".done").exists():
        pytest.skip("build/otel-test-lib is missing: make")
    out = tempfile.mkdtemp(prefix="nginx-jvm-otel-instr-")
    os.chmod(out, 0o755)
    atexit.register(shutil.rmtree, out, True)
    javac = subprocess.run(
        [JAVA_HOME + "/bin/javac", "--release", "17", "-nowarn", "-cp",
         ":".join(libs), "-d", out, str(INSTRUMENTED / source)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert javac.returncode == 0, javac.stdout
    return out


@pytest.fixture(scope="module")
def db():
    sys.path.insert(0, str(ROOT / "bench" / "realapp"))
    import pg
    if pg.missing_reason() is not None:
        pytest.skip(str(pg.missing_reason()))
    if not (OTEL_TEST_LIB / ".done").exists() or not PG_DRIVER.exists():
        pytest.skip("build/otel-test-lib or build/realapp-lib is missing: make")
    with pg.Postgres(shared_buffers="32MB", max_connections=20) as p:
        yield p


def test_jdbc_calls_are_the_handlers_children(mode, rx, db):
    """A query through a DataSource that OpenTelemetry's JDBC library
    instrumentation wraps is a child span of the handler's (the handler's
    span is current on its thread), in every mode (loop: a pool thread,
    as a blocking call must)."""
    libs = [str(JAR), str(OTEL_LIB) + "/*", str(OTEL_TEST_LIB) + "/*",
            str(PG_DRIVER)]
    out = instrumented("Jdbc.java", libs)
    waits = "jvm_mode pool; " if mode == "loop" else ""
    with Nginx("        location = /jdbc { %sjvm_content tracing.Jdbc; }\n"
               % waits,
               http=otel_options("http://127.0.0.1:%d" % rx.port,
                                 "-Dtest.jdbc.url=" + db.jdbc_url()),
               mode=mode, classpath=libs + [out]) as n:
        for _ in range(2):      # the first opens the connection
            r = request(n.port, "GET", "/jdbc")
            assert r.status == 200, r
            seen = words(r.text)
            assert seen["answer"] == "42"
            spans = rx.wait_trace(seen["trace"], 3)
            queries = [s for s in spans
                       if s["attrs"].get("db.system") == "postgresql"]
            assert queries, spans
            assert all(q["parent"] == seen["span"] for q in queries), spans
            assert any("SELECT" in q["name"] for q in queries), queries


class Backend:
    """A plain HTTP server on loopback (Python's http.server): answers
    "backend" to every GET and keeps the traceparent each one came with."""

    def __init__(self):
        self.seen = []
        backend = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                backend.seen.append(self.headers.get("traceparent"))
                out = b"backend"
                self.send_response(200)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def backend():
    b = Backend()
    yield b
    b.close()


def test_http_client_calls_are_the_handlers_children(mode, rx, backend):
    """A GET through the JDK's HttpClient that OpenTelemetry's library
    instrumentation wraps (JavaHttpClientTelemetry.newHttpClient) is one
    trace with the request: server span, the handler's, and the call's
    CLIENT span as the handler's child, with the HTTP client attributes;
    the backend got a traceparent naming the client span. In every mode
    (loop: a pool thread, as a blocking call must)."""
    libs = [str(JAR), str(OTEL_LIB) + "/*", str(OTEL_TEST_LIB) + "/*"]
    out = instrumented("Http.java", libs)
    waits = "jvm_mode pool; " if mode == "loop" else ""
    with Nginx("        location = /http { %sjvm_content tracing.Http; }\n"
               % waits,
               http=otel_options("http://127.0.0.1:%d" % rx.port),
               mode=mode, classpath=libs + [out]) as n:
        for _ in range(2):      # the first makes the client
            before = len(backend.seen)
            r = request(n.port, "GET", "/http?port=%d" % backend.port)
            assert r.status == 200, (r, n.log_text())
            seen = words(r.text)
            assert seen["status"] == "200" and seen["answer"] == "backend", seen
            spans = rx.wait_trace(seen["trace"], 3)
            assert len(spans) == 3, spans
            server = [s for s in spans if s["kind"] == SERVER]
            handler = [s for s in spans if s["span"] == seen["span"]]
            client = [s for s in spans if s["kind"] == CLIENT]
            assert len(server) == 1 and len(handler) == 1 and len(client) == 1, spans
            server, handler, client = server[0], handler[0], client[0]
            assert handler["parent"] == server["span"]
            assert handler["kind"] == INTERNAL
            assert client["parent"] == handler["span"]
            assert server["start"] <= handler["start"] <= client["start"]
            assert client["end"] <= handler["end"] <= server["end"]
            a = client["attrs"]
            assert client["name"] == "GET", client
            assert a["http.request.method"] == "GET"
            assert a["url.full"] == "http://127.0.0.1:%d/backend?q=1" % backend.port
            assert a["server.address"] == "127.0.0.1"
            assert a["server.port"] == backend.port
            assert a["http.response.status_code"] == 200
            assert client["status"] != ERROR
            # the backend was sent the client span's context, sampled
            assert backend.seen[before:] == [
                "00-%s-%s-01" % (seen["trace"], client["span"])], backend.seen
