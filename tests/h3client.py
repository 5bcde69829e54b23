"""An HTTP/3 client for the tests, on aioquic (PyPI): requests over one QUIC
connection, each answered as (status, headers, body).

    python3 tests/h3client.py [-k] [--cafile PEM] [-X METHOD] [-d DATA]
                              https://127.0.0.1:PORT/PATH

prints the status, the headers and the body's length and first bytes.
"""

import argparse
import asyncio
import ssl
import sys
from urllib.parse import urlsplit

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration


class Response:
    def __init__(self):
        self.status = None
        self.headers = []
        self.body = bytearray()

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k == name:
                return v
        return None


class _Protocol(QuicConnectionProtocol):
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self._h3 = H3Connection(self._quic)
        self._streams = {}

    def quic_event_received(self, event):
        for ev in self._h3.handle_event(event):
            entry = self._streams.get(getattr(ev, "stream_id", None))
            if entry is None:
                continue
            response, done = entry
            if isinstance(ev, HeadersReceived):
                for k, v in ev.headers:
                    if k == b":status":
                        response.status = int(v)
                    else:
                        response.headers.append((k.decode(), v.decode()))
            elif isinstance(ev, DataReceived):
                response.body += ev.data
            if ev.stream_ended and not done.done():
                done.set_result(response)

    async def request(self, method, authority, path, headers=(), body=None):
        sid = self._quic.get_next_available_stream_id()
        done = asyncio.get_running_loop().create_future()
        self._streams[sid] = (Response(), done)
        head = [(b":method", method.encode()), (b":scheme", b"https"),
                (b":authority", authority.encode()), (b":path", path.encode())]
        head += [(k.lower().encode(), v.encode()) for k, v in headers]
        self._h3.send_headers(sid, head, end_stream=body is None)
        if body is not None:
            self._h3.send_data(sid, body, end_stream=True)
        self.transmit()
        return await done


async def _fetch(host, port, requests, cafile, server_name, timeout,
                 authority=None):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN,
                               server_name=server_name,
                               max_stream_data=16 << 20, max_data=64 << 20)
    if cafile:
        config.load_verify_locations(cafile)
    else:
        config.verify_mode = ssl.CERT_NONE
    async with connect(host, port, configuration=config,
                       create_protocol=_Protocol,
                       wait_connected=True) as client:
        authority = authority or "%s:%d" % (server_name, port)
        out = []
        for method, path, headers, body in requests:
            out.append(await asyncio.wait_for(
                client.request(method, authority, path, headers, body),
                timeout))
        return out


def fetch(port, requests, host="127.0.0.1", cafile=None,
          server_name="localhost", timeout=60, authority=None):
    """requests: (method, path, headers, body or None) each, sent one after
    the other over one connection; their Responses.  authority: the
    requests' :authority (default SERVER_NAME:PORT)."""
    return asyncio.run(asyncio.wait_for(
        _fetch(host, port, requests, cafile, server_name, timeout, authority),
        timeout * (len(requests) + 1)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("url")
    p.add_argument("-X", dest="method", default="GET")
    p.add_argument("-d", dest="data")
    p.add_argument("-k", action="store_true", help="no certificate check")
    p.add_argument("--cafile")
    a = p.parse_args()
    u = urlsplit(a.url)
    if not a.k and not a.cafile:
        p.error("--cafile PEM, or -k for no check")
    path = (u.path or "/") + ("?" + u.query if u.query else "")
    body = a.data.encode() if a.data is not None else None
    (r,) = fetch(u.port or 443, [(a.method, path, [], body)],
                 host=u.hostname, cafile=a.cafile,
                 server_name=u.hostname)
    print(r.status)
    for k, v in r.headers:
        print("%s: %s" % (k, v))
    print("(%d bytes) %r" % (len(r.body), bytes(r.body[:200])))


if __name__ == "__main__":
    sys.exit(main())
