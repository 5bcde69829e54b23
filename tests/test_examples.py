"""The example apps, served and used as a user would: hello, java and notes
through the launcher with the command of their README, live with its
nginx.conf."""

import contextlib
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse

import pytest

from harness import (JAR, JAVA_HOME, RING_JARS, ROOT, Launcher, Nginx,
                     ring_classpath)

EXAMPLES = ROOT / "examples"


def test_every_example_has_a_readme():
    examples = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())
    assert {"hello", "java", "live", "notes"} <= set(examples)
    for name in examples:
        readme = (EXAMPLES / name / "README.md").read_text()
        assert "nginx-jvm run" in readme or "nginx.conf" in readme, name


def readable_temp_dir(prefix):
    """A temporary directory the workers may read: started as root, the
    launcher runs them as nobody."""
    d = tempfile.mkdtemp(prefix=prefix)
    os.chmod(d, 0o755)
    return d


@pytest.fixture(scope="session")
def cache_dir():
    """One class cache for the examples of every mode: each is compiled
    once."""
    d = readable_temp_dir("nginx-jvm-examples-cache-")
    yield os.path.join(d, "cache")
    shutil.rmtree(d, ignore_errors=True)


def launch(args, mode, cache_dir, workers=1):
    return Launcher(args, mode=mode, workers=workers,
                    env={"NGINX_JVM_CACHE": cache_dir})


def ring_cp(*dirs):
    return ":".join([str(d) for d in dirs] + RING_JARS)


# --- examples/hello ----------------------------------------------------------

@pytest.fixture(scope="module")
def hello(mode, cache_dir):
    with launch(["--handler", "hello.core/app", "--classpath",
                 ring_cp(EXAMPLES / "hello" / "src")], mode, cache_dir) as n:
        yield n


def test_hello_routes(hello):
    assert "Clojure inside nginx" in hello.get("/").text
    assert hello.get("/hello").text == "Hello, Clojure!"
    assert hello.get("/hello/nginx").text == "Hello, nginx!"
    r = hello.get("/stream")
    assert r.text.splitlines() == ["line %d of 100" % i for i in range(1, 101)]
    r = hello.request("POST", "/form", body="name=Ada&message=hi+there",
                      headers={"Content-Type":
                               "application/x-www-form-urlencoded"})
    assert r.text == "message = hi there\nname = Ada\n"
    assert hello.get("/nope").status == 404


def test_hello_file_body_is_sent_by_nginx(hello):
    page = (EXAMPLES / "hello" / "public" / "index.html").read_bytes()
    r = hello.get("/file")
    assert r.status == 200 and r.body == page
    r = hello.get("/file", headers={"Range": "bytes=0-14"})
    assert r.status == 206 and r.body == page[:15]


def test_hello_cookie(hello):
    r = hello.get("/cookie/set?value=chocolate")
    cookie = r.header("Set-Cookie")
    assert cookie.startswith("hello=chocolate") and "HttpOnly" in cookie
    r = hello.get("/cookie", headers={"Cookie": "hello=chocolate"})
    assert r.text == "cookie hello = chocolate\n"


# --- examples/java -----------------------------------------------------------

@pytest.fixture(scope="module")
def java_example(mode, cache_dir):
    classes = readable_temp_dir("nginx-jvm-java-example-")
    # the README's javac command
    subprocess.run([JAVA_HOME + "/bin/javac", "--release", "17", "-cp",
                    str(JAR), "-d", classes]
                   + [str(f) for f in sorted(
                       (EXAMPLES / "java" / "src" / "example").glob("*.java"))],
                   check=True)
    try:
        with launch(["--handler", "example.Hello", "--classpath", classes,
                     "--max-body-size", "4g",
                     "--server", "location = /upload { jvm_mode pool; "
                     "jvm_request_buffering off; "
                     "jvm_content example.Upload; }"],
                    mode, cache_dir) as n:
            yield n
    finally:
        shutil.rmtree(classes, ignore_errors=True)


def test_java_example(java_example):
    n = java_example
    assert n.get("/").text.startswith("Hello from Java")
    assert n.get("/hello?nginx").text == "Hello, nginx!"
    assert "x-probe: 42" in n.get("/headers",
                                  headers={"X-Probe": "42"}).text
    r = n.get("/count")
    assert r.text == "1\n2\n3\n4\n5\n"
    assert r.header("Cache-Control") == "no-store"
    r = n.request("POST", "/echo", body=b"\x00\x01bytes",
                  headers={"Content-Type": "application/octet-stream"})
    assert r.body == b"\x00\x01bytes" and r.header("X-Echo-Length") == "7"
    assert n.get("/missing").status == 404


def test_java_example_upload_is_hashed_as_it_arrives(java_example):
    n = java_example
    block = os.urandom(1 << 20)
    md = hashlib.sha256()

    def body():
        for _ in range(32):
            md.update(block)
            yield block

    conn = http.client.HTTPConnection("127.0.0.1", n.port, timeout=120)
    try:
        conn.request("PUT", "/upload", body=body(), encode_chunked=True)
        r = conn.getresponse()
        text = r.read().decode()
    finally:
        conn.close()
    assert r.status == 200
    assert text == "%d bytes, sha-256 %s\n" % (32 << 20, md.hexdigest())
    assert n.get("/upload").status == 405


# --- examples/notes ----------------------------------------------------------

NOTES_PUBLIC = EXAMPLES / "notes" / "public"


@pytest.fixture(scope="module")
def notes(mode, cache_dir):
    # two workers: a session made by one is read by the other
    with launch(["--handler", "notes.core/app",
                 "--shared-dict", "notes:1m",
                 "--static", "/static/=%s" % NOTES_PUBLIC,
                 "--classpath", ring_cp(EXAMPLES / "notes" / "src")],
                mode, cache_dir, workers=2) as n:
        yield n


class Browser:
    """Requests with the cookies a browser would keep (one connection each,
    so that they spread over the workers)."""

    def __init__(self, server):
        self.server = server
        self.cookies = {}

    def request(self, method, path, body=None, headers=None):
        headers = dict(headers or {})
        if self.cookies:
            headers["Cookie"] = "; ".join("%s=%s" % kv
                                          for kv in self.cookies.items())
        r = self.server.request(method, path, body=body, headers=headers)
        for c in r.header_all("Set-Cookie"):
            name, _, value = c.split(";")[0].partition("=")
            self.cookies[name] = value
        return r

    def get(self, path):
        return self.request("GET", path)

    def post_form(self, path, **fields):
        return self.request("POST", path, body=urllib.parse.urlencode(fields),
                            headers={"Content-Type":
                                     "application/x-www-form-urlencoded"})

    def post_json(self, path, data):
        return self.request("POST", path, body=json.dumps(data),
                            headers={"Content-Type": "application/json"})

    def sign_in(self, name):
        r = self.post_form("/login", name=name)
        assert r.status == 303 and r.header("Location") == "/"
        return r


def flash(page):
    m = re.search(r'<p class="flash">(.*?)</p>', page)
    return m and m.group(1)


@pytest.mark.log_allows(r'open\(\) ".*/missing.css" failed')
def test_notes_static_files_are_sent_by_nginx(notes):
    css = (NOTES_PUBLIC / "style.css").read_bytes()
    r = notes.get("/static/style.css")
    assert r.status == 200 and r.body == css
    assert r.header("Content-Type") == "text/css"       # mime.types
    etag = r.header("ETag")
    assert etag and r.header("Last-Modified")
    assert notes.get("/static/style.css",
                     headers={"If-None-Match": etag}).status == 304
    r = notes.get("/static/notes.svg")
    assert r.header("Content-Type") == "image/svg+xml"
    assert notes.get("/static/missing.css").status == 404
    # the alias reaches nothing outside public/
    r = notes.raw(b"GET /static/../src/notes/core.clj HTTP/1.0\r\n\r\n")
    assert b"(ns notes.core" not in r


def test_notes_sign_in_session_and_flash(notes):
    b = Browser(notes)
    page = b.get("/").text
    assert 'action="/login"' in page and "/static/style.css" in page
    r = b.sign_in("Ada")
    cookie = r.header("Set-Cookie")
    assert cookie.startswith("notes-session=")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    page = b.get("/").text
    assert flash(page) == "Welcome, Ada."
    assert "Signed in as <b>Ada</b>" in page
    # the flash is shown once; the session holds on every worker
    for _ in range(12):
        page = b.get("/").text
        assert flash(page) is None and "Signed in as <b>Ada</b>" in page
    b.post_form("/logout")
    page = b.get("/").text
    assert flash(page) == "Signed out." and 'action="/login"' in page


def test_notes_a_forged_session_is_ignored(notes):
    b = Browser(notes)
    b.sign_in("Ada")
    value = b.cookies["notes-session"]
    b.cookies["notes-session"] = value[:-8] + "AAAAAAA%3D"
    page = b.get("/").text
    assert 'action="/login"' in page and "Ada" not in page


def test_notes_forms(notes):
    b = Browser(notes)
    b.sign_in("Grace")
    text = "Buy <milk> & \u00e9clairs\nthen code"
    r = b.post_form("/notes", text=text)
    assert r.status == 303
    page = b.get("/").text
    assert flash(page) == "Note saved."
    assert "Buy &lt;milk&gt; &amp; \u00e9clairs\nthen code" in page
    ids = re.findall(r'<li id="note-(\d+)"><p>Buy &lt;milk', page)
    assert len(ids) == 1

    b.post_form("/notes", text="   ")
    assert flash(b.get("/").text) == "Not saved: a note needs a text."
    b.post_form("/notes", text="x" * 2001)
    assert "at most 2000 characters" in flash(b.get("/").text)

    # another user sees the note, may not delete it; its author may
    other = Browser(notes)
    other.sign_in("Linus")
    assert "Buy &lt;milk&gt;" in other.get("/").text
    r = other.post_form("/notes/%s/delete" % ids[0])
    assert r.status == 403 and "Only its author" in r.text
    assert Browser(notes).post_form("/notes", text="hi").status == 403
    r = b.post_form("/notes/%s/delete" % ids[0])
    assert r.status == 303
    page = b.get("/").text
    assert flash(page) == "Note deleted." and "Buy &lt;milk" not in page
    assert b.post_form("/notes/%s/delete" % ids[0]).status == 404
    assert b.post_form("/notes/x/delete").status == 404

    # the trash: undo puts the note back, once; others have their own
    assert 'action="/notes/undo"' in page
    assert 'action="/notes/undo"' not in other.get("/").text
    assert other.post_form("/notes/undo").status == 303
    assert flash(other.get("/").text) == "Nothing to undo."
    assert Browser(notes).post_form("/notes/undo").status == 403
    assert b.post_form("/notes/undo").status == 303
    page = b.get("/").text
    assert flash(page) == "Note restored."
    assert '<li id="note-%s"><p>Buy &lt;milk' % ids[0] in page
    assert 'action="/notes/undo"' not in page
    b.post_form("/notes/undo")
    assert flash(b.get("/").text) == "Nothing to undo."


def test_notes_json_api(notes):
    anonymous = Browser(notes)
    r = anonymous.post_json("/api/notes", {"text": "no"})
    assert r.status == 401
    assert r.header("Content-Type") == "application/json; charset=utf-8"
    assert "sign in" in json.loads(r.text)["error"]

    b = Browser(notes)
    b.sign_in("Barbara")
    r = b.post_json("/api/notes", {"text": "from the API: \u00fc / \"q\""})
    assert r.status == 201
    note = json.loads(r.text)
    assert note["author"] == "Barbara"
    assert note["text"] == "from the API: \u00fc / \"q\""
    assert r.header("Location") == "/api/notes/%d" % note["id"]

    # read by anyone, newest first, the same note as the page shows
    assert json.loads(anonymous.get(r.header("Location")).text) == note
    listed = json.loads(anonymous.get("/api/notes").text)
    assert listed[0] == note
    assert [n["id"] for n in listed] == sorted((n["id"] for n in listed),
                                               reverse=True)
    assert 'id="note-%d"' % note["id"] in anonymous.get("/").text

    r = b.request("POST", "/api/notes", body="text=x",
                  headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status == 415
    for body in ('{"text": ', '[1, 2]', '{"text": 5}', '{"text": ""}'):
        r = b.request("POST", "/api/notes", body=body,
                      headers={"Content-Type": "application/json"})
        assert r.status == 400, body
        assert json.loads(r.text)["error"]

    other = Browser(notes)
    other.sign_in("Dennis")
    path = "/api/notes/%d" % note["id"]
    assert other.request("DELETE", path).status == 403
    assert b.request("DELETE", path).status == 204
    r = anonymous.get(path)
    assert r.status == 404
    assert json.loads(r.text) == {"error": "no note %d" % note["id"]}
    assert b.request("DELETE", path).status == 404
    assert anonymous.get("/api/nothing").status == 404


# --- examples/live -----------------------------------------------------------

LIVE = """
        jvm_websocket_deflate on;
        location / { jvm_async on; jvm_content live.core/app; }
"""


LIVE_HTTP = """
    jvm_topic chat 1m;
    jvm_shared_dict chat 64k;
    server {
        listen 127.0.0.1:@PORT2@ reuseport;
        jvm_websocket_deflate on;
        location / { jvm_async on; jvm_content live.core/app; }
    }
"""


def websocket_client():
    pytest.importorskip("websockets")
    from websockets.sync.client import connect
    return connect


@pytest.fixture(scope="module")
def live(mode):
    cp = ring_classpath() + [str(ROOT / "examples" / "live" / "src")]
    with Nginx(LIVE, http=LIVE_HTTP, classpath=cp, mode=mode,
               workers=2) as n:
        yield n


def test_live_page(live):
    r = live.get("/")
    assert r.status == 200
    assert "new WebSocket" in r.text and "EventSource" in r.text


def test_live_page_through_the_launcher(mode, cache_dir):
    """Its README's command: the launcher turns jvm_cache on, which puts
    src/ in a jar, and the page is served from there (it was a 500: a
    resource in a jar is no File)."""
    with launch(["--handler", "live.core/app", "--async",
                 "--topic", "chat:1m", "--shared-dict", "chat:64k",
                 "--server", "jvm_websocket_deflate on;",
                 "--classpath", ring_cp(EXAMPLES / "live" / "src")],
                mode, cache_dir) as n:
        r = n.get("/")
        assert r.status == 200 and "new WebSocket" in r.text
        assert r.body == (EXAMPLES / "live" / "src" / "live" /
                          "index.html").read_bytes()


def test_live_chat_between_two_clients(live):
    connect = websocket_client()
    url = "ws://127.0.0.1:%d/chat" % live.port
    with connect(url) as a:
        # the chat's messages are compressed (the README's --server)
        assert [e.name for e in a.protocol.extensions] == \
            ["permessage-deflate"]
        assert "joined" in a.recv(timeout=10)
        with connect(url) as b:
            assert "joined" in b.recv(timeout=10)
            assert "joined" in a.recv(timeout=10)
            a.send("hello from a")
            assert a.recv(timeout=10) == "hello from a"
            assert b.recv(timeout=10) == "hello from a"
        assert "left" in a.recv(timeout=10)


def test_live_chat_across_workers(live):
    """Clients on different workers (reuseport spreads new connections) are
    in one room: each gets every message, once."""
    connect = websocket_client()
    url = "ws://127.0.0.1:%d/chat" % live.port2
    with contextlib.ExitStack() as stack:
        # The last test's clients may still be counted (a socket's on-close
        # says "left" after its client has gone): the first client waits
        # until it is alone in the room, which its own join or a "left"
        # notice after it says with "(1 here)".  A "left" notice is the
        # last test's, wherever it lands: none of these leaves.
        first = stack.enter_context(connect(url))
        deadline = time.monotonic() + 60
        m = ""
        while "(1 here)" not in m:
            assert time.monotonic() < deadline, m
            m = first.recv(timeout=60)
        clients = [first] + [stack.enter_context(connect(url))
                             for _ in range(7)]
        # A socket joins its worker's room, then says so; off the loop (pool,
        # virtual) the sockets' on-open run in any order, so a socket sees
        # its own join and some others. Together they see all 8, counted by
        # the workers together (the first's, "(1 here)", seen above).
        expected = {"* someone joined (%d here)" % k for k in range(2, 9)}
        joins = set()
        deadline = time.monotonic() + 60
        while joins != expected:
            assert time.monotonic() < deadline, joins
            for c in clients:
                try:
                    m = c.recv(timeout=0.05)
                except TimeoutError:
                    continue
                if "someone left" in m:
                    continue
                assert "joined" in m, m
                joins.add(m)
        assert joins == expected
        # every join was published before this: the topic keeps one order
        clients[0].send("hello all")
        for c in clients:
            m = c.recv(timeout=30)
            while "joined" in m or "someone left" in m:
                m = c.recv(timeout=30)
            assert m == "hello all"
        for c in clients:           # once
            with pytest.raises(TimeoutError):
                c.recv(timeout=0.2)


def test_live_clock_streams_events(live):
    s = socket.create_connection(("127.0.0.1", live.port), timeout=10)
    with s:
        s.sendall(b"GET /clock HTTP/1.1\r\nHost: localhost\r\n\r\n")
        data = b""
        while data.count(b"data: ") < 2:
            chunk = s.recv(4096)
            assert chunk, data
            data += chunk
    assert b"text/event-stream" in data
