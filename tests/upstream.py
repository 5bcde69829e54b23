"""A small HTTP upstream on loopback for proxy_pass and subrequest tests.

GET /echo answers a JSON object of the method, path, headers and body;
/slow?ms=N sleeps first; /status/N answers status N.  Every answer carries
X-Upstream and X-Drop, which header filters in the tests remove.  Runs in a
thread of the test process (ThreadingHTTPServer), stopped by the fixture.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _answer(self):
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        status = 200
        if url.path.startswith("/slow"):
            time.sleep(int(query.get("ms", ["1000"])[0]) / 1000.0)
        if url.path.startswith("/status/"):
            status = int(url.path.rsplit("/", 1)[1])
        out = json.dumps({"method": self.command, "path": url.path,
                          "query": url.query,
                          "headers": {k.lower(): v
                                      for k, v in self.headers.items()},
                          "body": body.decode("utf-8", "replace")}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.send_header("X-Upstream", "py")
        self.send_header("X-Drop", "1")
        if self.close_connection:
            # it closes after this answer (an HTTP/1.0 request): said, so
            # an nginx with upstream keepalive does not keep the connection
            # and send the next request into the close
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _answer


class Upstream:
    def __init__(self):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def up():
    """The module's upstream (a test module imports this fixture by name)."""
    with Upstream() as u:
        yield u
