"""Generated bad and boundary requests, through raw sockets: header counts,
sizes and every byte value, duplicates and folded lines; methods; URIs with
percent escapes, invalid UTF-8 and great lengths; bodies chunked, cut short,
over the limit, after Expect: 100-continue.

Whatever nginx refuses it answers with a 4xx before the handler; whatever it
lets through reaches the handler intact (every byte of the method, URI,
query, header values and body, shown back in hex by testapp.fuzz/echo).
Nothing crashes the worker, nothing hangs, nothing is a 5xx.

The requests come from a seeded generator: a failure names its seed and
number, and NGINX_JVM_FUZZ_SEED / NGINX_JVM_FUZZ_COUNT replay or widen it."""

import hashlib
import os
import random
import socket

import pytest


SEED = int(os.environ.get("NGINX_JVM_FUZZ_SEED", "20261123"))
COUNT = int(os.environ.get("NGINX_JVM_FUZZ_COUNT", "150"))
LIMIT = 64 * 1024          # client_max_body_size below

LOCATIONS = """
        client_max_body_size 64k;
        client_header_timeout 3s;
        client_body_timeout 3s;
        location /fuzz { jvm_content testapp.fuzz/echo; }
        location /pid { jvm_content testapp.ring/pid; }
"""

# nginx refuses these before any handler runs, each with its own status
REFUSED = {400, 405, 408, 411, 413, 414, 431, 494, 501, 505}

# logged by nginx itself for a refused request, at [error]
NGINX_ERRORS = [r"client intended to send too large (chunked )?body",
                r"client sent too long URI", r"client sent invalid"]

TCHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"
ODD_NAME_CHARS = "!#$%&'*+.^_`|~ @:()\x80\xff"


def latin1(b):
    return b.decode("latin-1")


# --- generation -----------------------------------------------------------

class Case:
    """One request: its bytes, and what the handler must see if nginx lets
    it through."""

    def __init__(self, what):
        self.what = what
        self.method = b"GET"
        self.path = b"/fuzz/"
        self.query = None
        self.headers = []           # (name bytes, value bytes)
        self.body = b""
        self.framing = "length"     # length, chunked, none
        self.chunks = None
        self.cut = False            # the body stops short, then EOF
        self.expect = False         # Expect: 100-continue first

    def head(self):
        target = self.path + (b"?" + self.query if self.query is not None
                              else b"")
        lines = [self.method + b" " + target + b" HTTP/1.1",
                 b"Host: localhost", b"Connection: close"]
        lines += [n + b": " + v for n, v in self.headers]
        if self.framing == "length":
            lines.append(b"Content-Length: %d" % len(self.body))
        elif self.framing == "chunked":
            lines.append(b"Transfer-Encoding: chunked")
        if self.expect:
            lines.append(b"Expect: 100-continue")
        return b"\r\n".join(lines) + b"\r\n\r\n"

    def payload(self):
        if self.framing == "chunked":
            return self.chunks
        if self.cut:
            return self.body[:len(self.body) // 2]
        return self.body if self.framing == "length" else b""

    def expected_headers(self):
        """What Ring's :headers holds: names nginx keeps (it ignores those
        with other characters than letters, digits and '-'), lower-cased,
        repeats joined by ','."""
        seen = {"host": "localhost", "connection": "close"}
        for n, v in self.headers:
            name = latin1(n)
            if not all(c in TCHARS for c in name):
                continue
            k = name.lower()
            seen[k] = seen[k] + "," + latin1(v) if k in seen else latin1(v)
        if self.framing == "length":
            seen["content-length"] = str(len(self.body))
        elif self.framing == "chunked":
            seen["transfer-encoding"] = "chunked"
        if self.expect:
            seen["expect"] = "100-continue"
        return seen


def value_bytes(rnd, n):
    """A header value: any byte but CR and LF (NUL included: nginx refuses
    it), never starting or ending with a space (nginx trims those)."""
    alphabet = [b for b in range(256) if b not in (13, 10)]
    v = bytes(rnd.choice(alphabet) for _ in range(n))
    return v.strip(b" \t") or b"v"


def gen_headers(rnd, case):
    for i in range(rnd.choice([0, 1, 5, 20, 60])):
        name = "x-" + "".join(rnd.choice(TCHARS) for _ in range(rnd.randint(1, 30)))
        if rnd.random() < 0.1:
            name += rnd.choice(ODD_NAME_CHARS)
        if rnd.random() < 0.1 and case.headers:
            name = latin1(rnd.choice(case.headers)[0])     # a repeat
        size = rnd.choice([0, 1, 10, 100, 1000, 4000, 9000])
        case.headers.append((name.encode("latin-1"), value_bytes(rnd, size)))
    if rnd.random() < 0.1:
        # obs-fold: a continuation line (RFC 9112 says reject or unfold)
        case.headers.append((b"x-folded", b"first\r\n second"))


def gen_method(rnd, case):
    case.method = rnd.choice([
        b"GET", b"POST", b"PUT", b"DELETE", b"PATCH", b"OPTIONS",
        b"PROPFIND", b"FOO_BAR", b"get", b"G\x80T", b"",
        "".join(rnd.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ_-")
                for _ in range(rnd.randint(1, 20))).encode()])


def path_bytes(rnd, n):
    out = bytearray()
    for _ in range(n):
        r = rnd.random()
        if r < 0.1:
            out += b"%%%02X" % rnd.randrange(256)               # an escape
        elif r < 0.13:
            out += b"%" + bytes(rnd.choice(b"zZ%g0")           # a bad one
                                for _ in range(2))
        elif r < 0.25:
            out.append(rnd.randrange(0x80, 0x100))             # not UTF-8
        elif r < 0.27:
            out.append(rnd.choice(b"\x01\x7f\t\"<>\\^`{|}"))
        else:
            out.append(rnd.choice(b"abcxyz019-._~!$&'()*+,;=:@/"))
    return bytes(out)


def gen_uri(rnd, case):
    case.path = b"/fuzz/" + path_bytes(rnd, rnd.choice([0, 5, 50, 500, 3000,
                                                        9000]))
    if rnd.random() < 0.5:
        case.query = path_bytes(rnd, rnd.choice([0, 10, 100, 2000]))


def gen_body(rnd, case):
    case.method = b"POST"
    case.body = bytes(rnd.randrange(256) for _ in range(
        rnd.choice([0, 1, 100, 5000, LIMIT, LIMIT + 1, 3 * LIMIT])))
    kind = rnd.choice(["length", "chunked", "bad-chunked", "cut", "expect"])
    if kind in ("chunked", "bad-chunked"):
        case.framing = "chunked"
        out, at = bytearray(), 0
        while at < len(case.body):
            n = rnd.randint(1, 20000)
            ext = b";ext=1" if rnd.random() < 0.2 else b""
            out += b"%x%s\r\n%s\r\n" % (n if at + n <= len(case.body)
                                         else len(case.body) - at, ext,
                                         case.body[at:at + n])
            at += n
        out += b"0\r\n\r\n"
        if kind == "bad-chunked":
            at = rnd.randrange(len(out))
            out = out[:at] + b"zz\r\n" + out[at:]
        case.chunks = bytes(out)
    elif kind == "cut":
        case.cut = len(case.body) > 1
    elif kind == "expect":
        case.expect = True


GENERATORS = [gen_headers, gen_method, gen_uri, gen_body]


def cases(seed, count):
    rnd = random.Random(seed)
    for i in range(count):
        gen = GENERATORS[i % len(GENERATORS)]
        case = Case("%s #%d (seed %d)" % (gen.__name__[4:], i, seed))
        gen(rnd, case)
        yield case


# --- sending --------------------------------------------------------------

def exchange(port, case, timeout=15):
    """Sends the case; returns the bytes the server sent until it closed.
    A timeout (the server neither answered nor closed) raises."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(case.head())
        got = b""
        if case.expect:
            # the 100 Continue (or a refusal) before the body
            while b"\r\n\r\n" not in got:
                b = s.recv(65536)
                if not b:
                    return got
                got += b
            if not got.startswith(b"HTTP/1.1 100"):
                # refused before the body: no body comes (nginx's lingering
                # close would otherwise wait for one)
                s.shutdown(socket.SHUT_WR)
                return got + read_all(s)
            # what came with it (the answer, when there is no body to wait for)
            got = got.partition(b"\r\n\r\n")[2]
        try:
            s.sendall(case.payload())
            if case.cut:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass                    # refused early: what it said is below
        return got + read_all(s)


def read_all(s):
    chunks = []
    while True:
        try:
            b = s.recv(65536)
        except ConnectionResetError:
            break
        if not b:
            break
        chunks.append(b)
    return b"".join(chunks)


def check_echo(case, body):
    seen = {}
    headers = {}
    for line in body.decode("ascii").splitlines():
        parts = line.split(" ")
        if parts[0] == "header":
            headers[bytes.fromhex(parts[1]).decode("latin-1")] = \
                bytes.fromhex(parts[2] if len(parts) > 2 else "").decode(
                    "latin-1")
        else:
            seen[parts[0]] = parts[1:]
    assert bytes.fromhex(seen["method"][0]) == case.method.lower(), case.what
    assert bytes.fromhex(seen["uri"][0] if seen["uri"] else "") \
        == case.path, case.what
    assert bytes.fromhex(seen["query"][0] if seen["query"] else "") \
        == (case.query or b""), case.what
    body_len, digest = int(seen["body"][0]), seen["body"][1]
    assert body_len == len(case.body), case.what
    assert digest == hashlib.sha256(case.body).hexdigest(), case.what
    assert headers == case.expected_headers(), case.what


@pytest.mark.log_allows(*NGINX_ERRORS)
def test_generated_requests(ng):
    before = ng.get("/pid").body
    outcomes = {}
    for case in cases(SEED, COUNT):
        try:
            reply = exchange(ng.port, case)
        except socket.timeout:
            pytest.fail("%s: no answer and no close within 15 s" % case.what)
        if not reply:
            # only a client that went away first may get nothing
            assert case.cut, "%s: closed without an answer" % case.what
            outcomes["closed"] = outcomes.get("closed", 0) + 1
            continue
        head, _, body = reply.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        outcomes[status] = outcomes.get(status, 0) + 1
        if status == 200:
            check_echo(case, dechunked(head, body))
        else:
            assert status in REFUSED, "%s: %r" % (case.what, head[:200])
    # the worker that served it all is the one that started
    assert ng.get("/pid").body == before
    # the generator reached both sides: the handler and nginx's refusals
    assert outcomes.get(200, 0) >= COUNT // 4, outcomes
    assert sum(v for k, v in outcomes.items() if k != 200) >= COUNT // 10, \
        outcomes


def dechunked(head, body):
    if b"transfer-encoding: chunked" not in head.lower():
        return body
    out, at = b"", 0
    while True:
        eol = body.index(b"\r\n", at)
        n = int(body[at:eol].split(b";")[0], 16)
        if n == 0:
            return out
        out += body[eol + 2:eol + 2 + n]
        at = eol + 2 + n + 2
