"""WebSocket compression, permessage-deflate (RFC 7692), against a real
nginx: what the handshake answers to each offer (and to none, and where the
location does not allow it), messages both ways through a real client and
a raw one, reserved bits where they do not belong, compressed data that is
broken or a decompression bomb (the limit counts inflated bytes), clients
that vanish half-way, and the memory an idle compressed socket costs."""

import os
import re
import socket
import struct
import time
import zlib

import pytest

websockets = pytest.importorskip("websockets")
from websockets.sync.client import connect  # noqa: E402

from harness import (SANITIZED, Nginx, read_ws_frame, sanitized_rss,  # noqa: E402
                     wait_for, ws_expect_close, ws_frame, ws_handshake)

LOCATIONS = """
        location /ws/pure { jvm_websocket_deflate on;
                            jvm_content testapp.ws/pure-echo; }
        location /ws/pure-plain { jvm_content testapp.ws/pure-echo; }
        location /ws/deflate { jvm_websocket_deflate on;
                               jvm_content testapp.ws/echo; }
        location /ws/plain { jvm_content testapp.ws/echo; }
        location /ws/small { jvm_websocket_deflate on;
                             jvm_websocket_max_message 64k;
                             jvm_content testapp.ws/echo; }
        location /ws/java { jvm_websocket_deflate on;
                            jvm_content testapp.WsEcho; }
        location /live-sockets { jvm_content testapp.ws/live-sockets; }
"""

# a server block that allows compression, a location that takes it back
HTTP = """
    server {
        listen 127.0.0.1:@PORT2@;
        jvm_websocket_deflate on;
        location /ws/on { jvm_content testapp.ws/echo; }
        location /ws/off { jvm_websocket_deflate off;
                           jvm_content testapp.ws/echo; }
    }
"""

ANSWER = b"permessage-deflate; server_no_context_takeover; " \
         b"client_no_context_takeover"

SMALL = 64 * 1024


# --- a raw client that knows RSV1 --------------------------------------------

def handshake(port, path="/ws/deflate", offers=(b"permessage-deflate",)):
    s, head = ws_handshake(port, path, b"".join(
        b"Sec-WebSocket-Extensions: " + o + b"\r\n" for o in offers))
    assert b" 101 " in head.split(b"\r\n")[0], head
    return s, head


def extensions(head):
    """The Sec-WebSocket-Extensions fields of a 101, as one bytes (or None)."""
    found = [line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")
             if line.lower().startswith(b"sec-websocket-extensions:")]
    assert len(found) <= 1, head
    return found[0] if found else None


def deflate(data, wbits=15, final=False):
    """A message compressed alone, the 00 00 ff ff left off (RFC 7692 7.2.1)."""
    z = zlib.compressobj(6, zlib.DEFLATED, -wbits)
    if final:
        return z.compress(data) + z.flush(zlib.Z_FINISH)
    out = z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH)
    assert out.endswith(b"\x00\x00\xff\xff")
    return out[:-4]


def inflate(data):
    return zlib.decompressobj(-15).decompress(data + b"\x00\x00\xff\xff")


def frame(opcode, payload=b"", fin=True, rsv1=False, rsv=0):
    return ws_frame(opcode, payload, fin, rsv=rsv | (4 if rsv1 else 0))


def read_frame(s):
    """(opcode, fin, rsv1, payload) of the server's next frame."""
    b0, payload = read_ws_frame(s)
    assert not b0 & 0x30, "RSV2 and RSV3 stay clear"
    return b0 & 0x0F, bool(b0 & 0x80), bool(b0 & 0x40), payload


def read_message(s):
    """(opcode, payload inflated if it came compressed) of the next message."""
    op, fin, rsv1, payload = read_frame(s)
    assert fin, "the server sends whole messages"
    return op, (inflate(payload) if rsv1 else payload), rsv1


expect_close = ws_expect_close


def still_serves(ng):
    """The worker is fine: a new compressed socket echoes."""
    s, head = handshake(ng.port)
    with s:
        assert extensions(head) == ANSWER
        text = b"still here " * 20
        s.sendall(frame(1, deflate(text), rsv1=True))
        assert read_message(s)[:2] == (1, text)


# --- negotiation ---------------------------------------------------------------

def test_offered_and_allowed_is_accepted_without_context_takeover(ng):
    s, head = handshake(ng.port, offers=[b"permessage-deflate; "
                                         b"client_max_window_bits"])
    with s:
        assert extensions(head) == ANSWER


def test_not_offered_is_not_answered(ng):
    s, head = handshake(ng.port, offers=[])
    with s:
        assert extensions(head) is None
        # and a compressed frame is then a protocol error
        s.sendall(frame(1, deflate(b"x" * 100), rsv1=True))
        expect_close(s, 1002)


@pytest.mark.parametrize("path", ["/ws/plain", "/ws/off"])
def test_location_that_does_not_allow_it_declines(ng, path):
    port = ng.port if path == "/ws/plain" else ng.port2
    s, head = handshake(port, path)
    with s:
        assert extensions(head) is None
        s.sendall(frame(2, b"plain"))
        assert read_frame(s) == (2, True, False, b"plain")
        s.sendall(frame(1, deflate(b"x" * 100), rsv1=True))
        expect_close(s, 1002)


def test_server_block_allows_it_for_its_locations(ng):
    s, head = handshake(ng.port2, "/ws/on")
    with s:
        assert extensions(head) == ANSWER


@pytest.mark.parametrize("offers, answer", [
    # the window the server compresses with, when the client limits it
    ([b"permessage-deflate; server_max_window_bits=10"],
     ANSWER + b"; server_max_window_bits=10"),
    ([b'permessage-deflate; server_max_window_bits="12"'],
     ANSWER + b"; server_max_window_bits=12"),
    ([b"permessage-deflate;server_max_window_bits=9;client_max_window_bits=8"],
     ANSWER + b"; server_max_window_bits=9"),
    # what the client already does, or allows, changes nothing
    ([b"permessage-deflate; server_no_context_takeover; "
      b"client_no_context_takeover; client_max_window_bits=15"], ANSWER),
    ([b"Permessage-Deflate"], ANSWER),
    # the first offer the server can honour
    ([b"permessage-deflate; server_max_window_bits=8, permessage-deflate; "
      b"client_max_window_bits"], ANSWER),
    ([b"x-webkit-deflate-frame, permessage-deflate"], ANSWER),
    ([b"x-unknown; a=\"b,c\"", b"permessage-deflate"], ANSWER),
    # declined: zlib's smallest window is 512 bytes; unknown, repeated or
    # malformed parameters
    ([b"permessage-deflate; server_max_window_bits=8"], None),
    ([b"permessage-deflate; server_max_window_bits"], None),
    ([b"permessage-deflate; server_max_window_bits=16"], None),
    ([b"permessage-deflate; server_max_window_bits=09"], None),
    ([b"permessage-deflate; client_max_window_bits=7"], None),
    ([b"permessage-deflate; server_no_context_takeover=1"], None),
    ([b"permessage-deflate; server_no_context_takeover; "
      b"server_no_context_takeover"], None),
    ([b"permessage-deflate; mystery"], None),
    ([b"permessage-deflatex"], None),
    ([b", ,;"], None),
])
def test_parameters(ng, offers, answer):
    s, head = handshake(ng.port, offers=offers)
    with s:
        assert extensions(head) == answer
        s.sendall(frame(1, b"after " + (answer or b"none")))
        op, text, rsv1 = read_message(s)
        assert text == b"after " + (answer or b"none")
        assert rsv1 == (answer is not None), "compressed only if negotiated"


# --- messages -----------------------------------------------------------------

def test_round_trip_with_a_real_client(ng):
    """The websockets package offers permessage-deflate by default."""
    with connect("ws://127.0.0.1:%d/ws/deflate" % ng.port,
                 max_size=2 ** 22) as c:
        assert c.response.headers["Sec-WebSocket-Extensions"] == ANSWER.decode()
        assert [e.name for e in c.protocol.extensions] == ["permessage-deflate"]
        text = "".join("line %d: ünïcödé, again and again\n" % i
                       for i in range(10000))
        c.send(text)
        assert c.recv(timeout=30) == text
        data = bytes(range(256)) * 2048
        c.send(data)
        assert c.recv(timeout=30) == data
        for i in range(50):
            c.send("message %d" % i)
            assert c.recv(timeout=10) == "message %d" % i


def test_round_trip_through_a_java_listener(ng):
    with connect("ws://127.0.0.1:%d/ws/java" % ng.port) as c:
        assert [e.name for e in c.protocol.extensions] == ["permessage-deflate"]
        c.send("java " * 1000)
        assert c.recv(timeout=10) == "JAVA " * 1000     # it upper-cases


def test_what_the_server_sends_is_compressed(ng):
    s, head = handshake(ng.port)
    with s:
        text = b"compressible " * 1000
        s.sendall(frame(1, deflate(text), rsv1=True))
        op, fin, rsv1, payload = read_frame(s)
        assert (op, fin, rsv1) == (1, True, True)
        assert len(payload) < len(text) // 10
        assert inflate(payload) == text
        # an uncompressed message from the client is fine too (RFC 7692 6)
        s.sendall(frame(2, text))
        assert read_message(s) == (2, text, True)


def test_small_or_incompressible_messages_are_compressed_too(ng):
    """RFC 7692 would let them go as they are; kosoku's Autobahn client
    mistakes such a message for text (a str), so every message goes
    compressed, at the cost of a few bytes."""
    s, head = handshake(ng.port)
    with s:
        s.sendall(frame(1, deflate(b"hi"), rsv1=True))
        assert read_message(s) == (1, b"hi", True)
        noise = os.urandom(5000)
        s.sendall(frame(2, noise))
        op, fin, rsv1, payload = read_frame(s)
        assert rsv1 and len(payload) < len(noise) + 64
        assert inflate(payload) == noise


def test_compressed_message_in_fragments_and_a_ping_between(ng):
    s, head = handshake(ng.port)
    with s:
        text = ("fragmented ünïcödé " * 500).encode()
        data = deflate(text)
        third = len(data) // 3
        s.sendall(frame(1, data[:third], fin=False, rsv1=True)
                  + frame(9, b"between")
                  + frame(0, data[third:2 * third], fin=False)
                  + frame(0, data[2 * third:]))
        assert read_frame(s) == (10, True, False, b"between")
        assert read_message(s)[:2] == (1, text)


def test_message_ended_with_a_final_block(ng):
    s, head = handshake(ng.port)
    with s:
        text = b"final block " * 100
        s.sendall(frame(1, deflate(text, final=True), rsv1=True))
        assert read_message(s)[:2] == (1, text)


def test_empty_compressed_message(ng):
    s, head = handshake(ng.port)
    with s:
        s.sendall(frame(2, b"", rsv1=True) + frame(2, b"\x00", rsv1=True))
        # the server's empty message: the one byte 00 (RFC 7692 7.2.3.6)
        assert read_frame(s) == (2, True, True, b"\x00")
        assert read_frame(s) == (2, True, True, b"\x00")


def test_the_servers_window_is_kept_to(ng):
    """Asked for a 512-byte window, the server's back-references reach no
    further: a 512-byte-window inflater reads every message."""
    s, head = handshake(ng.port, offers=[b"permessage-deflate; "
                                         b"server_max_window_bits=9"])
    with s:
        text = os.urandom(400).hex().encode() * 20   # repeats every 800 bytes
        s.sendall(frame(1, deflate(text), rsv1=True))
        op, _, rsv1, payload = read_frame(s)
        assert rsv1
        d = zlib.decompressobj(-9)
        assert d.decompress(payload + b"\x00\x00\xff\xff") == text


def test_compressed_message_trickled_byte_by_byte(ng):
    s, head = handshake(ng.port)
    with s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        text = b"slowly, one byte at a time " * 8
        for b in frame(1, deflate(text), rsv1=True):
            s.sendall(bytes([b]))
            time.sleep(0.002)
        assert read_message(s)[:2] == (1, text)


# --- what the client may not do ------------------------------------------------

@pytest.mark.parametrize("data, code", [
    (frame(9, b"x", rsv1=True), 1002),                      # on a ping
    (frame(8, struct.pack("!H", 1000), rsv1=True), 1002),   # on a close
    (frame(1, deflate(b"a" * 64), fin=False, rsv1=True)
     + frame(0, b"", rsv1=True), 1002),                     # on a continuation
    (frame(1, b"x", rsv=2), 1002),                          # RSV2
    (frame(1, b"x", rsv1=True, rsv=1), 1002),               # RSV3
    (frame(1, b"\xff\xff\xff\xff" * 10, rsv1=True), 1007),  # not deflate
    (frame(1, deflate(b"\xff\xfe" * 50), rsv1=True), 1007),  # not UTF-8
], ids=["rsv1-ping", "rsv1-close", "rsv1-continuation", "rsv2", "rsv3",
        "not-deflate", "not-utf8"])     # not the random masks (pytest-xdist)
def test_client_errors(ng, data, code):
    s, head = handshake(ng.port)
    with s:
        s.sendall(data)
        expect_close(s, code)


def test_context_taken_over_against_the_answer_is_refused(ng):
    """The server answered client_no_context_takeover: a second message
    that points back into the first is not valid alone (1007)."""
    s, head = handshake(ng.port)
    with s:
        text = os.urandom(500).hex().encode()
        z = zlib.compressobj(6, zlib.DEFLATED, -15)
        first = z.compress(text) + z.flush(zlib.Z_SYNC_FLUSH)
        second = z.compress(text) + z.flush(zlib.Z_SYNC_FLUSH)
        s.sendall(frame(1, first[:-4], rsv1=True))
        assert read_message(s)[:2] == (1, text)
        s.sendall(frame(1, second[:-4], rsv1=True))
        expect_close(s, 1007)


# --- decompression bombs --------------------------------------------------------

def test_bomb_is_refused_with_1009(ng):
    """32 MB of zeros compress to 32 KB; the location's limit is 64 KB:
    inflating stops there, the socket closes with 1009, and the worker
    (the same one) goes on serving with its memory where it was."""
    (pid,) = ng.worker_pids()
    bomb = deflate(b"\x00" * (32 * 1024 * 1024))
    assert len(bomb) < SMALL
    before = rss_kb(pid)
    for _ in range(3):
        s, head = handshake(ng.port, "/ws/small")
        with s:
            start = time.monotonic()
            s.sendall(frame(2, bomb, rsv1=True))
            expect_close(s, 1009)
            assert time.monotonic() - start < 5
    assert ng.worker_pids() == [pid]
    if not SANITIZED:
        assert rss_kb(pid) - before < 16 * 1024, "the bomb was inflated"
    still_serves(ng)


def test_bomb_in_small_fragments_is_refused(ng):
    bomb = deflate(b"a" * (SMALL * 50))
    s, head = handshake(ng.port, "/ws/small")
    with s:
        step = 100
        frames = [frame(0 if i else 2, bomb[i:i + step],
                        fin=i + step >= len(bomb), rsv1=(i == 0))
                  for i in range(0, len(bomb), step)]
        s.sendall(b"".join(frames))
        expect_close(s, 1009)


def test_limit_counts_inflated_bytes_exactly(ng):
    s, head = handshake(ng.port, "/ws/small")
    with s:
        s.sendall(frame(2, deflate(b"z" * SMALL), rsv1=True))
        assert read_message(s)[:2] == (2, b"z" * SMALL)
        s.sendall(frame(2, deflate(b"z" * (SMALL + 1)), rsv1=True))
        expect_close(s, 1009)


# --- clients that vanish -----------------------------------------------------

@pytest.mark.parametrize("step", ["first fragment", "half a frame",
                                  "after the bomb"])
def test_client_that_vanishes_leaves_nothing(ng, step):
    text = b"vanishing " * 5000
    data = deflate(text)
    s, head = handshake(ng.port, "/ws/small")
    if step == "first fragment":
        s.sendall(frame(1, data[:100], fin=False, rsv1=True))
    elif step == "half a frame":
        s.sendall(frame(1, data, rsv1=True)[:len(data) // 2])
    else:
        s.sendall(frame(2, deflate(b"\x00" * SMALL * 4), rsv1=True))
    s.close()
    assert wait_for(lambda: ng.get("/live-sockets").text == "0", 60), \
        ng.get("/live-sockets").text
    still_serves(ng)


# --- memory -----------------------------------------------------------------------

def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


@pytest.mark.skipif(SANITIZED, reason=sanitized_rss)
def test_memory_per_idle_compressed_socket(mode, capsys):
    """1,500 idle WebSockets, each having echoed one compressed message both
    ways, cost the worker what 1,500 plain ones do: a socket keeps no zlib
    state between messages (the worker's own streams are made once, by the
    warm-up).  Each batch is held open while the next is measured, so that
    each takes fresh memory (none freed by the one before); with a fixed,
    pre-touched heap, what grows is the worker's C memory (the Java
    objects of a socket are the same either way).  The JVM interprets only
    (-Xint): with the JIT, the compilers' memory, freed by HotSpot's chunk
    pool cleaner seconds later, moved RSS by MBs on its own (the test slept
    6 s for it, and still saw batches of 0 to 3,500 bytes a socket); under
    -Xint every batch measures 1,161 bytes a socket, to the byte, but the
    first compressed one (the zlib streams' pages taken by the warm-up).
    Five batches of each, interleaved, and their medians all the same;
    zlib's state kept per socket would cost 40 KB (an inflater) to 300 KB,
    far past the margin."""
    if mode != "loop":
        pytest.skip("once is enough: the C side is the same in every mode")
    http = ("    jvm_options -Xms64m -Xmx64m -XX:+AlwaysPreTouch "
            "-XX:+UseSerialGC -Xint;\n")
    count = 1500
    n = Nginx(LOCATIONS, http=http, mode=mode)
    with open(n.conf) as f:
        conf = f.read()
    with open(n.conf, "w") as f:
        f.write(conf.replace("worker_connections 256;",
                             "worker_connections %d;" % (11 * count + 256)))
    with n:
        (pid,) = n.worker_pids()
        text = b"an idle socket's one message " * 10

        def hold(path, compressed, k=count):
            socks = []
            for _ in range(k):
                s, head = handshake(n.port, path)
                assert (extensions(head) is not None) == compressed
                s.sendall(frame(1, deflate(text), rsv1=True) if compressed
                          else frame(1, text))
                op, got, rsv1 = read_message(s)
                assert (op, got, rsv1) == (1, text, compressed)
                socks.append(s)
            return socks

        # warm-up: the worker's zlib streams are made, the socket table
        # sized
        for path, compressed in (("/ws/pure", True),
                                 ("/ws/pure-plain", False)) * 2:
            for s in hold(path, compressed, 1000):
                s.close()
        assert wait_for(lambda: n.get("/live-sockets").text == "0", 60)
        held = hold("/ws/pure", True, 50) + hold("/ws/pure-plain", False, 50)
        figures = []
        try:
            for path, compressed in (("/ws/pure", True),
                                     ("/ws/pure-plain", False)) * 5:
                before = rss_kb(pid)
                held += hold(path, compressed)     # each socket echoed
                figures.append((path, (rss_kb(pid) - before) * 1024 / count))
        finally:
            for s in held:
                s.close()
        assert wait_for(lambda: n.get("/live-sockets").text == "0", 60)
        plain = [b for p, b in figures if p == "/ws/pure-plain"]
        deflated = [b for p, b in figures if p == "/ws/pure"]
        with capsys.disabled():
            print("\nworker RSS per idle WebSocket (bytes, %d a batch): "
                  "plain %s, compressed %s" % (
                      count, ", ".join("%.0f" % b for b in plain),
                      ", ".join("%.0f" % b for b in deflated)))
        assert sorted(deflated)[2] < sorted(plain)[2] + 2048, figures
        assert sorted(deflated)[2] < 4096, figures


# --- configuration ------------------------------------------------------------

@pytest.mark.parametrize("directive", ["jvm_websocket_deflate maybe;",
                                       "jvm_websocket_deflate on off;"])
def test_bad_directive_fails_nginx_t(directive):
    n = Nginx("location / { %s jvm_content testapp.ws/echo; }" % directive)
    try:
        r = n.test_config()
        assert r.returncode != 0
        assert "jvm_websocket_deflate" in r.stderr, r.stderr
    finally:
        n.cleanup()
