"""The cluster tests' clients: plain HTTP requests, a bounded load of
idempotent requests that records every outcome, and chat clients over a
WebSocket that reconnect when their host goes away."""

import http.client
import os
import threading
import time
import urllib.parse

from websockets.sync.client import connect

# where the figures and a failed browser test's screenshots go
ARTEFACTS = os.environ.get("NJC_ARTEFACTS", os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
    "cluster-test")))


class Answer:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def host(self):
        return self.headers.get("X-Njc-Host")

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")


def _split(url):
    u = urllib.parse.urlsplit(url)
    return u.hostname, u.port or 80, (u.path or "/")


def request(method, url, body=None, headers=None, cookie=None, timeout=10,
            conn=None):
    """One request; on conn (kept alive) when given, else on a connection
    of its own."""
    host, port, path = _split(url)
    headers = dict(headers or {})
    if cookie:
        headers["Cookie"] = cookie
    own = conn is None
    c = conn or http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        return Answer(r.status, {k: v for k, v in r.getheaders()}, r.read())
    finally:
        if own:
            c.close()


def get(url, **kw):
    return request("GET", url, **kw)


def sign_in(notes_url, name, cookie=""):
    """Signs in to examples/notes; answers the session's cookie."""
    r = request("POST", notes_url + "login", body="name=" + name,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
                cookie=cookie or None)
    assert r.status == 303, (r.status, r.text)
    session = r.headers["Set-Cookie"].split(";")[0]
    assert session.startswith("notes-session="), session
    return session


def signed_in_as(answer, name):
    return "Signed in as <b>%s</b>" % name in answer.text


class Load:
    """THREADS clients, each on a kept-alive connection to the front,
    alternating between the live page and the notes page of a signed-in
    user (a session read from Redis on every request), until stop() or
    `seconds`. Every request is recorded as (start, end, what, outcome,
    host): outcome "ok", "status NNN", "no session" (the page came back
    without the user) or the error."""

    def __init__(self, cluster, users, threads=4, seconds=120, pause=0.01,
                 urls=None):
        self.cluster = cluster
        self.urls = urls or [cluster.live, cluster.notes]
        self.users = users                    # [(name, session cookie)]
        self.threads = threads
        self.deadline = time.monotonic() + seconds
        self.pause = pause
        self.records = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.workers = [threading.Thread(target=self._run, args=(i,),
                                         daemon=True)
                        for i in range(threads)]

    def start(self):
        for w in self.workers:
            w.start()
        return self

    def stop(self):
        self.stopping.set()
        for w in self.workers:
            w.join(30)

    def _run(self, i):
        name, cookie = self.users[i % len(self.users)]
        conns = {}
        n = 0
        while not self.stopping.is_set() and time.monotonic() < self.deadline:
            url = self.urls[n % len(self.urls)]
            n += 1
            host, port, _ = _split(url)
            if url not in conns:
                # beyond the front's proxy_read_timeout (10 s) and the retry
                # after it: a request in flight on a host that went silent
                # waits exactly that long, and must not time out here first
                conns[url] = http.client.HTTPConnection(host, port, timeout=20)
            start = time.monotonic()
            served_by = None
            try:
                if url == self.cluster.notes:
                    r = get(url, cookie=cookie, conn=conns[url])
                    outcome = "ok" if r.status == 200 and signed_in_as(r, name) \
                        else ("no session" if r.status == 200
                              else "status %d" % r.status)
                else:
                    r = get(url, conn=conns[url])
                    outcome = "ok" if r.status == 200 and \
                        "nginx-jvm live" in r.text else "status %d" % r.status
                served_by = r.host
                if r.headers.get("Connection", "").lower() == "close":
                    conns.pop(url).close()
            except (OSError, http.client.HTTPException) as e:
                outcome = "%s: %s" % (type(e).__name__, e)
                conns.pop(url).close()
            with self.lock:
                self.records.append((start, time.monotonic(), url, outcome,
                                     served_by))
            time.sleep(self.pause)
        for c in conns.values():
            c.close()

    def failures(self, since=0, until=float("inf")):
        return [r for r in self.records
                if r[3] != "ok" and since <= r[0] < until]

    def served_by(self, host, since=0):
        return [r for r in self.records if r[4] == host and r[0] >= since]


class ChatClient:
    """A chat client of examples/live through the front: keeps every
    message with the time it arrived, and when its connection is lost
    connects again at once (every 50 ms until it succeeds), noting when it
    lost the connection, when it was back and on which host."""

    def __init__(self, url, cookie=None, name="client", ping=None):
        self.url = url.replace("http://", "ws://") + "chat"
        self.cookie = cookie
        self.name = name
        # seconds between pings, and to wait for the pong: the only way a
        # client learns that the host behind the front went silent
        self.ping = ping
        self.messages = []            # (time received, text)
        self.connections = []         # (time opened, host)
        self.losses = []              # (time lost, time back)
        self.ws = None
        self.closing = threading.Event()
        self.lock = threading.Lock()
        self._connect()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def host(self):
        return self.connections[-1][1]

    def _connect(self):
        headers = {"Cookie": self.cookie} if self.cookie else None
        self.ws = connect(self.url, additional_headers=headers, proxy=None,
                          open_timeout=30, ping_interval=self.ping,
                          ping_timeout=self.ping, compression=None,
                          # a silent host answers no close frame either
                          close_timeout=self.ping or 10)
        self.connections.append((time.monotonic(),
                                 self.ws.response.headers.get("X-Njc-Host")))

    def _run(self):
        while not self.closing.is_set():
            try:
                for message in self.ws:
                    with self.lock:
                        self.messages.append((time.monotonic(), message))
            except Exception:       # a reset, a close without a frame
                pass
            if self.closing.is_set():
                return
            lost = time.monotonic()
            while not self.closing.is_set():
                try:
                    self._connect()
                    break
                except Exception:
                    time.sleep(0.05)
            self.losses.append((lost, time.monotonic()))

    def send(self, text):
        self.ws.send(text)

    def received(self, prefix):
        with self.lock:
            return [(t, m) for t, m in self.messages if m.startswith(prefix)]

    def close(self):
        self.closing.set()
        try:
            self.ws.close()
        except Exception:
            pass
        self.thread.join(10)


class Broadcaster:
    """Sends a numbered chat message every `interval` seconds from its own
    chat client (on one host), keeping when each left."""

    def __init__(self, client, prefix, interval=0.1):
        self.client = client
        self.prefix = prefix
        self.interval = interval
        self.sent = []                # (time sent, text)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def _run(self):
        n = 0
        while not self.stopping.is_set():
            text = "%s%d" % (self.prefix, n)
            n += 1
            try:
                self.client.send(text)
                self.sent.append((time.monotonic(), text))
            except Exception:
                pass
            time.sleep(self.interval)

    def stop(self):
        self.stopping.set()
        self.thread.join(10)
