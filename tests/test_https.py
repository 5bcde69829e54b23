"""HTTPS: :scheme, and the client certificate of ssl_verify_client."""

import http.client
import json
import shutil
import ssl
import subprocess

import pytest

from harness import TLS_SERVER, Nginx, read_edn, server_cert

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="the openssl command is missing")

LOCATIONS = """
        location /echo { jvm_content testapp.ring/echo; }
"""

HTTP = TLS_SERVER + """
        ssl_client_certificate @PREFIX@/ca.pem;
        ssl_verify_client optional;
        location /echo { jvm_content testapp.ring/echo; }
        location /tls { jvm_content testapp.ring/tls; }
        location /java { jvm_content testapp.Echo; }
        location /vars { jvm_content testapp.Phases$Vars; }
    }
"""

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def make_certs(d):
    """A self-signed server certificate, a test CA and a client
    certificate that CA signed."""
    def openssl(*args):
        subprocess.run(["openssl"] + list(args), cwd=d, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    server_cert(d)
    openssl("req", "-x509", *EC, "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=nginx-jvm test CA")
    openssl("req", *EC, "-keyout", "client.key", "-out", "client.csr",
            "-subj", "/O=nginx-jvm/CN=test-client")
    openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey",
            "ca.key", "-CAcreateserial", "-out", "client.pem", "-days", "2")


@pytest.fixture(scope="module")
def ng(mode):
    n = Nginx(LOCATIONS, http=HTTP, mode=mode)
    make_certs(n.prefix)
    with n:
        yield n


def https(ng, path, client_cert=False):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE        # the server's cert is self-signed
    if client_cert:
        ctx.load_cert_chain(ng.path("client.pem"), ng.path("client.key"))
    conn = http.client.HTTPSConnection("127.0.0.1", ng.port2, timeout=30,
                                       context=ctx)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_scheme_https(ng):
    status, body = https(ng, "/echo?s=1")
    assert status == 200
    req = read_edn(body.decode())
    assert req[":scheme"] == ":https"
    assert req[":server-port"] == ng.port2
    assert req[":query-string"] == "s=1"
    assert req[":ssl-client-cert"] is None


def test_scheme_http_on_plain_server(ng):
    r = ng.get("/echo")
    assert r.status == 200
    assert read_edn(r.text)[":scheme"] == ":http"


def test_no_client_certificate(ng):
    status, body = https(ng, "/tls")
    assert status == 200
    info = read_edn(body.decode())
    assert info[":cert-class"] is None
    assert info[":x509?"] is False


def test_client_certificate(ng):
    status, body = https(ng, "/tls", client_cert=True)
    assert status == 200
    info = read_edn(body.decode())
    assert info[":x509?"] is True
    assert "CN=test-client" in info[":subject"]
    assert "O=nginx-jvm" in info[":subject"]
    assert "CN=nginx-jvm test CA" in info[":issuer"]
    assert info[":scheme"] == ":https"


def test_java_handler_over_https(ng):
    status, body = https(ng, "/java", client_cert=True)
    assert status == 200
    req = json.loads(body)
    assert req["scheme"] == "https"
    assert req["https"] is True
    assert req["sslClientCert"] is True
    assert req["serverPort"] == ng.port2
    status, body = https(ng, "/java")
    assert json.loads(body)["sslClientCert"] is False


def test_tls_variables(ng):
    """What servlet connectors pass to application servers, from nginx's
    variables: the TLS client's details."""
    names = "ssl_client_s_dn,ssl_client_verify,ssl_protocol,https,scheme"
    status, body = https(ng, "/vars?n=" + names, client_cert=True)
    assert status == 200
    v = dict(l.split("=", 1) for l in body.decode().splitlines()
             if "=" in l and not l.startswith(("batch", "query")))
    assert "CN=test-client" in v["ssl_client_s_dn"]
    assert "O=nginx-jvm" in v["ssl_client_s_dn"]
    assert v["ssl_client_verify"] == "SUCCESS"
    assert v["ssl_protocol"].startswith("TLSv1")
    assert v["https"] == "on"
    assert v["scheme"] == "https"
    status, body = https(ng, "/vars?n=ssl_client_verify")
    assert "ssl_client_verify=NONE" in body.decode()
