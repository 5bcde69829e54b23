"""The servlet seams (issue 47, runtime/servlet/README.md): HelloServlet on
Tomcat 11 and on Jetty 12.1 beneath nginx, each through bin/nginx-jvm in
pool mode, with and without --async.

`make all` builds the engines into build/servlet (`make servlet`)."""

import re
import socket
import time

import pytest

from harness import ROOT, Launcher

TARGET = ROOT / "build" / "servlet"
JAR = TARGET / "nginx-jvm-servlet.jar"

ENGINES = {"tomcat": ("nginx.jvm.servlet.TomcatHandler", "tomcat-lib"),
           "jetty": ("nginx.jvm.servlet.JettyHandler", "jetty-lib")}
TRACE = r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: |\s+Suppressed: )"
THREW = r"HelloServlet was asked to throw"


@pytest.fixture(scope="module",
                params=["tomcat", "tomcat-async", "jetty", "jetty-async"])
def srv(request):
    engine, _, asynchronous = request.param.partition("-")
    handler, lib = ENGINES[engine]
    args = ["--handler", handler,
            "--classpath", "%s:%s/*" % (JAR, TARGET / lib)]
    if asynchronous:
        args.append("--async")
    n = Launcher(args, mode="pool")
    n.engine = engine
    n.asynchronous = bool(asynchronous)
    with n:
        yield n


def lines(reply):
    return dict(l.split("=", 1) for l in reply.text.splitlines() if "=" in l
                and not l.startswith("param "))


def test_hello(srv):
    r = srv.get("/")
    assert r.status == 200
    assert r.body == b"hello"
    assert r.header("X-Servlet") == "hello"
    assert r.header("Content-Type").startswith("text/plain")
    assert r.header("Content-Length") == "5"


def test_query_parameters_decode(srv):
    r = srv.get("/a/b?x=1&name=%C3%A9t%C3%A9&x=2")
    assert r.status == 200
    assert "param x=1\nparam x=2\n" in r.text
    assert "param name=été\n" in r.text
    assert lines(r)["servletPath"] == "/a/b"


def test_post_body_reaches_the_servlet(srv):
    r = srv.request("POST", "/post?q=1", body="a body, été".encode(),
                    headers={"Content-Type": "text/plain"})
    assert r.status == 200
    assert "body 11 chars: a body, été" in r.text
    assert "param q=1" in r.text


def test_form_parameters(srv):
    r = srv.request("POST", "/form", body=b"a=1&b=%E2%82%AC",
                    headers={"Content-Type":
                             "application/x-www-form-urlencoded"})
    assert "param a=1\nparam b=€\n" in r.text


def test_request_fields(srv):
    r = srv.get("/f?v", headers={"X-Test": "yes"})
    f = lines(r)
    assert f["remote"] == "127.0.0.1"
    assert f["server"] == "127.0.0.1:%d" % srv.port
    assert f["scheme"] == "http secure=false"
    assert f["X-Test"] == "yes"


@pytest.mark.parametrize("host,server", [
    ("x", "x:80"), ("example.org:8443", "example.org:8443"),
    ("[::1]:99", "[::1]:99")])
def test_server_name_and_port_are_the_host_fields(srv, host, server):
    """The port the Host field names, else the scheme's (not nginx's
    listening port): what redirects an application builds must use."""
    assert lines(srv.get("/f?v", headers={"Host": host}))["server"] == server


# the path nginx routed on ($uri) is the one the engine maps: raw path,
# servlet path and request URI the servlet sees
SHAPES = [
    ("/x/..;/actuator/health", "/x/..;/actuator/health",
     "/x/..%3B/actuator/health"),
    ("/x/%2e%2e/actuator", "/actuator", "/actuator"),
    ("/x/%2e%2e%3b/actuator", "/x/..;/actuator", "/x/..%3B/actuator"),
    ("//a//b", "/a/b", "/a/b"),
    ("/a%2Fb", "/a/b", "/a/b"),
    ("/a;jsessionid=1/b", "/a;jsessionid=1/b", "/a%3Bjsessionid=1/b"),
    ("/%C3%A9t%C3%A9", "/été", "/%C3%A9t%C3%A9"),
    ("/a%20b/./c/../d", "/a b/d", "/a%20b/d"),
    ("/a%5Cb", "/a\\b", "/a%5Cb"),
    ("/a%25b", "/a%b", "/a%25b"),
]


@pytest.mark.parametrize("raw,path,uri", SHAPES)
def test_the_engine_maps_nginx_uri(srv, raw, path, uri):
    r = srv.get(raw + "?v")
    assert r.status == 200, r
    f = lines(r)
    assert f["servletPath"] == path
    assert f["requestURI"] == uri
    assert f["rawURI"] == raw


def test_head(srv):
    r = srv.request("HEAD", "/")
    assert r.status == 200
    assert r.body == b""
    assert r.header("Content-Length") == "5"


def test_send_error_is_the_engines_page(srv):
    r = srv.get("/?status=404")
    assert r.status == 404
    assert r.header("Content-Type").startswith("text/html")


@pytest.mark.log_allows(THREW, TRACE)
def test_a_servlet_that_throws(srv):
    since = srv.log_size()
    r = srv.get("/?throw=1")
    assert r.status == 500
    assert r.header("Content-Type").startswith("text/html")
    assert srv.wait_log(THREW, since)
    assert srv.wait_log(r"at nginx\.jvm\.servlet\.HelloServlet\.doGet", since)


def test_a_body_past_the_engines_buffer(srv):
    r = srv.get("/?big=300000")
    assert r.status == 200
    assert len(r.body) == 300000
    # whole (Content-Length) without --async; streamed (chunked) with it
    assert (r.header("Transfer-Encoding") == "chunked") == srv.asynchronous


def test_async_servlet(srv):
    r = srv.get("/?async=1")
    assert r.status == 200
    assert r.body == b"hello async"


def test_async_context_start(srv):
    """AsyncContext.start runs on the engine's own threads."""
    r = srv.get("/?asyncstart=1")
    assert r.status == 200
    assert r.body == b"hello start"


def test_a_client_that_leaves_an_async_servlet(srv):
    """The engine hears of it as of a connection's error: the servlet's
    AsyncListener.onError runs (HelloServlet prints it to the error log)."""
    since = srv.log_size()
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(b"GET /?asyncwait=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.3)
    assert srv.wait_log(r"HelloServlet: async error: .*the client left",
                        since, timeout=20)


def test_async_timeout(srv):
    t = time.monotonic()
    r = srv.get("/?asynctimeout=1")
    assert r.status == 500
    assert time.monotonic() - t < 5


def test_flushed_lines_stream_with_async(srv):
    """5 lines 100 ms apart, each flushed: with --async the first comes at
    once; without, the response is given whole at the end."""
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        t = time.monotonic()
        s.sendall(b"GET /?stream=5 HTTP/1.1\r\nHost: x\r\n"
                  b"Connection: close\r\n\r\n")
        first = s.recv(65536)
        at = time.monotonic() - t
        rest = first
        while True:
            b = s.recv(65536)
            if not b:
                break
            rest += b
        total = time.monotonic() - t
    assert b"line 4" in rest
    assert total >= 0.4
    if srv.asynchronous:
        assert at < 0.3, (at, total)
    else:
        assert at >= 0.4, (at, total)
