"""An OTLP/HTTP receiver of the tracing tests' own (tests/test_tracing.py):
POST /v1/traces with protobuf bodies (the OpenTelemetry Java SDK's
http/protobuf exporter), decoded with opentelemetry-proto from PyPI
(scripts/install-deps.sh), and kept as plain dicts; GET /echo answers the
traceparent it was sent (an upstream behind proxy_pass).  Also a collector
that hangs: it accepts connections and never answers."""

import gzip
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def _value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


class Receiver:
    """Spans received, each {trace, span, parent, name, kind, start, end,
    attrs, status, service}; ids in lower-case hex as W3C writes them."""

    def __init__(self):
        self.spans = []
        self.posts = 0
        self.lock = threading.Lock()
        rx = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                req = trace_service_pb2.ExportTraceServiceRequest()
                req.ParseFromString(body)
                rx.add(req)
                out = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def do_GET(self):
                out = (self.headers.get("traceparent") or "-").encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def add(self, req):
        got = []
        for rs in req.resource_spans:
            service = {a.key: _value(a.value) for a in rs.resource.attributes}.get(
                "service.name")
            for ss in rs.scope_spans:
                for s in ss.spans:
                    got.append({
                        "trace": s.trace_id.hex(), "span": s.span_id.hex(),
                        "parent": s.parent_span_id.hex(), "name": s.name,
                        "kind": s.kind, "start": s.start_time_unix_nano,
                        "end": s.end_time_unix_nano,
                        "attrs": {a.key: _value(a.value) for a in s.attributes},
                        "status": s.status.code, "service": service,
                        "events": [e.name for e in s.events]})
        with self.lock:
            self.spans.extend(got)
            self.posts += 1

    def trace(self, trace_id):
        with self.lock:
            return [s for s in self.spans if s["trace"] == trace_id]

    def wait_trace(self, trace_id, n, timeout=30):
        """The trace's spans once there are n of them (or what came)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.trace(trace_id)
            if len(got) >= n:
                return got
            time.sleep(0.05)
        return self.trace(trace_id)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Hanging:
    """A collector that accepts and never answers (nor closes)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.held = []
        self.open = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while self.open:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(c)

    def close(self):
        self.open = False
        self.sock.close()
        for c in self.held:
            c.close()
