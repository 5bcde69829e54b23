"""Every door through which a handler's string reaches a wire (issue 34).

A generated table: each API entry point that can put a string on a wire
(response header fields in every phase, header filter edits, jvm_set and
set variables, $args, the URI, request header fields, a subrequest's
method, URI, args and header fields), Ring and Java, crossed with every
byte 0x00-0x1F and 0x7F, space, colon, CR LF CR LF followed by a request
line, and a few harmless values.  The handlers (testapp.Doors,
testapp.doors) do what an ordinary application does: pass a query
parameter, URL-decoded, on to the door with nothing checked.

Through real nginx (one per mode, many requests) to a raw upstream socket
that records every byte nginx sends it, and raw client sockets that read
every byte of the response:

- nothing splits: every response the client reads and every request the
  upstream reads is exactly one, well formed, with no field the value
  tried to add and no request after it;
- what the rules of docs/security.md ("Doors") allow arrives intact;
- what they refuse is refused, and the error log names the door's kind
  and the field or variable.
"""

import concurrent.futures
import itertools
import re
import socket
import threading
import urllib.parse

import pytest

from harness import Nginx

TOKEN = re.compile(rb"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
TRACE = r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: |\s+Suppressed: )"
REFUSED = r"refused the "
CLIENTS = 8             # requests in flight at once


class RawUpstream:
    """Records every byte of every connection; answers one fixed response
    after the first request's head and body, then reads until nginx
    closes, so that anything sent after the first request is recorded."""

    ANSWER = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
              b"Content-Length: 2\r\nConnection: close\r\n\r\nok")

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.lock = threading.Condition()
        self.done = []          # the bytes of each connection, once closed
        self.open = 0
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.open += 1
            threading.Thread(target=self._serve, args=(c,),
                             daemon=True).start()

    def _serve(self, c):
        data = b""
        answered = False
        c.settimeout(10)
        try:
            while True:
                if not answered and _request_end(data) is not None:
                    c.sendall(self.ANSWER)
                    answered = True
                try:
                    b = c.recv(65536)
                except (socket.timeout, OSError):
                    break
                if not b:
                    break
                data += b
        finally:
            c.close()
            with self.lock:
                self.done.append(data)
                self.open -= 1
                self.lock.notify_all()

    def idle(self, timeout=10):
        """Waits until no connection is open (nginx closes each after
        the answer); true when none is."""
        with self.lock:
            return self.lock.wait_for(lambda: self.open == 0, timeout)

    def close(self):
        self.sock.close()


def _request_end(data):
    """Where the first request of data ends (head and Content-Length
    body), or None when it has not all arrived."""
    head, sep, _ = data.partition(b"\r\n\r\n")
    if not sep:
        return None
    m = re.search(rb"\r\ncontent-length:[ \t]*(\d+)", head, re.I)
    end = len(head) + 4 + (int(m.group(1)) if m else 0)
    return end if len(data) >= end else None


def _fields(lines, what):
    """Header lines as (lower-case name, value), each checked well formed."""
    out = []
    for line in lines:
        name, colon, value = line.partition(b":")
        assert colon and TOKEN.match(name), \
            "%s: a malformed header line %r" % (what, line)
        value = value.strip(b" \t")
        assert not re.search(rb"[\x00-\x08\x0a-\x1f\x7f]", value), \
            "%s: a control character in %r" % (what, line)
        assert name.lower() != b"x-injected", \
            "%s: the value added a field: %r" % (what, line)
        out.append((name.lower().decode(), value.decode("latin-1")))
    return out


def check_request(data):
    """One well-formed request, nothing after it: (method, target, fields)."""
    end = _request_end(data)
    assert end is not None, "an incomplete request: %r" % data
    assert end == len(data), \
        "bytes after the request (smuggled?): %r" % data[end:][:300]
    head = data[:data.index(b"\r\n\r\n")]
    lines = head.split(b"\r\n")
    m = re.match(rb"^([^ ]+) ([^ ]+) HTTP/1\.[01]$", lines[0])
    assert m and TOKEN.match(m.group(1)), \
        "a malformed request line: %r" % lines[0]
    assert not re.search(rb"[\x00-\x20\x7f]", m.group(2)), lines[0]
    return (m.group(1).decode("latin-1"), m.group(2).decode("latin-1"),
            _fields(lines[1:], "upstream"))


def check_response(data):
    """One well-formed response, nothing after it: (status, fields)."""
    head, sep, rest = data.partition(b"\r\n\r\n")
    assert sep, "no end of the response's head: %r" % data[:300]
    lines = head.split(b"\r\n")
    m = re.match(rb"^HTTP/1\.1 (\d{3}) [^\x00-\x08\x0a-\x1f\x7f]*$",
                 lines[0])
    assert m, "a malformed status line: %r" % lines[0]
    fields = _fields(lines[1:], "client")
    f = dict(fields)
    if m.group(1) == b"101":
        rest = b""                      # WebSocket frames from here on
    elif f.get("transfer-encoding") == "chunked":
        pos = 0
        while True:
            eol = rest.index(b"\r\n", pos)
            size = int(rest[pos:eol], 16)
            pos = eol + 2 + size + 2
            if size == 0:
                break
        rest = rest[pos:]
    elif "content-length" in f:
        rest = rest[int(f["content-length"]):]
    else:
        rest = b""
    assert rest == b"", "bytes after the response: %r" % rest[:300]
    assert b"/smuggled" not in head, head
    return int(m.group(1)), fields


# -- the rules (docs/security.md, "Doors") ----------------------------------

def value_ok(s):
    return not re.search(r"[\x00-\x08\x0a-\x1f\x7f]", s)


def token_ok(s):
    return bool(TOKEN.match(s.encode("latin-1")))


def uri_ok(s):
    return (not re.search(r"[\x00-\x1f\x7f]", s)
            and ".." not in s.split("/"))


def args_ok(s):
    return not re.search(r"[\x00-\x20\x7f]", s)


# -- the doors ---------------------------------------------------------------
# door: (location, what the value becomes, rule, where it goes, the field it
# reaches there, the log's words for it)

RESP = "value of the response header field "
DOORS = {
    "hv": ("resp", "a%sb", value_ok, "client", "x-door", RESP + '"X-Door"'),
    "hn": ("resp", "X-D%s", token_ok, "client", None,
           "response header field name "),
    "loc": ("resp", "/r?%s", value_ok, "client", "location",
            RESP + '"Location"'),
    "cookie": ("resp", "s=a%sb; Path=/", value_ok, "client", "set-cookie",
               RESP + '"Set-Cookie"'),
    "ctype": ("resp", "text/plain; x=a%sb", value_ok, "client",
              "content-type", RESP + '"Content-Type"'),
    "stream": ("resp", "a%sb", value_ok, "client", "x-door",
               RESP + '"X-Door"'),
    "ws": ("resp", "a%sb", value_ok, "client", "x-door",
           RESP + '"X-Door"'),
    "rwloc": ("rwresp", "/r?%s", value_ok, "client", "location",
              RESP + '"Location"'),
    "acauth": ("acresp", 'Basic realm="a%sb"', value_ok, "client",
               "www-authenticate", RESP + '"WWW-Authenticate"'),
    "fv": ("filter", "a%sb", value_ok, "client", "x-door",
           RESP + '"X-Door"'),
    "fn": ("filter", "X-D%s", token_ok, "client", None,
           "response header field name "),
    "setadd": ("setadd", "a%sb", value_ok, "client", "x-door",
               'value of the variable "\\$door_@L@"'),
    "setret": ("setret", "a%sb", value_ok, "client", "location",
               'value of the variable "\\$door_@L@"'),
    "setprx": ("setprx", "a%sb", value_ok, "upstream", "x-door",
               'value of the variable "\\$door_@L@"'),
    "setvar": ("rw", "a%sb", value_ok, "upstream", "x-door2",
               'value of the variable "\\$dv_@L@"'),
    "args": ("rw", "a=%s", args_ok, "upstream", "?",
             "args "),
    "uri": ("rw", "/up/uri/%s", uri_ok, "upstream", "/", "URI "),
    "hdr": ("rw", "a%sb", value_ok, "upstream", "x-door",
            'value of the request header field "X-Door"'),
    "hdrn": ("rw", "X-D%s", token_ok, "upstream", None,
             "request header field name "),
    "sm": ("sub", "GET%s", token_ok, "upstream", None, "subrequest method "),
    "su": ("sub", "/up/sub/%s", uri_ok, "upstream", "/", "subrequest URI "),
    "sa": ("sub", "a=%s", args_ok, "upstream", "?", "subrequest args "),
    "shn": ("sub", "X-D%s", token_ok, "upstream", None,
            "subrequest header field name "),
    "shv": ("sub", "a%sb", value_ok, "upstream", "x-door",
            'value of the subrequest header field "X-Door"'),
}

# The C gate alone (nginx.jvm.GateProbe, Java only): the same doors with
# the bytes handed to the natives, past nginx.jvm.Gate's early checks
PROBES = {
    "phdr": ("prw",) + DOORS["hdr"][1:],
    "phdrn": ("prw",) + DOORS["hdrn"][1:],
    "psm": ("psub",) + DOORS["sm"][1:],
    "psu": ("psub",) + DOORS["su"][1:],
    "psa": ("psub",) + DOORS["sa"][1:],
    "pshn": ("psub",) + DOORS["shn"][1:],
    "pshv": ("psub",) + DOORS["shv"][1:],
}
DOORS.update(PROBES)

# Ring's WebSocket handshake: the handler's string is the subprotocol
BY_LANG = {("clj", "ws"): ("sec-websocket-protocol",
                           RESP + '"Sec-WebSocket-Protocol"')}

WS_HANDSHAKE = ("Upgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                "Sec-WebSocket-Version: 13\r\n")

# the door ?d= the handler knows it by, where the table's name differs
HANDLER_DOOR = {"rwloc": "loc", "acauth": "auth"}

PAYLOADS = ([chr(b) + "X-Injected: 1" for b in list(range(0x20)) + [0x7f]]
            + [" X-Injected: 1", ":X-Injected: 1",
               "\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n"
               "X-Injected: 1\r\n\r\n",
               "\r\nX-Injected: 1", "plain", "a:b", "a\tb"])
URI_PAYLOADS = ["../../x", "x/../../y", "..", "x/..", "a b", "a%2Fb"]

HTTP = """
    jvm_set $door_java testapp.Doors$Var;
    jvm_set $door_clj testapp.doors/var-value;
"""

LOCATIONS = """
        location /never { set $dv_java ""; set $dv_clj ""; return 404; }
        location = /r { return 200 "r"; }
        location /up/ { proxy_pass http://127.0.0.1:@UP@; }
"""

PER_LANG = """
        location /@L@/resp { jvm_content @C@; }
        location /@L@/rwresp { jvm_rewrite @P@; return 200 "not reached"; }
        location /@L@/acresp { jvm_access @P@; jvm_content @C@; }
        location /@L@/filter { jvm_header_filter @F@; return 200 "ok"; }
        location /@L@/setadd { add_header X-Door $door_@L@; return 200 "ok"; }
        location /@L@/setret { return 302 /r?$door_@L@; }
        location /@L@/setprx { proxy_set_header X-Door $door_@L@;
                               proxy_pass http://127.0.0.1:@UP@; }
        location /@L@/rw { jvm_rewrite @R@;
                           proxy_set_header X-Door2 $dv_@L@;
                           proxy_pass http://127.0.0.1:@UP@; }
        location /@L@/sub { jvm_async on; jvm_content @S@; }
"""

PROBE_LOCATIONS = """
        location /java/psub { jvm_async on; jvm_content nginx.jvm.GateProbe; }
        location /java/prw { jvm_rewrite nginx.jvm.GateProbe$Rewrite;
                             proxy_pass http://127.0.0.1:@UP@; }
"""

LANGS = {
    "java": {"@C@": "testapp.Doors$Content",
             "@P@": "testapp.Doors$PhaseResponse",
             "@F@": "testapp.Doors$Filter",
             "@R@": "testapp.Doors$Rewrite",
             "@S@": "testapp.Doors$Sub"},
    "clj": {"@C@": "testapp.doors/content",
            "@P@": "testapp.doors/phase-response",
            "@F@": "testapp.doors/filter-headers",
            "@R@": "testapp.doors/rewrite",
            "@S@": "testapp.doors/sub"},
}


@pytest.fixture(scope="module")
def up():
    u = RawUpstream()
    yield u
    u.close()


@pytest.fixture(scope="module")
def ng(mode, up):
    text = LOCATIONS + PROBE_LOCATIONS
    for lang, names in LANGS.items():
        block = PER_LANG.replace("@L@", lang)
        for k, v in names.items():
            block = block.replace(k, v)
        text += block
    with Nginx(text.replace("@UP@", str(up.port)), http=HTTP,
               mode=mode) as n:
        yield n


def client(ng, path, case, ws=False):
    """The exact bytes of the response to GET path: all of them, until
    nginx closes; for a WebSocket handshake, those of its answer (a 101's
    head; another's head and body).  X-Case goes upstream with the
    request (proxy_pass and subrequests pass the client's fields on)."""
    head = WS_HANDSHAKE if ws else "Connection: close\r\n"
    with socket.create_connection(("127.0.0.1", ng.port), timeout=30) as s:
        s.sendall(("GET %s HTTP/1.1\r\nHost: doors\r\nX-Case: %d\r\n%s"
                   "\r\n" % (path, case, head)).encode())
        data = b""
        while True:
            if ws and _answered(data):
                return data
            b = s.recv(65536)
            if not b:
                return data
            data += b


def _answered(data):
    """A whole response: a 101's head, another's head and body."""
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    if head.startswith(b"HTTP/1.1 101 "):
        return True
    m = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
    if m:
        return len(rest) >= int(m.group(1))
    return rest.endswith(b"0\r\n\r\n")


def log_entries(text):
    """The error log's entries, each with its continuation lines (a
    stack trace), by the case of the request it names (?c=N)."""
    out = {}
    for entry in re.split(r"\n(?=\d{4}/\d\d/\d\d )", text):
        m = re.search(r'request: "GET /[^"]*[?&]c=(\d+)[& ]', entry)
        if m:
            out.setdefault(int(m.group(1)), []).append(entry)
    return out


def check_case(lang, door, payload, data, sent, entries):
    """One value through one door: the client's bytes, the upstream's
    requests and the log entries of its request."""
    location, shape, rule, where, field, words = DOORS[door]
    field, words = BY_LANG.get((lang, door), (field, words))
    value = shape % payload
    text = "\n".join(entries)

    status, fields = check_response(data)
    requests = [check_request(d) for d in sent]
    assert len(requests) <= 1, "%d requests upstream" % len(requests)

    if rule(value):
        assert status < 500, "%d for an allowed value %r:\n%s" % (
            status, value, text[-2000:])
        assert not re.search(r"\[(error|crit|alert)\]", text), text[-2000:]
        if where == "client" and field:
            got = [v for n, v in fields if n == field]
            assert got and got[0].endswith(value), (field, got, value)
        elif where == "upstream":
            assert len(requests) == 1, "no request upstream for %r" % value
            method, target, ufields = requests[0]
            if field == "?":
                assert target.partition("?")[2] == value, (target, value)
            elif field == "/":
                got = urllib.parse.unquote(target.partition("?")[0],
                                           encoding="latin-1")
                assert got == value, (target, value)
            elif field:
                got = [v for n, v in ufields if n == field]
                assert got == [value], (field, got, value)
        return

    # refused: the log names the door, nothing reaches its wire
    want = REFUSED + words.replace("@L@", lang)
    assert re.search(want, text), "no log line %r for %r:\n%s" % (
        want, value, text[-2000:])
    if door == "setadd":
        # add_header reads the variable after the module's header filter:
        # the field is left out, the response goes on
        assert not [v for n, v in fields if n == "x-door"], fields
    else:
        assert status == 500, "%d for a refused value %r" % (status, value)
    if DOORS[door][0] in ("sub", "psub"):
        assert not requests, "a refused subrequest went upstream"
    for method, target, ufields in requests:
        assert field not in dict(ufields) or field in ("?", "/") \
            or dict(ufields)[field] == "", ufields


_cases = itertools.count(1)


def run_door(ng, up, lang, door, payloads):
    """Every payload through one door, CLIENTS at a time; what went wrong."""
    location = DOORS[door][0]
    since = ng.log_size()
    with up.lock:
        seen = len(up.done)
    cases = [(next(_cases), p) for p in payloads]

    def send(case):
        n, p = case
        path = "/%s/%s?d=%s&c=%d&v=%s" % (
            lang, location, HANDLER_DOOR.get(door, door), n,
            urllib.parse.quote(p, safe=""))
        return client(ng, path, n, ws=door == "ws")

    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        answers = list(pool.map(send, cases))
    assert up.idle(), "the upstream still reads"
    with up.lock:
        sent = up.done[seen:]
    upstream = {}
    for d in sent:
        m = re.search(rb"\r\nX-Case: (\d+)\r\n", d)
        assert m, "a request upstream without X-Case: %r" % d[:500]
        upstream.setdefault(int(m.group(1)), []).append(d)
    entries = log_entries(ng.log_text(since))

    failures = []
    for (n, p), data in zip(cases, answers):
        try:
            check_case(lang, door, p, data, upstream.get(n, []),
                       entries.get(n, []))
        except AssertionError as e:
            failures.append("%r: %s" % (p, str(e)[:600]))
    return failures


CASES = [(lang, door) for lang in LANGS for door in DOORS
         if lang == "java" or door not in PROBES]


@pytest.mark.log_allows(REFUSED, TRACE, r"the handler threw",
                        r"the subrequest cannot start",
                        r"jvm_set handler", r"CompletionException",
                        r"using uninitialized")
@pytest.mark.parametrize("lang,door", CASES,
                         ids=["%s-%s" % c for c in CASES])
def test_door(ng, up, lang, door):
    payloads = PAYLOADS + (URI_PAYLOADS if DOORS[door][2] is uri_ok else [])
    failures = run_door(ng, up, lang, door, payloads)
    assert not failures, "%d of %d values:\n%s" % (
        len(failures), len(payloads), "\n".join(failures))
