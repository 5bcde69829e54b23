"""Tomcat's limits beneath nginx (issue 47, items 7 and 12): a request too
large in each way a client can make one, against examples/servlet-war with
two workers. Each is answered by nginx's limit (client_max_body_size,
large_client_header_buffers) or by the engine's (Connector's
maxParameterCount, maxPostSize, maxPartCount; @MultipartConfig's
maxFileSize), with a 4xx: never a 500, never a stack trace in the answer,
never a worker's death; and the worker serves the next request.
docs/servlet.md, "Limits", says which bounds what."""

import os
import urllib.parse

import pytest

from test_servlet_war import (SERVLET, cache, launcher, multipart,  # noqa: F401
                              shared, war)

# nginx-jvm's own figures (bin/nginx-jvm, TomcatEngine): what is tested
MAX_BODY = 10 * 1024 * 1024             # --max-body-size's default, 10m
MAX_FILE = 4 * 1024 * 1024              # UploadServlet's @MultipartConfig
MAX_PARAMETERS = 1000                   # Tomcat's maxParameterCount
MAX_PARTS = 50                          # Tomcat's maxPartCount
MAX_POST = 2 * 1024 * 1024              # Tomcat's maxPostSize (a form)
MAX_COOKIES = 200                       # Tomcat's maxCookieCount


@pytest.fixture(scope="module")
def app(war, cache):
    n = launcher(war, cache, "--context-path", "/app", workers=2)
    with n:
        n.pids = sorted(n.worker_pids())
        yield n


def refused(app, r, *statuses):
    """A 4xx of the given status, no stack trace in the answer, the same
    workers alive and serving."""
    assert r.status in statuses, r
    assert b"Exception" not in r.body and b"\tat " not in r.body, r.body[:2000]
    assert sorted(app.worker_pids()) == app.pids
    assert app.get("/app/hello?name=after").status == 200


def form(n, size=1):
    return "&".join("p%d=%s" % (i, "v" * size) for i in range(n)).encode()


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.mark.log_allows(r"client intended to send too large body")
def test_a_body_beyond_client_max_body_size(app):
    r = app.request("POST", "/app/upload", body=b"x" * (MAX_BODY + 1),
                    headers={"Content-Type": "multipart/form-data; boundary=b"})
    refused(app, r, 413)


def test_a_part_beyond_multipart_configs_max(app):
    body, ctype = multipart([("file", "big.bin", os.urandom(MAX_FILE + 1))])
    r = app.request("POST", "/app/upload", body=body,
                    headers={"Content-Type": ctype})
    refused(app, r, 413)


def test_too_many_parts(app):
    body, ctype = multipart([("n%d" % i, None, b"x")
                             for i in range(MAX_PARTS + 1)])
    r = app.request("POST", "/app/upload", body=body,
                    headers={"Content-Type": ctype})
    refused(app, r, 413)


def test_parts_at_the_limits_pass(app):
    body, ctype = multipart([("n%d" % i, None, b"x")
                             for i in range(MAX_PARTS - 1)]
                            + [("file", "f.bin", os.urandom(MAX_FILE))])
    r = app.request("POST", "/app/upload", body=body,
                    headers={"Content-Type": ctype})
    assert r.status == 200, r
    assert len(r.text.splitlines()) == MAX_PARTS


def test_a_form_beyond_max_post_size(app):
    body = b"name=big&pad=" + b"v" * MAX_POST
    r = app.request("POST", "/app/hello", body=body, headers=FORM)
    refused(app, r, 413)


def test_too_many_parameters_in_the_query(app):
    r = app.get("/app/hello?" + form(MAX_PARAMETERS + 1).decode())
    refused(app, r, 400, 414)


def test_too_many_parameters_in_a_form(app):
    r = app.request("POST", "/app/hello", body=form(MAX_PARAMETERS + 1),
                    headers=FORM)
    refused(app, r, 400, 413)


def test_parameters_at_the_limit_pass(app):
    body = b"name=%C3%A9t%C3%A9&" + form(MAX_PARAMETERS - 1)
    r = app.request("POST", "/app/hello", body=body, headers=FORM)
    assert r.status == 200, r
    assert r.text == "posted été\n"


def nginxs_400(app, r):
    """nginx's answer to a header line beyond large_client_header_buffers
    (its 494, sent as 400): Tomcat never sees the request."""
    refused(app, r, 400)
    assert b"Request Header Or Cookie Too Large" in r.body
    assert r.header("Server").startswith("nginx")


def test_a_huge_header(app):
    nginxs_400(app, app.request("GET", "/app/hello",
                                headers={"X-Test": "h" * 9000}))


def test_a_huge_cookie(app):
    nginxs_400(app, app.request("GET", "/app/hello",
                                headers={"Cookie": "c=" + "k" * 9000}))


def test_a_header_within_nginxs_buffer(app):
    r = app.request("GET", "/app/hello", headers={"X-Test": "h" * 8000})
    assert r.status == 200, r
    assert "header X-Test: %s\n" % ("h" * 8000) in r.text


def headers(n):
    return ("GET /app/hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            + "".join("X-H%04d: v\r\n" % i for i in range(n))
            + "\r\n").encode()


def test_many_headers_within_nginxs_buffers(app):
    """Tomcat's own connector refuses more than 100 fields (maxHeaderCount);
    beneath nginx the bound is nginx's, in bytes: 500 short fields
    fit large_client_header_buffers (4 8k) and reach the servlet."""
    r = app.raw(headers(500))
    assert r.startswith(b"HTTP/1.1 200 "), r[:300]
    assert b"hello world" in r


def test_too_many_headers_for_nginxs_buffers(app):
    r = app.raw(headers(4000))
    assert r.startswith(b"HTTP/1.1 400 "), r[:300]
    assert b"Request Header Or Cookie Too Large" in r
    assert sorted(app.worker_pids()) == app.pids


def test_too_many_cookies(app):
    """Tomcat's maxCookieCount (200): its 400 (the session's lookup parses
    the cookies), not a 500."""
    cookie = "; ".join("c%d=v" % i for i in range(MAX_COOKIES + 1))
    refused(app, app.request("GET", "/app/hello", headers={"Cookie": cookie}),
            400)


def test_cookies_at_the_limit_pass(app):
    cookie = "; ".join("c%d=v" % i for i in range(MAX_COOKIES))
    r = app.request("GET", "/app/hello?name=c", headers={"Cookie": cookie})
    assert r.status == 200, r
    assert r.text.startswith("hello c\n")
