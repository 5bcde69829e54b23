"""Handlers in nginx's rewrite, access, header filter and log phases.

Each runs in the mode under test (the http-level jvm_mode): rewrite and
access handlers off the loop in pool and virtual modes, header filters
always on the loop, log handlers off the loop in pool and virtual modes.
Content comes from static files, proxy_pass to a Python upstream and JVM
handlers.
"""

import json
import os

import pytest

from harness import Nginx, wait_for
from upstream import up  # noqa: F401 (the module's upstream, a fixture)

TRACE = r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: |\s+Suppressed: )"

HTTP = """
    jvm_options -Dtestapp.log=@PREFIX@/logs/jvm-log.txt;
"""

LOCATIONS = """
        location /static/ { jvm_access testapp.Phases$Auth; root html; }
        location /api/ {
            jvm_access testapp.Phases$Auth;
            proxy_pass http://127.0.0.1:@UP@/;
        }
        location /jvm { jvm_access testapp.Phases$Auth;
                        jvm_content testapp.Phases$Vars; }
        location /clj-static/ { jvm_access testapp.phases/auth;
                                alias html/static/; }
        location /async-static/ { jvm_async on;
                                  jvm_access testapp.phases/auth-async;
                                  alias html/static/; }

        location /old/ { jvm_rewrite testapp.Phases$Rewrite; }
        location /clj-old/ { jvm_rewrite testapp.phases/rewrite; }
        location /new/ { jvm_content testapp.Phases$Vars; }

        location /filtered/ { jvm_header_filter testapp.Phases$Filter;
                              alias html/static/; }
        location /filtered-api/ { jvm_header_filter testapp.Phases$Filter;
                                  proxy_pass http://127.0.0.1:@UP@/; }
        location /filtered-jvm { jvm_header_filter testapp.Phases$Filter;
                                 jvm_content testapp.Phases$Vars; }
        location /clj-filtered/ { jvm_header_filter testapp.phases/filter-headers;
                                  proxy_pass http://127.0.0.1:@UP@/; }

        location /logged/ { jvm_log testapp.Phases$Log; alias html/static/; }
        location /clj-logged/ { jvm_log testapp.phases/log;
                                proxy_pass http://127.0.0.1:@UP@/; }

        location /throw-rewrite { jvm_rewrite testapp.Throws;
                                  return 200 "not reached"; }
        location /throw-access/ { jvm_access testapp.Throws;
                                  alias html/static/; }
        location /throw-filter/ { jvm_header_filter testapp.Phases$FilterThrows;
                                  alias html/static/; }
        location /throw-log/ { jvm_log testapp.Throws; alias html/static/; }
"""


@pytest.fixture(scope="module")
def ng(mode, up):
    with Nginx(LOCATIONS.replace("@UP@", str(up.port)), http=HTTP,
               mode=mode, startup_allow=[TRACE]) as n:
        os.makedirs(n.path("html", "static"))
        with open(n.path("html", "static", "a.txt"), "w") as f:
            f.write("static file\n")
        yield n


def log_lines(ng, n):
    path = ng.path("logs", "jvm-log.txt")

    def read():
        if not os.path.exists(path):
            return None
        lines = open(path).read().splitlines()
        return lines if len(lines) >= n else None

    if n == 0:
        # what is there now: no file yet is no line yet (waiting for the
        # file would wait out the whole 60 s before any request logged)
        return read() or []
    return wait_for(read, 60) or []


# -- access --------------------------------------------------------------

def test_access_lets_static_file_through(ng):
    r = ng.request("GET", "/static/a.txt", headers={"X-Token": "secret"})
    assert r.status == 200
    assert r.body == b"static file\n"


def test_access_denies_with_401(ng):
    r = ng.request("GET", "/static/a.txt")
    assert r.status == 401
    assert r.body == b"denied"
    assert r.header("WWW-Authenticate") == 'Bearer realm="test"'


def test_access_reads_variable_403(ng):
    r = ng.request("GET", "/static/a.txt?user=banned",
                   headers={"X-Token": "secret"})
    assert r.status == 403
    assert r.text.startswith("banned by ")
    if ng.mode == "pool":
        assert "nginx-jvm-pool" in r.text


def test_access_in_front_of_proxy_pass(ng):
    r = ng.request("GET", "/api/echo?q=1", headers={"X-Token": "secret"})
    assert r.status == 200
    body = json.loads(r.body)
    assert body["path"] == "/echo"
    assert body["query"] == "q=1"
    assert ng.request("GET", "/api/echo").status == 401


def test_access_in_front_of_jvm_content(ng):
    r = ng.request("GET", "/jvm?n=arg_n", headers={"X-Token": "secret"})
    assert r.status == 200
    assert "arg_n=arg_n" in r.text
    assert ng.request("GET", "/jvm").status == 401


def test_access_keepalive_several_requests(ng):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", ng.port, timeout=10)
    try:
        for i in range(5):
            token = "secret" if i % 2 == 0 else "wrong"
            r = ng.request("GET", "/static/a.txt",
                           headers={"X-Token": token}, conn=conn)
            assert r.status == (200 if i % 2 == 0 else 401)
    finally:
        conn.close()


def test_access_post_body_reaches_upstream(ng):
    r = ng.request("POST", "/api/echo", body=b"payload" * 1000,
                   headers={"X-Token": "secret"})
    assert r.status == 200
    assert json.loads(r.body)["body"] == "payload" * 1000


def test_clojure_access(ng):
    assert ng.request("GET", "/clj-static/a.txt").status == 401
    r = ng.request("GET", "/clj-static/a.txt", headers={"X-Token": "secret"})
    assert r.status == 200
    assert r.body == b"static file\n"


def test_clojure_async_access(ng):
    r = ng.request("GET", "/async-static/a.txt")
    assert r.status == 401
    assert r.body == b"clj async denied"
    r = ng.request("GET", "/async-static/a.txt", headers={"X-Token": "secret"})
    assert r.status == 200
    assert r.body == b"static file\n"


# -- rewrite -------------------------------------------------------------

def test_rewrite_changes_uri_and_args(ng):
    r = ng.request("GET", "/old/thing?x=1")
    assert r.status == 200
    assert "uri=/new/thing\n" in r.text
    assert "query=from=old\n" in r.text


def test_rewrite_redirect(ng):
    r = ng.request("GET", "/old/away")
    assert r.status == 302
    assert r.header("Location").endswith("/elsewhere")


def test_clojure_rewrite(ng):
    r = ng.request("GET", "/clj-old/other")
    assert r.status == 200
    assert "uri=/new/other\n" in r.text


# -- header filter -------------------------------------------------------

def test_filter_static_file(ng):
    r = ng.request("GET", "/filtered/a.txt")
    assert r.status == 200
    assert r.body == b"static file\n"
    assert r.header("X-Filtered").startswith("status 200 on ")
    assert r.header("Content-Type") == "text/x-filtered"
    assert r.header("ETag") is None
    assert r.header("Last-Modified") is None
    assert r.header_all("X-Multi") == ["a", "b"]
    assert r.header("Content-Length") == "12"


def test_filter_runs_on_the_loop(ng):
    r = ng.request("GET", "/filtered/a.txt")
    assert "pool" not in r.header("X-Filtered")


def test_filter_changes_status(ng):
    r = ng.request("GET", "/filtered/a.txt?teapot=1")
    assert r.status == 418
    assert r.body == b"static file\n"


def test_filter_proxy_pass(ng):
    r = ng.request("GET", "/filtered-api/echo")
    assert r.status == 200
    assert r.header("X-Upstream") == "py"
    assert r.header("X-Drop") is None
    assert r.header("X-Filtered").startswith("status 200")
    assert json.loads(r.body)["path"] == "/echo"


def test_filter_upstream_error_status(ng):
    r = ng.request("GET", "/filtered-api/status/404")
    assert r.status == 404
    assert r.header("X-Filtered").startswith("status 404")


def test_filter_jvm_content(ng):
    r = ng.request("GET", "/filtered-jvm?n=arg_n")
    assert r.status == 200
    assert r.header("X-Filtered").startswith("status 200")
    assert "arg_n=arg_n" in r.text


def test_clojure_filter(ng):
    r = ng.request("GET", "/clj-filtered/echo")
    assert r.status == 200
    assert r.header("X-Clj-Filter") == "200"
    assert r.header("X-Drop") is None
    assert r.header("X-Upstream") == "py"


# -- log -----------------------------------------------------------------

def test_log_after_static_file(ng):
    before = len(log_lines(ng, 0))
    r = ng.request("GET", "/logged/a.txt")
    assert r.status == 200
    lines = log_lines(ng, before + 1)
    line = [l for l in lines[before:] if l.startswith("java /logged/a.txt")]
    assert line, lines
    _, uri, status, sent, variable, thread = line[0].split(" ", 5)
    assert status == "200"
    assert int(sent) > len(b"static file\n")
    # variables: on the loop, read at once; off it the request is gone
    assert variable == ("200" if ng.mode == "loop" else "gone")
    if ng.mode == "pool":
        assert "nginx-jvm-pool" in thread


def test_clojure_log_after_proxy(ng):
    r = ng.request("GET", "/clj-logged/status/201")
    assert r.status == 201
    lines = log_lines(ng, 1)
    assert wait_for(lambda: any(l.startswith("clj /clj-logged/status/201 201 ")
                                for l in log_lines(ng, 1)), 60), lines


# -- errors --------------------------------------------------------------

@pytest.mark.log_allows("the jvm_rewrite handler threw", "java-boom-marker",
                        TRACE)
def test_rewrite_throws_500(ng):
    since = ng.log_size()
    r = ng.request("GET", "/throw-rewrite")
    assert r.status == 500
    assert wait_for(lambda: "java-boom-marker" in ng.log_text(since), 60)
    assert ng.request("GET", "/static/a.txt",
                      headers={"X-Token": "secret"}).status == 200


@pytest.mark.log_allows("the jvm_access handler threw", "java-boom-marker",
                        TRACE)
def test_access_throws_500(ng):
    since = ng.log_size()
    r = ng.request("GET", "/throw-access/a.txt")
    assert r.status == 500
    assert wait_for(lambda: "the jvm_access handler threw" in
                    ng.log_text(since), 60)


@pytest.mark.log_allows("the jvm_header_filter handler threw",
                        "filter-boom-marker", TRACE)
def test_filter_throws_500(ng):
    since = ng.log_size()
    r = ng.request("GET", "/throw-filter/a.txt")
    assert r.status == 500
    assert b"static file" not in r.body
    assert wait_for(lambda: "filter-boom-marker" in ng.log_text(since), 60)
    assert ng.request("GET", "/filtered/a.txt").status == 200


@pytest.mark.log_allows("the jvm_log handler threw", "java-boom-marker",
                        TRACE)
def test_log_throws_logged_response_intact(ng):
    since = ng.log_size()
    r = ng.request("GET", "/throw-log/a.txt")
    assert r.status == 200
    assert r.body == b"static file\n"
    assert wait_for(lambda: "the jvm_log handler threw" in
                    ng.log_text(since), 60)
