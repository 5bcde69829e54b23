"""Conformance we did not write (issue 47, item 9): examples/servlet-war on
Tomcat's own HTTP connector (nginx.jvm.servlet.tomcat.Standalone, the same
Tomcat, its error pages as quiet as ours) and through `nginx-jvm run --war`
with two workers, browsed by the same script, each request on a new
connection: the same status, Location, content type and body.

What differs by nature is left out of the comparison and listed here: the
port and process id a servlet prints, the Server and Date fields, the
framing (Content-Length or chunked: nginx frames, the bodies are compared
byte for byte) and the session cookie's value."""

import re
import subprocess

import pytest

from harness import ROOT, free_port, request
from test_servlet_war import (SERVLET, cache, launcher, multipart,  # noqa: F401
                              shared, war)

TOMCAT_LIB = ROOT / "build" / "servlet" / "tomcat-lib"
RUNTIME = ROOT / "build" / "nginx-jvm.jar"


@pytest.fixture(scope="module")
def standalone(war, shared):
    port = free_port()
    cp = ":".join([str(SERVLET), str(RUNTIME), str(TOMCAT_LIB / "*")])
    log = open(shared / "standalone.log", "wb")
    p = subprocess.Popen(["java", "-cp", cp,
                          "nginx.jvm.servlet.tomcat.Standalone", str(war),
                          str(port), "/app"],
                         stdout=subprocess.PIPE, stderr=log)
    try:
        line = p.stdout.readline()
        assert line.strip() == b"ready", (shared / "standalone.log").read_text()
        yield port
    finally:
        p.kill()
        p.wait()
        log.close()


@pytest.fixture(scope="module")
def through_nginx(war, cache):
    n = launcher(war, cache, "--context-path", "/app", workers=2)
    with n:
        yield n


UPLOAD, UPLOAD_TYPE = multipart([("file", "a.txt", "été\n".encode() * 500),
                                 ("note", None, b"n")])

BROWSE = [
    ("GET", "/app/", {}, None),
    ("GET", "/app/?name=Ann", {}, None),
    ("GET", "/app", {}, None),                          # a redirect
    ("GET", "/app/hello?name=%C3%A9t%C3%A9", {"X-Test": "x"}, None),
    ("GET", "/app/hello/a/b?q=1&q=2", {}, None),
    ("POST", "/app/hello", {"Content-Type":
                            "application/x-www-form-urlencoded"},
     "name=%E2%82%AC+%26+co".encode()),
    ("GET", "/app/static/app.css", {}, None),
    ("GET", "/app/static/app.css", {"Range": "bytes=2-9"}, None),
    ("HEAD", "/app/static/app.css", {}, None),
    ("GET", "/app/static/", {}, None),
    ("GET", "/app/static/big.bin", {}, None),           # sendfile's size
    ("GET", "/app/static/big.bin", {"Range": "bytes=5-70004"}, None),
    ("HEAD", "/app/static/big.bin", {}, None),
    ("GET", "/app/no/such/page", {}, None),
    ("GET", "/app/WEB-INF/web.xml", {}, None),
    ("GET", "/app/fail", {}, None),
    ("GET", "/app/async?ms=20", {}, None),
    ("POST", "/app/upload", {"Content-Type": UPLOAD_TYPE}, UPLOAD),
    ("DELETE", "/app/hello", {}, None),
    ("GET", "/elsewhere", {}, None),
]


def normal(reply, port):
    """What must be the same: status, Location (its port aside), content
    type and body (a servlet's own port and pid aside)."""
    body = reply.body.decode("utf-8", "replace")
    body = re.sub(r"(?m)^(pid|serverPort): .*$", r"\1: -", body)
    location = reply.header("Location")
    if location:
        location = location.replace(":%d" % port, ":PORT")
    # (framing, Content-Length or chunked, is the server's: the body's
    # bytes are compared instead)
    return (reply.status, location, reply.header("Content-Type"), body)


@pytest.mark.log_allows(r"example failure on purpose",
                        r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: )")
@pytest.mark.parametrize("method,path,headers,body", BROWSE,
                         ids=["%s %s" % (b[0], b[1]) for b in BROWSE])
def test_same_answer(standalone, through_nginx, method, path, headers, body):
    direct = request(standalone, method, path, dict(headers), body)
    ours = through_nginx.request(method, path, dict(headers), body)
    assert normal(ours, through_nginx.port) == normal(direct, standalone)


def test_the_session_cookie_is_alike(standalone, through_nginx):
    a = request(standalone, "GET", "/app/").header("Set-Cookie")
    b = through_nginx.get("/app/").header("Set-Cookie")
    strip = lambda c: re.sub(r"JSESSIONID=[0-9A-F]+", "JSESSIONID=-", c)
    assert a and b and strip(a) == strip(b)
