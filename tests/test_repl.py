"""jvm_repl: a Clojure socket REPL in each worker on 127.0.0.1 (or the
address given: jvm_repl ADDR:PORT), port PORT + the worker's number,
announced in the error log; a handler var redefined there serves the next
request."""

import re
import socket

import pytest

from harness import Nginx, free_port, free_port_range

LOCATIONS = """
        location / { jvm_content testapp.repl/handler; }
"""


@pytest.fixture(scope="module")
def base(mode):
    return free_port_range(2)


@pytest.fixture(scope="module")
def ng(mode, base):
    with Nginx(LOCATIONS, http="    jvm_repl %d;\n" % base, workers=2,
               mode=mode) as n:
        yield n


class Repl:
    """A socket REPL client: sends a form, reads up to the next prompt."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
        self.read_prompt()

    def read_prompt(self):
        while not re.search(rb"=> $", self.buf):
            data = self.sock.recv(65536)
            assert data, "the REPL closed: %r" % self.buf
            self.buf += data
        out, self.buf = self.buf, b""
        return re.sub(rb"\S+=> $", b"", out).decode().strip()

    def eval(self, form):
        self.sock.sendall(form.encode() + b"\n")
        return self.read_prompt()

    def close(self):
        self.sock.close()


def test_each_worker_announces_its_repl(ng, base):
    lines = ng.log_lines(r"\[notice\].*Clojure socket REPL listening")
    ports = sorted(int(re.search(r"127\.0\.0\.1:(\d+)", l).group(1))
                   for l in lines)
    assert ports == [base, base + 1]
    pids = {int(re.search(r"\] (\d+)#", l).group(1)) for l in lines}
    assert pids == set(ng.worker_pids())


def listening_addresses(ports):
    """{(address, port)} of listening TCP sockets on these ports; an IPv6
    socket's IPv4-mapped address is given as IPv4."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                addr, port = local.split(":")
                if state == "0A" and int(port, 16) in ports:
                    if addr.startswith("0000000000000000FFFF0000"):
                        addr = addr[24:]
                    found.add((addr, int(port, 16)))
    return found


def test_loopback_only(ng, base):
    assert listening_addresses((base, base + 1)) == {
        ("0100007F", base), ("0100007F", base + 1)}


def test_each_repl_is_its_worker(ng, base):
    pids = set()
    for port in (base, base + 1):
        r = Repl(port)
        try:
            assert r.eval("(+ 1 2)") == "3"
            pids.add(int(r.eval("(.pid (java.lang.ProcessHandle/current))")))
        finally:
            r.close()
    assert pids == set(ng.worker_pids())


def test_a_redefined_handler_serves_the_next_request(ng, base):
    assert ng.get("/").text == "v1"
    try:
        for port in (base, base + 1):
            r = Repl(port)
            try:
                r.eval("(in-ns 'testapp.repl)")
                out = r.eval('(defn handler [_] {:status 200 :body (str "v2 " '
                             '(.pid (java.lang.ProcessHandle/current)))})')
                assert out == "#'testapp.repl/handler"
            finally:
                r.close()
        # every worker answers with the new definition at once
        seen = set()
        for _ in range(40):
            text = ng.request("GET", "/", headers={"Connection": "close"}).text
            assert text.startswith("v2 "), text
            seen.add(int(text.split()[1]))
        assert seen <= set(ng.worker_pids())
    finally:
        for port in (base, base + 1):
            r = Repl(port)
            try:
                r.eval("(require 'testapp.repl :reload)")
            finally:
                r.close()
    assert ng.get("/").text == "v1"


def test_off_by_default_and_bad_values():
    n = Nginx(LOCATIONS)
    try:
        assert n.test_config().returncode == 0
        for bad, msg in (("0", 'jvm_repl: invalid port "0"'),
                         ("70000", 'jvm_repl: invalid port "70000"'),
                         ("x", 'jvm_repl: invalid port "x"'),
                         ("0.0.0.0:", 'jvm_repl: invalid port "0.0.0.0:"'),
                         ("0.0.0.0:x", 'jvm_repl: invalid port "0.0.0.0:x"'),
                         ("localhost:7000", 'jvm_repl: invalid address '
                          '"localhost" in "localhost:7000": an IP address'),
                         ("1.2.3:7000", 'jvm_repl: invalid address "1.2.3"'),
                         (":7000", 'jvm_repl: invalid address ""'),
                         # IPv6 without its brackets
                         ("::1:7000", 'jvm_repl: invalid address ""'),
                         ("[::1:7000", 'jvm_repl: invalid address "["'),
                         ("[x]:7000", 'jvm_repl: invalid address "[x]"')):
            m = Nginx(LOCATIONS, http="    jvm_repl %s;\n" % bad)
            try:
                r = m.test_config()
                assert r.returncode != 0 and msg in r.stderr, r.stderr
            finally:
                m.cleanup()
    finally:
        n.cleanup()


def test_an_address_is_where_it_listens():
    """jvm_repl 0.0.0.0:PORT: all the machine's addresses (in a container,
    where a published port reaches it: tests/test_image.py)."""
    base = free_port()
    with Nginx(LOCATIONS, http="    jvm_repl 0.0.0.0:%d;\n" % base) as n:
        assert n.wait_log(r"\[notice\].*Clojure socket REPL listening on "
                          r"0\.0\.0\.0:%d " % base)
        # Java's dual-stack socket for 0.0.0.0 is IPv6's any address
        assert listening_addresses((base,)) in ({("00000000", base)},
                                                {("0" * 32, base)})
        r = Repl(base)
        try:
            assert int(r.eval("(.pid (java.lang.ProcessHandle/current))")) \
                in n.worker_pids()
        finally:
            r.close()


def test_off_starts_nothing(mode, base):
    with Nginx(LOCATIONS, http="    jvm_repl off;\n", mode=mode) as n:
        assert n.get("/").text == "v1"
        assert not n.log_lines("socket REPL")
