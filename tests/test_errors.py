"""Handlers that fail: exceptions, non-map responses, failing bodies and
handlers that cannot be loaded.  The worker must go on serving."""

import http.client

import pytest

from harness import dechunk, parse_raw, wait_for, Nginx

LOCATIONS = """
        location /boom { jvm_content testapp.errors/boom; }
        location /nil { jvm_content testapp.errors/returns-nil; }
        location /string { jvm_content testapp.errors/returns-string; }
        location /number { jvm_content testapp.errors/returns-number; }
        location /seq-throws { jvm_content testapp.errors/seq-throws; }
        location /bad-response { jvm_content testapp.errors/bad-response; }
        location /pid { jvm_content testapp.ring/pid; }
        location /missing-class { jvm_content com.nope.Missing; }
        location /missing-var { jvm_content testapp.errors/no-such-var; }
        location /static { return 200 "static ok"; }
"""

# A stack trace is logged in pieces; every piece is an [error] line.
TRACE = r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: |\s+Suppressed: )"
MISSING = [r'jvm: cannot load handler "com.nope.Missing"',
           r'jvm: cannot load handler "testapp.errors/no-such-var"', TRACE]


@pytest.fixture(scope="module")
def ng(mode):
    with Nginx(LOCATIONS, mode=mode, startup_allow=MISSING) as n:
        yield n


def pid(ng):
    r = ng.get("/pid")
    assert r.status == 200
    return int(r.body)


@pytest.mark.log_allows(r"jvm: the handler threw", TRACE)
def test_handler_throws(ng):
    before = pid(ng)
    since = ng.log_size()
    r = ng.get("/boom")
    assert r.status == 500
    assert ng.wait_log(r"\[error\] .*jvm: the handler threw: "
                       r"clojure.lang.ExceptionInfo: boom-marker", since)
    # the stack trace, down to the handler's own frame
    assert "at testapp.errors$boom" in ng.log_text(since)
    # the same worker goes on serving
    assert pid(ng) == before
    assert ng.get("/static").body == b"static ok"


@pytest.mark.log_allows(r"jvm: the handler threw", r"not a Ring response map",
                        TRACE)
@pytest.mark.parametrize("path, what", [
    ("/nil", "nil"),
    ("/string", "a java.lang.String"),
    ("/number", "a java.lang.Long"),
])
def test_handler_returns_no_map(ng, path, what):
    before = pid(ng)
    since = ng.log_size()
    r = ng.get(path)
    assert r.status == 500
    assert ng.wait_log(r"\[error\] .*the handler returned %s, not a Ring "
                       r"response map" % what, since)
    assert pid(ng) == before


@pytest.mark.log_allows(r"jvm: the handler threw", r"no HTTP token",
                        r"the control character", r"which nginx-jvm cannot send",
                        r"an empty name", TRACE)
@pytest.mark.parametrize("case, reason", [
    # a name that is not an HTTP token would read to a client as another
    # field ("X:Y: v" is the field X) or break the header block
    ("space-name", r'header field name "Bad Name": it is no HTTP token'),
    ("colon-name", r'header field name "X:Y": it is no HTTP token'),
    ("utf8-name", r'header field name "X-Na\\xEFve": it is no HTTP token'),
    ("empty-name", r"an empty name"),
    ("crlf-value", r'header field "X-A": it holds the control character '
                   r'0x0D'),
    # Ring defines no map or set body (the reference adapters refuse them)
    ("map-body", r"body of type clojure.lang.PersistentArrayMap, "
                 r"which nginx-jvm cannot send"),
    ("set-body", r"body of type clojure.lang.PersistentHashSet, "
                 r"which nginx-jvm cannot send"),
])
def test_bad_response_is_a_logged_500(ng, case, reason):
    before = pid(ng)
    since = ng.log_size()
    r = ng.get("/bad-response?" + case)
    assert r.status == 500
    assert b"sent" not in r.body
    assert ng.wait_log(r"\[error\] .*" + reason, since)
    assert pid(ng) == before


@pytest.mark.parametrize("case, header, body", [
    ("vector-body", None, b"vector"),
    ("token-names", "X-Ok!#$%&'*+-.^_`|~09", b"sent"),
])
def test_good_responses_next_to_the_bad(ng, case, header, body):
    r = ng.get("/bad-response?" + case)
    assert r.status == 200
    assert r.body == body
    if header:
        assert r.header(header) == "v"


EXIT_LOG = [r"\[alert\] .*jvm: handler code ended the JVM with status 2",
            r"worker process \d+ exited with code 1"]


@pytest.mark.log_allows(*EXIT_LOG, r"System.exit\(\) called on thread",
                        r"^\s+at ")
@pytest.mark.parametrize("how", ["exit", "halt"])
def test_system_exit_is_an_alert_and_the_worker_comes_back(mode, how):
    """Nothing refuses System.exit on JDK 17+; it must not end the worker
    silently, nor with nginx's "fatal, do not respawn" status 2."""
    locations = LOCATIONS + \
        "        location /exit { jvm_content testapp.errors/exit; }\n"
    with Nginx(locations, mode=mode, startup_allow=MISSING) as n:
        before = pid(n)
        since = n.log_size()
        try:
            r = n.get("/exit?" + how, timeout=10)
            assert r.status != 200, "the handler's answer got out"
        except (OSError, http.client.HTTPException):
            pass                        # the connection went with the worker
        assert n.wait_log(EXIT_LOG[0], since)
        assert n.wait_log(EXIT_LOG[1], since)
        if how == "exit":
            # the caller's stack, from the runtime's shutdown hook
            assert n.log_lines(r"System.exit\(\) called on thread", since)
            assert "at testapp.errors$exit" in n.log_text(since)

        def new_pid():
            try:
                return pid(n)
            except (OSError, http.client.HTTPException, AssertionError):
                return None
        # the master started another worker, which serves
        after = wait_for(new_pid, 30)
        assert after and after != before
        assert n.get("/static").body == b"static ok"


@pytest.mark.log_allows(r"jvm: the response body failed", r"seq-boom-marker",
                        TRACE)
def test_seq_body_throws_midway(ng):
    before = pid(ng)
    since = ng.log_size()
    # A keep-alive request: a complete response would leave the connection
    # open and raw() would time out; a failed body must close it.
    data = ng.raw(b"GET /seq-throws HTTP/1.1\r\nHost: localhost\r\n\r\n",
                  timeout=10)
    r = parse_raw(data)
    assert r.status == 200
    assert r.header("Transfer-Encoding") == "chunked"
    body, complete = dechunk(r.body)
    assert not complete, "the truncated body ended with its 0-chunk"
    expected = b"".join(bytes([97 + i % 26]) * 1000 for i in range(50))
    # what was produced before the failure arrived, then the end
    assert 0 < len(body) <= len(expected)
    assert expected.startswith(body)
    assert ng.wait_log(r"\[error\] .*jvm: the response body failed", since)
    assert "seq-boom-marker" in ng.log_text(since)
    assert pid(ng) == before


@pytest.mark.no_reload
def test_log_of_missing_handlers_once_at_start(ng):
    lines = ng.log_lines(r'\[error\] .*jvm: cannot load handler '
                         r'"com.nope.Missing": java.lang.ClassNotFoundException')
    assert len(lines) == 1, lines
    lines = ng.log_lines(r'\[error\] .*jvm: cannot load handler '
                         r'"testapp.errors/no-such-var"')
    assert len(lines) == 1, lines


@pytest.mark.no_reload
@pytest.mark.log_allows(r"the handler of this location failed to load")
@pytest.mark.parametrize("path", ["/missing-class", "/missing-var"])
def test_missing_handler_answers_500(ng, path):
    for _ in range(3):
        assert ng.get(path).status == 500
    # logged at start only, not once per request
    assert len(ng.log_lines(r"cannot load handler")) == 2
    assert pid(ng) > 0
    assert ng.get("/static").status == 200
