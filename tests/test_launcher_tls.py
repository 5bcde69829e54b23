"""bin/nginx-jvm --tls, --tls-self-signed and --http3: HTTPS with HTTP/2,
and HTTP/3 over QUIC, through the launcher, with real clients.

HTTP/2: curl (Debian's, --http2) against the system nginx (1.22: "listen
... ssl http2") and against the newest nginx of `make test-nginx-matrix`
with QUIC (1.25.1 and newer: the "http2" directive): a Ring and a Java
handler, a streamed response body, an upload the handler reads as it
arrives, server-sent events.  HTTP/3: tests/h3client.py (aioquic, from
PyPI) against that nginx: a Ring and a Java handler, a 10 MB response, a
POST.  The request map a handler sees is the same over HTTP/1.1, HTTP/2 and
HTTP/3 but for :protocol: an HTTP/3 client's :authority is its Host, as
nginx makes it over HTTP/2 (test_the_request_map_is_the_same_over_every_protocol).

The HTTP/3 tests need an nginx built --with-http_v3_module: `make
test-nginx-matrix` (scripts/nginx-version.sh) builds Debian 13's and
unstable's; NGINX_JVM_H3_NGINX names another.  Without one they are skipped
and say so.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness import (CLJ_APPS, NGINX, RING_JARS, ROOT, Launcher, java_classes,
                     read_edn, wait_for)

pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None or shutil.which("curl") is None,
    reason="the openssl and curl commands are needed")

LAUNCHER = str(ROOT / "bin" / "nginx-jvm")
BUILD = ROOT / "build"

SERVER = [
    "location /java { jvm_content testapp.Echo; }",
    "location /upload/ { jvm_mode pool; jvm_request_buffering off;"
    " jvm_content testapp.Upload; }",
    "location = /result { jvm_content testapp.Upload; }",
    "location /sse { jvm_async on; jvm_content testapp.streams/sse; }",
    "location /producer { jvm_content testapp.streams/producer; }",
    "location /stream { jvm_content testapp.ring/stream-body; }",
    "location /big { jvm_content testapp.ring/big-bytes; }",
    "location /digest { jvm_content testapp.ring/body-digest; }",
]


def nginx_v(nginx):
    env = dict(os.environ)
    env.pop("NGINX", None)
    return subprocess.run([nginx, "-V"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          env=env).stdout


def quic_nginx():
    """The nginx with http_v3_module to test HTTP/3 on: $NGINX_JVM_H3_NGINX,
    else the newest of build/nginx-*/sbin/nginx that has it and whose module
    is newer than the module's sources (an older one would test old code:
    scripts/nginx-version.sh, run by `make test-nginx-other`, rebuilds it)."""
    named = os.environ.get("NGINX_JVM_H3_NGINX")
    if named:
        return named
    sources = max(f.stat().st_mtime for f in (ROOT / "src" / "c").iterdir())
    found = []
    for d in BUILD.glob("nginx-[0-9]*"):
        nginx = d / "sbin" / "nginx"
        module = d / "ngx_http_jvm_module.so"
        if module.exists() and module.stat().st_mtime >= sources \
                and os.access(nginx, os.X_OK) \
                and "--with-http_v3_module" in nginx_v(str(nginx)):
            found.append((tuple(int(x) for x in d.name[6:].split(".")), str(nginx)))
    return max(found)[1] if found else None


QUIC_NGINX = quic_nginx()
NO_QUIC = ("no nginx built --with-http_v3_module: `make test-nginx-matrix` "
           "builds them (build/nginx-VERSION), NGINX_JVM_H3_NGINX names one")
# $NGINX (the system's, or the matrix's), and the one with QUIC
NGINXES = [NGINX] + ([QUIC_NGINX] if QUIC_NGINX and
                     os.path.realpath(QUIC_NGINX) != os.path.realpath(NGINX)
                     else [])


@pytest.fixture(scope="module")
def certs():
    """A certificate for localhost and 127.0.0.1, and its key."""
    d = tempfile.mkdtemp(prefix="nginx-jvm-tls-")
    os.chmod(d, 0o755)
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
         "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", d + "/key.pem", "-out", d + "/cert.pem"],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    yield d + "/cert.pem", d + "/key.pem"
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def cache():
    top = tempfile.mkdtemp(prefix="nginx-jvm-tls-cache-")
    os.chmod(top, 0o755)
    yield os.path.join(top, "cache")
    shutil.rmtree(top, ignore_errors=True)


def classpath():
    return ":".join([str(CLJ_APPS), java_classes()] + RING_JARS)


def launch(nginx, mode, cache, tls_args):
    args = ["--nginx", nginx, "--handler", "testapp.ring/echo",
            "--classpath", classpath(), "--max-body-size", "64m"] + tls_args
    for s in SERVER:
        args += ["--server", s]
    return Launcher(args, mode=mode, env={"NGINX_JVM_CACHE": cache})


@pytest.fixture(scope="module", params=NGINXES,
                ids=[re.sub(r".*/", "", nginx_v(n).split("\n")[0])
                     for n in NGINXES])
def tls(request, mode, certs, cache):
    """The launcher with --tls (and --http3 on an nginx that has it)."""
    nginx = request.param
    h3 = "--with-http_v3_module" in nginx_v(nginx)
    args = ["--tls", "%s:%s" % certs] + (["--http3"] if h3 else [])
    with launch(nginx, mode, cache, args) as n:
        n.h3 = h3
        yield n


def curl(port, path, *args, cafile, proto="--http2", timeout=60, **kw):
    """curl over TLS to https://localhost:PORT/PATH: (output, what -w
    printed after the body's last byte: the HTTP version)."""
    r = subprocess.run(
        ["curl", "-sS", proto, "--cacert", cafile, "--resolve",
         "localhost:%d:127.0.0.1" % port, "-w", "\n%{http_version}",
         "--max-time", str(timeout)] + list(args)
        + ["https://localhost:%d%s" % (port, path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    assert r.returncode == 0, r.stderr.decode()
    body, _, version = r.stdout.rpartition(b"\n")
    return body, version.decode()


def h3(port, requests, cafile, **kw):
    import h3client
    return h3client.fetch(port, requests, cafile=cafile, **kw)


def pattern(n):
    """testapp.PatternStream's bytes: byte i is i mod 251."""
    return (bytes(range(251)) * (n // 251 + 1))[:n]


def letters(n):
    """testapp.ring/big-bytes' body: a..z repeating."""
    return (b"abcdefghijklmnopqrstuvwxyz" * (n // 26 + 1))[:n]


# --- HTTP/2 ------------------------------------------------------------------

def test_http2_ring_and_java(tls, certs):
    body, version = curl(tls.port, "/ring?a=1", "-d", "hi", cafile=certs[0])
    assert version == "2"
    m = read_edn(body.decode())
    assert m[":protocol"] == "HTTP/2.0"
    assert m[":scheme"] == ":https"
    assert m[":request-method"] == ":post"
    assert m[":uri"] == "/ring" and m[":query-string"] == "a=1"
    assert m[":body"] == "hi"
    body, version = curl(tls.port, "/java?b=2", cafile=certs[0])
    assert version == "2"
    j = json.loads(body)
    assert (j["protocol"], j["scheme"], j["https"]) == ("HTTP/2.0", "https", True)
    assert j["query"] == "b=2"


def tls_version(port, *args):
    """The protocol openssl s_client agreed on with the server, or None."""
    r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port,
                        "-servername", "localhost"] + list(args),
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=30)
    m = re.search(r"New, (TLSv[\d.]+),", r.stdout)
    return m.group(1) if m and r.returncode == 0 else None


def test_tls_1_3_and_1_2_only(tls, certs):
    # the launcher's ssl_protocols: nginx 1.22's default had 1.0 and 1.1 and
    # not 1.3
    assert tls_version(tls.port) == "TLSv1.3"
    assert tls_version(tls.port, "-tls1_2") == "TLSv1.2"
    assert tls_version(tls.port, "-tls1_1") is None


def test_http2_streamed_response(tls, certs):
    n = 3 * 1000 * 1000 + 7
    body, version = curl(tls.port, "/stream?n=%d" % n, cafile=certs[0])
    assert version == "2"
    assert len(body) == n and body == pattern(n)


def test_http2_upload_is_read_as_it_arrives(tls, certs):
    """curl sends what a pipe gives it as DATA frames (no Content-Length):
    the handler has read the first megabyte while the client holds the
    rest; then the whole body's SHA-256 is the handler's answer."""
    tag = "h2-%s-%d" % (tls.mode, tls.port)
    first, rest = os.urandom(1 << 20), os.urandom(7 << 20)
    p = subprocess.Popen(
        ["curl", "-sS", "--http2", "--cacert", certs[0], "--resolve",
         "localhost:%d:127.0.0.1" % tls.port, "-T", "-", "-X", "POST",
         "https://localhost:%d/upload/?tag=%s" % (tls.port, tag)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        p.stdin.write(first)
        p.stdin.flush()

        def result():
            body, _ = curl(tls.port, "/result?tag=" + tag, cafile=certs[0])
            return body.decode() if body.startswith(b"first ") else None
        assert wait_for(result, 60), "the handler read nothing of the body"
        out, err = p.communicate(rest, timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err.decode()
    whole = first + rest
    assert out.decode() == "%d %s" % (len(whole), hashlib.sha256(whole).hexdigest())


def test_http2_server_sent_events(tls, certs):
    """An endless event stream over HTTP/2: the events come one by one
    while the handler's producer runs, and the producer learns the client
    left when curl stops reading."""
    name = "h2-%s-%d" % (tls.mode, tls.port)
    p = subprocess.Popen(
        ["curl", "-sS", "-N", "--http2", "--cacert", certs[0], "--resolve",
         "localhost:%d:127.0.0.1" % tls.port,
         "https://localhost:%d/sse?name=%s&n=0&ms=50" % (tls.port, name)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        lines = [p.stdout.readline() for _ in range(6)]
    finally:
        p.kill()
        p.wait()
    assert [x for x in lines if x.strip()] == \
        [b"data: tick %d\n" % i for i in range(3)]

    def stopped():
        body, _ = curl(tls.port, "/producer?name=" + name, cafile=certs[0])
        m = read_edn(body.decode())
        return m if m.get(":stopped") else None
    m = wait_for(stopped, 30)
    assert m, "the producer was not told the client left"
    assert m[":stopped"].startswith("IOException")
    assert m[":written"] >= 3


def test_alt_svc_names_the_quic_port(tls, certs):
    r = subprocess.run(
        ["curl", "-sS", "--http2", "-o", "/dev/null", "-D", "-", "--cacert",
         certs[0], "--resolve", "localhost:%d:127.0.0.1" % tls.port,
         "https://localhost:%d/java" % tls.port],
        stdout=subprocess.PIPE, text=True, check=True)
    alt = [x for x in r.stdout.splitlines() if x.lower().startswith("alt-svc:")]
    if tls.h3:
        assert alt == ['alt-svc: h3=":%d"; ma=86400' % tls.port]
    else:
        assert alt == []


# --- HTTP/3 ------------------------------------------------------------------

@pytest.fixture
def quic(tls):
    if not tls.h3:
        pytest.skip(NO_QUIC if QUIC_NGINX is None
                    else "HTTP/3 is tested on " + QUIC_NGINX)
    return tls


def test_http3_ring_and_java(quic, certs):
    ring, java = h3(quic.port, [("GET", "/ring?a=1", [], None),
                                ("POST", "/java?b=2",
                                 [("content-type", "text/plain")], b"hello")],
                    certs[0])
    assert ring.status == 200
    m = read_edn(ring.body.decode())
    assert m[":protocol"] == "HTTP/3.0" and m[":scheme"] == ":https"
    assert m[":uri"] == "/ring" and m[":query-string"] == "a=1"
    assert java.status == 200
    j = json.loads(bytes(java.body))
    assert (j["protocol"], j["method"], j["body"]) == ("HTTP/3.0", "POST", "hello")
    assert j["headers"]["content-type"] == "text/plain"


def test_http3_ten_megabytes(quic, certs):
    n = 10 * 1024 * 1024
    (r,) = h3(quic.port, [("GET", "/big?n=%d" % n, [], None)], certs[0])
    assert r.status == 200
    assert len(r.body) == n and bytes(r.body) == letters(n)


def test_http3_post(quic, certs):
    body = os.urandom(3 << 20)
    (r,) = h3(quic.port, [("POST", "/digest", [], body)], certs[0])
    assert r.status == 200
    assert r.body.decode() == "%d %s" % (len(body), hashlib.sha256(body).hexdigest())


def test_the_request_map_is_the_same_over_every_protocol(quic, certs):
    """The same request over HTTP/1.1, HTTP/2 and HTTP/3 (curl, the
    HTTP/3 client with the Content-Length curl sends): the same map to
    the Ring handler and the same answers from the Java one, but for the
    protocol.  An HTTP/3 client sends :authority and no Host, and nginx's
    HTTP/3 makes no Host of it (its HTTP/2 does): the module gives the
    handler one, the raw :authority, as over HTTP/1.1 and HTTP/2."""
    headers = [("user-agent", "t"), ("accept", "*/*"),
               ("content-type", "text/plain"), ("x-thing", "1")]
    hflags = sum((["-H", "%s: %s" % h] for h in headers), [])
    maps = {}
    for proto, version in (("--http1.1", "1.1"), ("--http2", "2")):
        for path in ("/ring?q=1", "/java?q=1"):
            body, v = curl(quic.port, path, "-d", "same", *hflags,
                           proto=proto, cafile=certs[0])
            assert v == version
            maps[version, path] = body.decode()
    for path, r in zip(("/ring?q=1", "/java?q=1"),
                       h3(quic.port, [("POST", p,
                                       headers + [("content-length", "4")],
                                       b"same")
                                      for p in ("/ring?q=1", "/java?q=1")],
                          certs[0])):
        maps["3", path] = r.body.decode()

    def ring(version):
        m = read_edn(maps[version, "/ring?q=1"])
        assert m[":protocol"] == "HTTP/%s" % {"1.1": "1.1", "2": "2.0",
                                              "3": "3.0"}[version]
        m.pop(":protocol")
        assert m[":headers"]["host"] == "localhost:%d" % quic.port
        assert m[":server-name"] == "localhost"
        return m

    def java(version):
        j = json.loads(maps[version, "/java?q=1"])
        j.pop("protocol")
        # the fields' names as sent (HTTP/1.1's may be capitalized), in the
        # order sent (nginx's HTTP/2 and the module put Host last)
        j["headerNames"] = sorted(n.lower() for n in j["headerNames"])
        return j
    assert ring("1.1") == ring("2") == ring("3")
    assert java("1.1") == java("2") == java("3")
    for version in ("1.1", "2", "3"):
        j = json.loads(maps[version, "/java?q=1"])
        assert j["headers"] == dict(headers, **{"content-length": "4",
                                                "host": "localhost:%d" % quic.port})


def test_http3_host_is_the_authority_as_sent(quic, certs):
    """The Host a handler sees over HTTP/3 is :authority as the client sent
    it (as Host is over HTTP/1.1); the server name is nginx's reading of it,
    lowercased and without the port."""
    authority = "LocalHost.:%d" % quic.port
    ring, java = h3(quic.port, [("GET", "/ring", [], None),
                                ("GET", "/java", [], None)],
                    certs[0], authority=authority)
    assert ring.status == 200 and java.status == 200
    m = read_edn(ring.body.decode())
    assert m[":headers"]["host"] == authority
    assert m[":server-name"] == "localhost"
    j = json.loads(bytes(java.body))
    assert j["headers"]["host"] == j["hostAnyCase"] == authority
    assert [n.lower() for n in j["headerNames"]].count("host") == 1


# --- the launcher's options ---------------------------------------------------

def run(*args):
    env = dict(os.environ)
    env.pop("NGINX", None)
    return subprocess.run([LAUNCHER, "run", "--handler", "testapp.ring/echo",
                           "--classpath", str(CLJ_APPS)] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env)


def test_http3_refused_without_the_module(certs):
    plain = [n for n in NGINXES if "--with-http_v3_module" not in nginx_v(n)]
    if not plain:
        pytest.skip("every nginx tested has http_v3_module")
    r = run("--nginx", plain[0], "--tls", "%s:%s" % certs, "--http3")
    assert r.returncode == 2
    assert "without the HTTP/3 module" in r.stderr
    assert "--with-http_v3_module" in r.stderr


def test_bad_tls_options(certs):
    r = run("--http3")
    assert r.returncode == 2 and "--http3 needs --tls" in r.stderr
    r = run("--tls", certs[0])
    assert r.returncode == 2 and "--tls takes CERT:KEY" in r.stderr
    r = run("--tls", certs[0] + ":/nonexistent/key.pem")
    assert r.returncode == 2 and "/nonexistent/key.pem is not a readable file" in r.stderr
    r = run("--tls", "%s:%s" % certs, "--tls-self-signed")
    assert r.returncode == 2 and "take one" in r.stderr


def test_http2_directive_by_version(certs):
    """HTTP/2 is a parameter of listen before nginx 1.25.1, the http2
    directive since."""
    for nginx in NGINXES:
        r = run("--nginx", nginx, "--tls", "%s:%s" % certs, "--print-config")
        assert r.returncode == 0, r.stderr
        v = re.search(r"nginx/(\d+)\.(\d+)\.(\d+)", nginx_v(nginx)).groups()
        if tuple(map(int, v)) >= (1, 25, 1):
            assert re.search(r"listen 127.0.0.1:8080 ssl backlog", r.stdout)
            assert "        http2 on;" in r.stdout
        else:
            assert re.search(r"listen 127.0.0.1:8080 ssl http2 backlog", r.stdout)
            assert "http2 on;" not in r.stdout


def test_self_signed(cache):
    """--tls-self-signed: a certificate for localhost in the temporary
    prefix, which curl verifies, gone when the launcher stops."""
    nginx = QUIC_NGINX or NGINX
    n = launch(nginx, "loop", cache,
               ["--tls-self-signed"] + (["--http3"] if QUIC_NGINX else []))
    with n:
        said = re.search(r"a self-signed certificate: (\S+);",
                         Path(n.log).read_text())
        assert said, n.log_text()
        cert = said.group(1)
        body, version = curl(n.port, "/java", cafile=cert)
        assert version == "2" and json.loads(body)["protocol"] == "HTTP/2.0"
        if QUIC_NGINX:
            (r,) = h3(n.port, [("GET", "/java", [], None)], cert)
            assert json.loads(bytes(r.body))["protocol"] == "HTTP/3.0"
    assert not os.path.exists(cert)
