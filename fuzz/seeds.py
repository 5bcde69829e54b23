#!/usr/bin/env python3
"""Writes the seed corpora of the harnesses (fuzz/corpus/HARNESS/NAME):
small inputs that each reach a part of the code, laid out as each harness
reads its input (fuzz/README.md).  Run again after changing a layout:
python3 fuzz/seeds.py.  Regression seeds of findings are kept apart, in
files named regress-*, which this script leaves alone."""

import os
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
MASK = b"\x37\xfa\x21\x3d"


def frame(opcode, payload=b"", fin=True, mask=MASK, rsv=0, form=None):
    """One client frame; form forces the 7-bit, 16-bit or 64-bit length."""
    h = bytes([(0x80 if fin else 0) | rsv | opcode])
    n = len(payload)
    form = form or (7 if n < 126 else 16 if n < 65536 else 64)
    m = 0x80 if mask is not None else 0
    if form == 7:
        h += bytes([m | n])
    elif form == 16:
        h += bytes([m | 126]) + n.to_bytes(2, "big")
    else:
        h += bytes([m | 127]) + n.to_bytes(8, "big")
    if mask is None:
        return h + payload
    return h + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def deflate(data, bits=15):
    z = zlib.compressobj(6, zlib.DEFLATED, -bits)
    out = z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH)
    assert out.endswith(b"\x00\x00\xff\xff")
    return out[:-4]


def close(code, reason=b""):
    return frame(0x8, code.to_bytes(2, "big") + reason)


def write(harness, name, data):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def with_choices(client, choices, share, most):
    """client's bytes, then the choices (first taken last in the file): as
    many as the harness reads, min(size // share, most); client bytes are
    padded with empty masked pongs when there would be too few."""
    pad = frame(0xa)
    while True:
        for c in range(most + 1):
            if min((len(client) + c) // share, most) == c:
                break
        if c >= len(choices):
            break
        client += pad
    ctl = list(choices) + [0] * (c - len(choices))
    return client + bytes(reversed(ctl))


# --- fuzz_ws_frames: a count, the client's frames, then choices -------------
# choices in the order taken (when none are left, each is 0): location settings (bits 0-1 the largest
# message: 125, 1 KiB, 64 KiB, 1 MiB; 0x10 no permessage-deflate), the
# offer (bit 0 an offer, bit 1 with server_max_window_bits 9 + (b>>2) % 7),
# bytes sent with the handshake (0x80 | n), the 101's (bit 0: it waits,
# bit 1: till it times out; bits 2-7: the allocation that fails), wsOpen's
# answer (bit 0: the listener answers pings), then each
# read's length (0x80 the whole buffer, else 1 + (b & 0x3f); 0x40 then
# waits), each message's answer (1 in the low 3 bits: the queue is full),
# each event (ws_world.c).

FULL = 0x80                       # a read takes all there is
LARGE = 2                         # jvm_websocket_max_message 64 KiB


def ws(name, client, choices=(), fault=0):
    """a byte counting the choices, the client's bytes, the choices; the
    fourth choice (fault) is the 101's and the failing allocation's"""
    choices = list(choices)
    if len(choices) >= 3:
        choices.insert(3, fault)
    write("fuzz_ws_frames", name,
          bytes([len(choices)]) + client + bytes(reversed(choices)))


hello = frame(0x1, b"Hello")
ws("text-masked", hello, [LARGE, 0, 0, 0, FULL, 0, FULL])
ws("text-one-byte-reads", hello + close(1000), [LARGE])
ws("binary-126", frame(0x2, bytes(range(200))), [LARGE, 0, 0, 0, FULL])
ws("binary-127-form", frame(0x2, b"x" * 130, form=64), [LARGE, 0, 0, 0, FULL])
ws("binary-64k", frame(0x2, b"\x00" * 1000, form=16), [LARGE, 0, 0, 0, 5, 5])
ws("fragments-ping-between",
   frame(0x1, b"Hel", fin=False) + frame(0x9, b"ping") +
   frame(0x0, b"lo", fin=True), [LARGE, 0, 0, 0, FULL, 0, FULL])
ws("utf8-split-across-frames",
   frame(0x1, "a\u20ac".encode()[:2], fin=False) +
   frame(0x0, "a\u20ac".encode()[2:], fin=False) + frame(0x0, b"!"),
   [LARGE, 0, 0, 0, 3, 3, 3])
ws("utf8-invalid", frame(0x1, b"\xed\xa0\x80"), [LARGE, 0, 0, 0, FULL])
ws("utf8-overlong", frame(0x1, b"\xc0\xaf"), [LARGE, 0, 0, 0, FULL])
ws("close-normal", close(1000, b"bye"), [LARGE, 0, 0, 0, FULL])
ws("close-empty", frame(0x8), [LARGE, 0, 0, 0, FULL])
ws("close-one-byte", frame(0x8, b"\x03"), [LARGE, 0, 0, 0, FULL])
ws("close-code-1005", close(1005), [LARGE, 0, 0, 0, FULL])
ws("close-code-4999", close(4999, "\u00e9".encode()), [LARGE, 0, 0, 0, FULL])
ws("close-reason-invalid", close(1000, b"\xff"), [LARGE, 0, 0, 0, FULL])
ws("ping-pong", frame(0x9, b"abc") + frame(0xa, b"x"), [LARGE, 0, 0, 0, FULL])
ws("ping-java-answers", frame(0x9, b"abc"), [LARGE, 0, 0, 1, FULL])
ws("ping-too-long", frame(0x9, b"p" * 126), [LARGE, 0, 0, 0, FULL])
ws("ping-fragmented", frame(0x9, b"p", fin=False), [LARGE, 0, 0, 0, FULL])
ws("unmasked", frame(0x1, b"hi", mask=None), [LARGE, 0, 0, 0, FULL])
ws("reserved-opcode", frame(0x3, b"hi"), [LARGE, 0, 0, 0, FULL])
ws("rsv2", frame(0x1, b"hi", rsv=0x20), [LARGE, 0, 0, 0, FULL])
ws("continuation-first", frame(0x0, b"hi"), [LARGE, 0, 0, 0, FULL])
ws("new-message-in-fragments",
   frame(0x1, b"a", fin=False) + frame(0x1, b"b"), [LARGE, 0, 0, 0, FULL])
ws("too-big", frame(0x2, b"y" * 200), [0, 0, 0, 0, FULL])
ws("too-big-in-fragments",
   frame(0x2, b"y" * 100, fin=False) + frame(0x0, b"y" * 100),
   [0, 0, 0, 0, FULL])
ws("with-handshake", hello + frame(0x2, b"\x01\x02"),
   [LARGE, 0, 0x80 | 13, 0, FULL])
ws("queue-full", hello + hello + hello,
   [LARGE, 0, 0, 0, FULL, 1, 1, 0, 1, 1])
# an event 0x0c: Java has a frame; then its opcode and length (0x18: text
# of 125 bytes, 0x29: binary of 300, 0x36: a close), its fill, a send
# (the first read takes all and then waits: 0xc0)
JAVA = [0xc0, 0, 0x0c, 0x18, 7, 0, 0x0c, 0x29, 3, 0, 0x0c, 0x36, 0, 0]
ws("java-sends", hello, [LARGE, 0, 0, 0] + JAVA)
ws("java-sends-deflate", hello, [LARGE, 0x03 | (2 << 2), 0, 0] + JAVA)
ws("idle-timer", b"", [LARGE | 4 | 8, 0, 0, 0, 0x04, 0x04, 0x04])
text = b"compressed " * 20
ws("deflate", frame(0x1, deflate(text), rsv=0x40),
   [LARGE, 1, 0, 0, FULL, 0, 0x0c])
ws("deflate-window-9", frame(0x2, deflate(bytes(300), 9), rsv=0x40),
   [LARGE, 0x01 | 0x02 | (0 << 2), 0, 0, FULL, 0, 0x0c])
ws("deflate-fragmented",
   frame(0x1, deflate(text)[:5], rsv=0x40, fin=False) +
   frame(0x0, deflate(text)[5:]), [LARGE, 1, 0, 0, FULL])
ws("deflate-bomb", frame(0x2, deflate(bytes(100000)), rsv=0x40),
   [1, 1, 0, 0, FULL])
ws("deflate-invalid", frame(0x2, b"\xff\xff\xff", rsv=0x40),
   [LARGE, 1, 0, 0, FULL])
ws("deflate-not-negotiated", frame(0x1, deflate(b"hi"), rsv=0x40),
   [LARGE, 0, 0, 0, FULL])
ws("deflate-on-control", frame(0x9, b"", rsv=0x40), [LARGE, 1, 0, 0, FULL])
ws("deflate-empty", frame(0x1, b"", rsv=0x40), [LARGE, 1, 0, 0, FULL])
ws("101-waits", hello, [LARGE, 0, 0, 0, FULL, 0, 0], fault=1)
ws("101-times-out", hello, [LARGE, 0, 0, 0, FULL], fault=3)
for n in (1, 2, 3, 4, 5, 6, 8, 10):
    ws("alloc-fails-%d" % n, hello + frame(0x9, b"p") +
       frame(0x1, deflate(text), rsv=0x40), [LARGE, 1, 0x80 | 11, 0, FULL],
       fault=n << 2)


# --- fuzz_ws_handshake: header lines, an empty line, frames; choices -------

def hs(name, lines, frames=b"", choices=()):
    """choices: the location's settings (as for the frames), then the
    request's (1: POST, 2: HTTP/1.0, 3: a subrequest), then as for the
    frames from the 101's on"""
    body = "".join(l + "\n" for l in lines).encode() + b"\n" + frames
    write("fuzz_ws_handshake", name, with_choices(body, choices, 8, 16))


BASE = ["Host: localhost", "Upgrade: websocket", "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13"]
hs("valid", BASE, hello)
hs("upgrade-token-list",
   ["Upgrade: h2c, WebSocket", "Connection: keep-alive, upgrade"] + BASE[3:])
hs("version-12", BASE[:4] + ["Sec-WebSocket-Version: 12"])
hs("post", BASE, choices=[0, 1])
hs("http-1.0", BASE, choices=[0, 2])
hs("subrequest", BASE, choices=[0, 3])
hs("deflate-off", BASE + ["Sec-WebSocket-Extensions: permessage-deflate"],
   choices=[0x10])
hs("no-key", BASE[:3] + BASE[4:])
hs("key-short", BASE[:3] + ["Sec-WebSocket-Key: abc=="] + BASE[4:])
hs("connection-close", BASE[:2] + ["Connection: close"] + BASE[3:])
for n, ext in enumerate([
        "permessage-deflate",
        "permessage-deflate; client_max_window_bits",
        "permessage-deflate; server_max_window_bits=10",
        'permessage-deflate; server_max_window_bits="12"',
        "permessage-deflate; server_max_window_bits=8, permessage-deflate",
        "permessage-deflate; server_no_context_takeover; "
        "client_no_context_takeover; client_max_window_bits=15",
        "permessage-deflate; server_no_context_takeover; "
        "server_no_context_takeover",
        "permessage-deflate; unknown=1, x-webkit-deflate-frame",
        'foo; bar="a,b;c\\"d", permessage-deflate ; server_max_window_bits = 9',
        "permessage-deflate; server_max_window_bits=016",
        "PerMessage-Deflate;Client_Max_Window_Bits",
]):
    hs("extensions-%02d" % n, BASE + ["Sec-WebSocket-Extensions: " + ext],
       frame(0x1, deflate(b"hello hello"), rsv=0x40))
hs("extensions-two-fields",
   BASE + ["Sec-WebSocket-Extensions: x-foo",
           "Sec-WebSocket-Extensions: permessage-deflate; "
           "server_max_window_bits=11"])


# --- fuzz_inflate: a byte of settings, then a compressed payload ------------
# bits 0-1 the limit (0, 125, 4096, 1 MiB), bits 2-4 the window frames are
# compressed with (0: none, else 8 + n), bit 5 binary rather than text.

def infl(name, settings, payload):
    write("fuzz_inflate", name, bytes([settings]) + payload)


infl("text", 3 | (7 << 2), deflate(b"Hello, Hello, Hello!"))
infl("window-9", 3 | (1 << 2), deflate(bytes(range(256)) * 4, 9))
infl("stored-block", 2 | (3 << 2), zlib.compressobj(0, zlib.DEFLATED, -15)
     .compress(b"stored") + b"")
infl("bfinal", 3, zlib.compress(b"the end", 9)[2:-4])
infl("bomb", 2 | (7 << 2), deflate(bytes(200000)))
infl("over-125", 1, deflate(b"z" * 200))
infl("invalid", 3, b"\xff\xfe\xfd")
infl("empty", 3 | (7 << 2), b"")
infl("empty-block", 3, b"\x00")
infl("trailing-after-end", 3, zlib.compress(b"x")[2:-4] + b"junk")


# --- fuzz_upload: the body, then choices ------------------------------------

def up(name, body, choices):
    ctl = [0] * 0
    c = 0
    while min((len(body) + c) // 2, 128) != c:
        c += 1
    ctl = list(choices) + [0x06] * (c - len(choices))
    assert len(ctl) == c, name
    write("fuzz_upload", name, body + bytes(reversed(ctl)))


up("small-whole", b"name=value&x=1",
   [0, 0x80, 0x06, 0x80, 0, 0])
up("pieces", bytes(range(64)),
   [2, 5, 0, 16, 0x06, 1, 20, 0x16, 0, 30, 0, 0, 0])
up("full-then-taken", b"a" * 40, [0, 20, 1, 2, 0x06, 0, 20, 0])
up("client-left", b"b" * 40, [0, 10, 0, 0x00])
up("too-large", b"c" * 40, [0, 10, 0, 0x01])
up("handler-closed-body", b"d" * 40, [0, 10, 3, 0x06, 0, 30])
up("answered-early", b"e" * 40, [0, 10, 0, 1])
up("queue-full-503", b"f" * 10, [0, 0, 0xff])


# --- fuzz_request: a settings byte, then parts, each a length byte and its
# bytes: method, URI as sent, protocol, host, address (bit 0 of the
# settings: a URI a rewrite made, and its args, follow); then turns: an even
# byte, a header field's name and value; an odd one (with a body: bit 1 of
# the settings, bit 2 it still arrives), a body buffer (bit 1 of the turn:
# in a file, bit 2 a large descriptor).

def part(b):
    return bytes([len(b)]) + b


def req(name, settings, parts, turns=b""):
    write("fuzz_request", name,
          bytes([settings]) + b"".join(part(p) for p in parts) + turns)


def field(n, v, live=True):
    return bytes([2 if live else 0]) + part(n) + part(v)


GET = [b"GET", b"/path?a=1&b=%20", b"HTTP/1.1", b"example.test",
       b"127.0.0.1"]
req("get", 0, GET, field(b"Host", b"example.test") +
    field(b"Accept", b"*/*") + field(b"X-Deleted", b"v", live=False))
req("no-query", 0, [b"GET", b"/", b"HTTP/1.0", b"", b"::1"])
req("empty-query", 0, [b"GET", b"/p?", b"", b"h", b"a"])
req("two-marks", 0, [b"GET", b"/p?x?y", b"HTTP/1.1", b"h", b"a"])
req("rewritten", 1, GET + [b"/new", b"x=1"])
req("rewritten-no-args", 1, GET + [b"/new", b""])
req("post-body", 2, [b"POST"] + GET[1:],
    field(b"Content-Length", b"11") + b"\x01" + part(b"hello ") +
    b"\x01" + part(b"world"))
req("post-file", 2, [b"POST"] + GET[1:], b"\x03" + b"\x07" + b"\x01" +
    part(b"tail"))
req("post-streaming", 6, [b"POST"] + GET[1:], b"\x01" + part(b"piece"))
req("websocket", 0, GET, field(b"Upgrade", b"websocket") +
    field(b"Connection", b"Upgrade") +
    field(b"Sec-WebSocket-Key", b"dGhlIHNhbXBsZSBub25jZQ==") +
    field(b"Sec-WebSocket-Version", b"13"))
req("many-fields", 0, GET, b"".join(field(b"X-%d" % i, b"v" * i)
                                    for i in range(40)))
req("binary-bytes", 0, [bytes(range(256))[:200], b"/\x00\xff",
                        b"\x80", b"\xc3\xa9", b"\x00"],
    field(b"\x00\xff", bytes(range(255))))
