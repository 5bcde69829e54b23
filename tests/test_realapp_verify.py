"""bench/realapp's verification (verify.py): it passes the realapp on
nginx-jvm against a real PostgreSQL (Debian's, a private cluster on a
loopback port started here: bench/realapp/pg.py), and it fails servers that
break TechEmpower's rules, each break on the test type it breaks.

The broken servers are a small Python server (below) that answers every
type correctly unless told to break one thing; its correct form passes,
so each failure is the break's."""

import email.utils
import http.server
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from harness import BUILD, JAR, RING_JARS, ROOT, Nginx

REALAPP = ROOT / "bench" / "realapp"
sys.path.insert(0, str(REALAPP))
import pg  # noqa: E402
import verify  # noqa: E402

HICCUP = "/usr/share/java/hiccup.jar"
LIBS = BUILD / "realapp-lib"


@pytest.fixture(scope="module")
def db():
    why = pg.missing_reason()
    if why:
        pytest.skip(why)
    with pg.Postgres(shared_buffers="32MB", max_connections=40) as p:
        yield p


# --- nginx-jvm --------------------------------------------------------------

def realapp_classpath():
    missing = [p for p in (HICCUP, LIBS / "HikariCP-5.1.0.jar")
               if not Path(p).exists()]
    assert not missing, ("missing %s: run `make all` (scripts/install-deps.sh"
                         " installs hiccup, make realapp-libs HikariCP)"
                         % missing)
    return [str(JAR), str(BUILD / "lib") + "/*", str(LIBS) + "/*",
            str(REALAPP / "src"), HICCUP] + RING_JARS


@pytest.fixture(scope="module")
def ng(mode, db):
    n = Nginx(locations="location / { jvm_content realapp.core/handler; }",
              http='    jvm_options "-Drealapp.db=%s" "-Drealapp.pool=3";'
              % db.jdbc_url(),
              classpath=realapp_classpath(), workers=2, mode=mode)
    with n:
        yield n


def types_of(mode):
    # on the event loop only the types without a database: a query there
    # would hold up every request of the worker
    return ("json", "plaintext") if mode == "loop" else verify.TYPES


def test_nginx_jvm_passes(ng, db, mode):
    report = verify.verify(ng.port, types_of(mode), db)
    assert report.ok, report.text()
    assert sorted(report.checked) == sorted(types_of(mode))
    if mode != "loop":
        # every query and update case was sent
        assert report.checked["queries"] == len(verify.QUERY_CASES)
        assert report.checked["updates"] == len(verify.UPDATE_CASES)


def test_nginx_jvm_fortunes_bytes(ng, mode):
    """The exact bytes of the fortunes page: escaped, UTF-8, sorted."""
    if mode == "loop":
        pytest.skip("the database types run in pool and virtual mode")
    r = ng.get("/fortunes")
    text = r.body.decode("utf-8")
    assert "&lt;script&gt;" in text and "<script>" not in text
    assert "\u30d5\u30ec\u30fc\u30e0\u30ef\u30fc\u30af" in text
    assert text.index("<td>0</td>") < text.index("<td>3</td>")


# --- the broken servers -----------------------------------------------------

class Stub(http.server.BaseHTTPRequestHandler):
    """TechEmpower's six types, right unless self.server.broken names a
    break; World read from a copy taken at the start, updates written with
    psql."""
    protocol_version = "HTTP/1.1"
    server_version = "stub"
    sys_version = ""

    def log_message(self, *args):
        pass

    def answer(self, ctype, body):
        broken = self.server.broken
        if broken == "no-date":
            self.send_response_only(200)
            self.send_header("Server", "stub")
        elif broken == "stale-date":
            self.send_response_only(200)
            self.send_header("Server", "stub")
            self.send_header("Date", email.utils.formatdate(
                time.time() - 3600, usegmt=True))
        elif broken == "no-server":
            self.send_response_only(200)
            self.send_header("Date", self.date_time_string())
        else:
            self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def queries(self, query):
        q = dict(p.split("=", 1) for p in query.split("&")
                 if "=" in p).get("queries")
        try:
            n = int(q)
        except (TypeError, ValueError):
            n = 1
        if self.server.broken == "unclamped":
            return max(0, n)
        return max(1, min(500, n))

    def world(self, i):
        w = {"id": i, "randomNumber": self.server.worlds[i]}
        if self.server.broken == "string-numbers":
            w = {k: str(v) for k, v in w.items()}
        return w

    def do_GET(self):
        path, _, query = self.path.partition("?")
        s = self.server
        ids = lambda n: [random.randint(1, 10000) for _ in range(n)]
        if path == "/plaintext":
            return self.answer("text/plain", b"Hello, World!")
        if path == "/json":
            return self.answer("text/plain" if s.broken == "wrong-type"
                               else "application/json",
                               json.dumps({"message": "Hello, World!"})
                               .encode())
        if path == "/db":
            return self.answer("application/json",
                               json.dumps(self.world(ids(1)[0])).encode())
        if path == "/queries":
            return self.answer("application/json", json.dumps(
                [self.world(i) for i in ids(self.queries(query))]).encode())
        if path == "/updates":
            ws = [{"id": i, "randomNumber": random.randint(1, 10000)}
                  for i in ids(self.queries(query))]
            if s.broken != "no-write" and ws:
                for w in ws:
                    s.worlds[w["id"]] = w["randomNumber"]
                s.db.query("UPDATE World SET randomNumber = v.n FROM "
                           "(VALUES %s) AS v(id, n) WHERE World.id = v.id"
                           % ",".join("(%d,%d)" % (i, s.worlds[i])
                                      for i in {w["id"] for w in ws}))
            return self.answer("application/json", json.dumps(ws).encode())
        if path == "/fortunes":
            rows = pg.FORTUNES + ([] if s.broken == "no-added"
                                  else [pg.ADDED_FORTUNE])
            if s.broken != "unsorted":
                rows = sorted(rows, key=lambda r: r[1])

            def esc(m):
                if s.broken == "unescaped":
                    return m
                return (m.replace("&", "&amp;").replace("<", "&lt;")
                        .replace(">", "&gt;").replace('"', "&quot;"))
            page = ("<!DOCTYPE html><html><head><title>Fortunes</title>"
                    "</head><body><table><tr><th>id</th><th>message</th>"
                    "</tr>%s</table></body></html>"
                    % "".join("<tr><td>%d</td><td>%s</td></tr>" % (i, esc(m))
                              for i, m in rows))
            return self.answer("text/html; charset=utf-8",
                               page.encode("utf-8"))
        self.send_error(404)


@pytest.fixture(scope="module")
def stub(db):
    """start(broken): a stub server on a free port, stopped at the end."""
    servers = []
    worlds = db.worlds()

    def start(broken=None):
        s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stub)
        s.daemon_threads = True
        s.broken, s.db, s.worlds = broken, db, dict(worlds)
        threading.Thread(target=s.serve_forever, daemon=True).start()
        servers.append(s)
        return s.server_address[1]
    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def test_the_correct_stub_passes(stub, db):
    report = verify.verify(stub(), verify.TYPES, db)
    assert report.ok, report.text()


# break -> (the types it must fail, words of the problem)
BREAKS = {
    "no-date": (verify.TYPES, "no Date header"),
    "stale-date": (verify.TYPES, "is off by"),
    "no-server": (verify.TYPES, "no Server header"),
    "wrong-type": (("json",), "Content-Type"),
    "unescaped": (("fortunes",), "differs at token"),
    "unsorted": (("fortunes",), "differs at token"),
    "no-added": (("fortunes",), "differs at token"),
    "unclamped": (("queries", "updates"), "objects, not"),
    "string-numbers": (("db", "queries"), "is not an integer"),
    "no-write": (("updates",), "were not written"),
}


@pytest.mark.parametrize("broken", sorted(BREAKS))
def test_a_broken_server_fails(stub, db, broken):
    failing, words = BREAKS[broken]
    report = verify.verify(stub(broken), verify.TYPES, db)
    assert not report.ok
    failed = sorted(t for t, p in report.problems.items() if p)
    assert failed == sorted(failing), report.text()
    for t in failing:
        assert any(words in p for p in report.problems[t]), report.text()


def test_the_command_line(stub, db):
    """verify.py's exit status: 0 when every type passes, 1 otherwise."""
    good, bad = stub(), stub("unescaped")
    runs = [subprocess.run(
        [sys.executable, str(REALAPP / "verify.py"), "--port", str(port),
         "--types", "json,fortunes", "--db-port", str(db.port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=120) for port in (good, bad)]
    assert runs[0].returncode == 0, runs[0].stdout
    assert runs[1].returncode == 1, runs[1].stdout
    assert "fortunes  FAIL" in runs[1].stdout
    assert "json      ok" in runs[1].stdout


def test_an_absent_server_fails(db):
    from harness import free_port
    report = verify.verify(free_port(), ("json",), db, timeout=5)
    assert not report.ok
    assert "request failed" in report.problems["json"][0]


def test_a_server_that_never_answers_fails(db):
    """Accepts, reads, says nothing: the verifier gives up after its
    timeout and fails the type, it does not hang."""
    import socket
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        report = verify.verify(listener.getsockname()[1], ("plaintext",), db,
                               timeout=2)
    finally:
        listener.close()
    assert not report.ok
    assert "request failed" in report.problems["plaintext"][0]


def test_the_database_script_starts_loads_and_removes():
    """pg.py start DIR / stop DIR, as a user runs it."""
    why = pg.missing_reason()
    if why:
        pytest.skip(why)
    top = Path(tempfile.mkdtemp(prefix="realapp-pg-test-"))
    os.chmod(top, 0o755)        # as root, the server runs as postgres
    d = top / "pg"
    r = subprocess.run([sys.executable, str(REALAPP / "pg.py"), "start",
                        str(d)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    try:
        assert r.returncode == 0, r.stdout
        port = int(re.search(r"listening on 127\.0\.0\.1:(\d+) ",
                             r.stdout).group(1))
        client = pg.Client(port)
        worlds = client.worlds()
        assert sorted(worlds) == list(range(1, pg.WORLD_ROWS + 1))
        assert all(1 <= n <= pg.WORLD_ROWS for n in worlds.values())
        # not all the same number: drawn at random
        assert len(set(worlds.values())) > pg.WORLD_ROWS // 2
        assert client.query("SELECT count(*) FROM Fortune") == [["12"]]
    finally:
        s = subprocess.run([sys.executable, str(REALAPP / "pg.py"), "stop",
                            str(d)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
    assert s.returncode == 0, s.stdout
    assert not d.exists()
    top.rmdir()
