"""A servlet web application (a WAR) served by `nginx-jvm run --war` (issue
47): examples/servlet-war, built by Maven as its users build it, in each
worker's Tomcat beneath nginx, through real HTTP.

The WAR is built once per run into build/servlet-war; the launchers here
share a class cache of their own (the unpacked WAR lives in it too), so that
the machine's cache does not collect one copy per run."""

import hashlib
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from harness import (LAUNCHER, ROOT, Launcher, Nginx, config_test,
                     maven_package, wait_for)

EXAMPLE = ROOT / "examples" / "servlet-war"
BUILD = ROOT / "build" / "servlet-war"
SERVLET = ROOT / "build" / "servlet" / "nginx-jvm-servlet.jar"
TRACE = r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: |\s+Suppressed: )"
THREW = r"example failure on purpose"


@pytest.fixture(scope="module")
def war():
    """`mvn package` of a copy of the example: target/servlet-war.war."""
    assert SERVLET.exists(), "the servlet engine is not built: make all"

    def big_file(d):
        # a static file past Tomcat's sendfile threshold (48 KB): the
        # default servlet names it to the connector, and nginx sends it
        (d / "src/main/webapp/static/big.bin").write_bytes(
            random.Random(47).randbytes(300 * 1024))
    return maven_package(EXAMPLE, BUILD, "servlet-war.war", edit=big_file,
                         timeout=600)


@pytest.fixture(scope="module")
def shared():
    """A directory the workers' user (nobody) can reach and write, as /tmp
    (pytest's own are the test's user's only): the caches, the files the
    application writes, the web applications made by a test."""
    d = Path(tempfile.mkdtemp(prefix="nginx-jvm-servlet-"))
    d.chmod(0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def cache(shared):
    return shared / "cache"


@pytest.fixture
def tmp(shared, request):
    d = shared / request.node.name.replace("/", "_")[:60]
    d.mkdir(mode=0o1777)
    d.chmod(0o1777)
    return d


def launcher(war, cache, *args, workers=1, mode="pool"):
    return Launcher(["--war", str(war)] + list(args), mode=mode,
                    workers=workers, env={"NGINX_JVM_CACHE": str(cache)})


@pytest.fixture(scope="module")
def destroyed(shared):
    return shared / "destroyed.txt"


@pytest.fixture(scope="module")
def app(war, cache, destroyed, servlet_mode, shared):
    """The example at /app, two workers, in each mode of the suite (pool and
    virtual; coloop under make test-coloop); a location nginx denies under
    it."""
    cost = shared / ("cost-%s.log" % servlet_mode)
    n = launcher(war, cache, "--context-path", "/app",
                 "--jvm-option", "-Dexample.greeting=hi from -D",
                 "--jvm-option", "-Dexample.destroyed=%s" % destroyed,
                 "--server", "location /app/hello/secret { return 403; }",
                 # the client's address as nginx's realip module makes it
                 "--server", "set_real_ip_from 127.0.0.1; "
                             "real_ip_header X-Forwarded-For;",
                 # what the JVM allocated for each request (test_a_large_...)
                 "--http", "log_format cost '$request_uri $status "
                           "$jvm_alloc_bytes';",
                 "--server", "access_log %s cost;" % cost,
                 workers=2, mode=servlet_mode)
    n.cost = cost
    with n:
        yield n


def fields(reply):
    return dict(l.split(": ", 1) for l in reply.text.splitlines()
                if ": " in l)


def test_annotated_servlet_and_web_xml_filter(app):
    r = app.get("/app/hello/x?name=%C3%A9t%C3%A9", headers={"X-Test": "t"})
    assert r.status == 200, r
    assert r.text.startswith("hello été\n")
    f = fields(r)
    assert f["contextPath"] == "/app"
    assert f["servletPath"] == "/hello"
    assert f["pathInfo"] == "/x"
    assert f["requestURI"] == "/app/hello/x"
    assert f["query"] == "name=%C3%A9t%C3%A9"
    assert f["header X-Test"] == "t"
    assert f["remoteAddr"] == "127.0.0.1"
    assert (f["scheme"], f["secure"]) == ("http", "false")
    assert f["serverPort"] == str(app.port)
    # -D reaches the application's System.getProperty
    assert f["greeting"] == "hi from -D"
    # the WAR is a directory: getRealPath names a file that is there
    assert f["realPath"] == "true"
    # the filter web.xml declares, with its init-param
    assert r.header("X-Example-Filter") == "stamped"
    assert r.header("Content-Type") == "text/plain;charset=UTF-8"


def test_local_address_is_the_one_nginx_accepted_on(app):
    # Tomcat asks its socket for getLocalAddr() and getLocalName();
    # beneath nginx there is none, and they were null (the Servlet TCK's
    # getLocalAddrTest, getLocalNameTest): nginx's $server_addr, read when
    # the application asks
    f = fields(app.get("/app/hello/x"))
    assert f["localAddr"] == "127.0.0.1"
    # and its name, as Tomcat's own connectors give it: the hosts file's
    assert f["localName"] == socket.gethostbyaddr("127.0.0.1")[0]
    assert f["remoteAddr"] == "127.0.0.1"


def test_form_post_in_utf8(app):
    r = app.request("POST", "/app/hello", body="name=%E2%82%AC+1",
                    headers={"Content-Type":
                             "application/x-www-form-urlencoded"})
    assert r.status == 200
    assert r.text == "posted € 1\n"


def test_welcome_file_is_a_jsp(app):
    """/app/ is index.jsp (web.xml's welcome file), compiled by Jasper; it
    reads the attribute the @WebListener set."""
    r = app.get("/app/?name=Ann")
    assert r.status == 200, r
    assert "<h1>Hello, Ann!</h1>" in r.text
    assert "context: [/app]; started by listener: listener" in r.text
    assert 'href="/app/static/app.css"' in r.text
    # /app is redirected to /app/, as Tomcat does
    r = app.get("/app")
    assert r.status == 302 and r.header("Location").endswith("/app/")


def test_static_files_of_the_war(app):
    css = (EXAMPLE / "src/main/webapp/static/app.css").read_bytes()
    r = app.get("/app/static/app.css")
    assert r.status == 200
    assert r.body == css
    assert r.header("Content-Type").startswith("text/css")
    r = app.get("/app/static/app.css", headers={"Range": "bytes=0-3"})
    assert r.status == 206 and r.body == css[:4]
    etag = app.get("/app/static/app.css").header("ETag")
    r = app.get("/app/static/app.css", headers={"If-None-Match": etag})
    assert r.status == 304 and r.body == b""
    r = app.request("HEAD", "/app/static/app.css")
    assert r.status == 200 and r.body == b""
    assert r.header("Content-Length") == str(len(css))


def test_a_large_static_file_goes_out_as_nginxs_file(app):
    """Past the default servlet's sendfile threshold the servlet writes
    nothing and names the file: a whole one is nginx's file body, a part
    (Range) is copied; conditional GET and HEAD are the servlet's."""
    big = (BUILD / "src/main/webapp/static/big.bin").read_bytes()
    r = app.get("/app/static/big.bin")
    assert r.status == 200
    assert r.body == big
    assert r.header("Content-Length") == str(len(big))
    # one Accept-Ranges (nginx's), not the servlet's as well
    assert [v for k, v in r.headers if k.lower() == "accept-ranges"] \
        == ["bytes"]
    r = app.get("/app/static/big.bin", headers={"Range": "bytes=1000-70999"})
    assert r.status == 206 and r.body == big[1000:71000]
    assert r.header("Content-Range") == "bytes 1000-70999/%d" % len(big)
    etag = app.get("/app/static/big.bin").header("ETag")
    assert app.get("/app/static/big.bin",
                   headers={"If-None-Match": etag}).status == 304
    r = app.request("HEAD", "/app/static/big.bin")
    assert r.status == 200 and r.body == b""
    assert r.header("Content-Length") == str(len(big))
    # the whole file never passed through the JVM: its request allocated a
    # tenth of the file at most, where the range's copy (through buffers
    # the engine reuses) allocated a good part of what it copied: the
    # measure sees a copy
    mark = "?cost=%d" % random.randrange(1 << 30)
    assert app.get("/app/static/big.bin" + mark).body == big
    assert app.get("/app/static/big.bin" + mark + "r", headers={
        "Range": "bytes=0-199999"}).status == 206

    def costs():
        got = {}
        for line in app.cost.read_text().splitlines():
            uri, status, alloc = line.split()
            if uri.endswith(mark) or uri.endswith(mark + "r"):
                got[uri[-1] == "r"] = int(alloc)
        return got if len(got) == 2 else None
    assert wait_for(costs, 10), app.cost.read_text()[-2000:]
    got = costs()
    assert got[False] < len(big) // 10, got
    if app.mode == "pool":
        # the servlet's own thread is measured whole only in pool mode (a
        # virtual thread's slices are counted where a carrier of ours runs
        # them: docs/directives.md, $jvm_alloc_bytes)
        assert got[True] > 50_000, got


def test_the_remote_address_is_nginxs_after_realip(app):
    """realip replaced the client's address from X-Forwarded-For (the peer,
    127.0.0.1, is trusted): the servlet sees the replaced one, as
    $remote_addr, and no forwarded field overrides it when nginx did not
    trust it."""
    f = fields(app.get("/app/hello/x", headers={
        "X-Forwarded-For": "203.0.113.7"}))
    assert f["remoteAddr"] == "203.0.113.7"
    assert fields(app.get("/app/hello/x"))["remoteAddr"] == "127.0.0.1"


def test_a_client_that_leaves_a_large_file(app):
    """It reads a little of the file and closes: the worker serves on."""
    for _ in range(3):
        s = socket.create_connection(("127.0.0.1", app.port))
        s.sendall(b"GET /app/static/big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
        s.recv(1000)
        s.close()
    big = (BUILD / "src/main/webapp/static/big.bin").read_bytes()
    assert app.get("/app/static/big.bin").body == big


def test_web_xml_error_page_for_404(app):
    r = app.get("/app/no/such/page")
    assert r.status == 404
    assert "<h1>Nothing at /app/no/such/page</h1>" in r.text


def test_outside_the_context_is_tomcats_404(app):
    r = app.get("/elsewhere")
    assert r.status == 404
    assert "Tomcat" not in r.text


def test_web_inf_is_not_served(app):
    for path in ("/app/WEB-INF/web.xml", "/app/WEB-INF/classes/example/"
                 "HelloServlet.class", "/app/META-INF/MANIFEST.MF",
                 "/app/static/../WEB-INF/web.xml", "/app/%57EB-INF/web.xml",
                 "/app/web-inf/web.xml"):
        r = app.get(path)
        assert r.status == 404, (path, r)
        assert b"<web-app" not in r.body


@pytest.mark.log_allows(THREW, TRACE)
def test_a_servlet_that_throws(app):
    """500 through Tomcat's error page, which names neither the exception
    nor Tomcat's version; the stack trace is in nginx's error log."""
    since = app.log_size()
    r = app.get("/app/fail")
    assert r.status == 500
    assert "Internal Server Error" in r.text
    assert "example failure" not in r.text
    assert "IllegalStateException" not in r.text
    assert "Tomcat/" not in r.text
    assert wait_for(lambda: "example.FailServlet.doGet" in app.log_text(since),
                    30), app.log_text(since)
    log = app.log_text(since)
    assert "[error]" in log and THREW in log
    # and the worker goes on
    assert app.get("/app/hello").status == 200


def test_async_servlet(app):
    r = app.get("/app/async?ms=50")
    assert r.status == 200
    assert r.text == "async done after 50 ms\n"


def test_a_client_that_leaves_an_async_servlet(app):
    """The servlet completes after the client left: nothing breaks, the
    workers serve on, the error log stays clean (checked after the test)."""
    for _ in range(4):
        s = socket.create_connection(("127.0.0.1", app.port))
        s.sendall(b"GET /app/async?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n")
        s.close()
    time.sleep(0.5)     # the servlets complete, into closed requests
    assert app.get("/app/async?ms=1").status == 200


def multipart(fields_):
    boundary = "----nginx-jvm-test-boundary"
    out = b""
    for name, filename, data in fields_:
        disp = 'form-data; name="%s"' % name
        if filename:
            disp += '; filename="%s"' % filename
        out += ("--%s\r\nContent-Disposition: %s\r\n\r\n"
                % (boundary, disp)).encode() + data + b"\r\n"
    out += ("--%s--\r\n" % boundary).encode()
    return out, "multipart/form-data; boundary=" + boundary


def test_multipart_upload_through_the_engines_parser(app):
    big = os.urandom(300 * 1024)        # past fileSizeThreshold: a file
    body, ctype = multipart([("file", "a.bin", big), ("note", None, b"hi")])
    r = app.request("POST", "/app/upload", body=body,
                    headers={"Content-Type": ctype})
    assert r.status == 200, r
    assert r.text.splitlines() == [
        "file a.bin %d %s" % (len(big), hashlib.sha256(big).hexdigest()),
        "note null 2 %s" % hashlib.sha256(b"hi").hexdigest()]


@pytest.mark.log_allows(r"FileSizeLimitExceeded|exceeds its maximum|"
                        r"maximum permitted size", TRACE)
def test_multipart_file_over_the_servlets_limit(app):
    """@MultipartConfig(maxFileSize 4 MB): the engine's limit, an error
    answer, and the worker lives."""
    body, ctype = multipart([("file", "big.bin", b"x" * (5 * 1024 * 1024))])
    r = app.request("POST", "/app/upload", body=body,
                    headers={"Content-Type": ctype})
    assert r.status in (413, 500), r
    assert app.get("/app/hello").status == 200


@pytest.mark.log_allows(r"client intended to send too large body")
def test_body_over_nginxs_limit_never_reaches_the_engine(app):
    r = app.request("POST", "/app/upload", body=b"x" * (11 * 1024 * 1024),
                    headers={"Content-Type": "multipart/form-data; "
                             "boundary=x"})
    assert r.status == 413
    assert r.header("Server").startswith("nginx")


@pytest.mark.parametrize("path", [
    "/app/hello/x/..;/secret", "/app/hello/;/secret",
    "/app/hello/%2e%2e/hello/secret", "/app/hello//secret",
    "/app/hello/secret;x", "/app/hello/sec%72et", "/app/hello/x%2F..%2Fsecret",
])
def test_a_location_nginx_denies_stays_denied(app, path):
    """`location /app/hello/secret { return 403; }`: a shape that nginx
    routes elsewhere must not reach the engine as that path."""
    r = app.get(path)
    if r.status == 403:
        return                          # nginx normalised it into the denial
    assert r.status == 200, (path, r)
    assert fields(r)["pathInfo"] != "/secret", (path, r.text)


def test_new_connections_land_on_both_workers(app):
    pids = set()

    def two():
        pids.add(fields(app.get("/app/hello"))["pid"])
        return len(pids) == 2
    assert wait_for(two, 60, interval=0.01), pids
    assert {int(p) for p in pids} == set(app.worker_pids())


def test_the_session_is_every_workers(app):
    """--war shares HttpSessions between the workers (the dictionary
    "sessions"): a counter goes on whichever worker a new connection
    reaches."""
    r = app.get("/app/count")
    cookie = r.header("Set-Cookie").split(";")[0]
    assert r.text.startswith("count 1, ")
    pids, n = {r.text.split("pid ")[1].strip()}, 1

    def next_visit():
        nonlocal n
        r = app.get("/app/count", headers={"Cookie": cookie})
        n += 1
        assert r.text.startswith("count %d, " % n), r.text
        pids.add(r.text.split("pid ")[1].strip())
        return len(pids) == 2
    assert wait_for(next_visit, 60, interval=0.01), pids


def test_the_engine_never_opens_a_socket(app):
    """Each worker's listening TCP sockets are nginx's: Tomcat opens none."""
    out = subprocess.run(["ss", "-Hltnp"], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    for pid in app.worker_pids():
        ports = {l.split()[3].rsplit(":", 1)[1] for l in out.splitlines()
                 if "pid=%d," % pid in l}
        assert ports == {str(app.port)}, (pid, ports)


def test_a_stop_runs_the_applications_destroy(war, cache, tmp):
    """SIGTERM (Ctrl-C) stops the launcher; each worker's Tomcat stops its
    application first (its ServletContextListener runs)."""
    marker = tmp / "destroyed.txt"
    n = launcher(war, cache, "--jvm-option",
                 "-Dexample.destroyed=%s" % marker, workers=2)
    with n:
        assert n.get("/hello").status == 200
        pids = set(n.worker_pids())
        assert n.stop(signal.SIGTERM, timeout=30)
    # (a first start's class cache build, in a JVM of the master's, loads
    # the application too, and stops it: one line more)
    lines = marker.read_text().splitlines()
    assert {"destroyed %d" % p for p in pids} <= set(lines), lines


def test_a_reload_fails_no_request(war, cache):
    """HUP to the launcher while clients keep coming on new connections:
    the new workers start their Tomcat and the application before the old
    ones stop (jvm_reload_timeout), and every request is answered 200."""
    n = launcher(war, cache, workers=2)
    results, stop = [], threading.Event()

    def load():
        while not stop.is_set():
            try:
                r = n.get("/hello?name=r", timeout=30)
                results.append((r.status, fields(r).get("pid")))
            except OSError as e:
                results.append((None, repr(e)))
    with n:
        old = set(n.worker_pids())
        t = threading.Thread(target=load)
        t.start()
        try:
            assert wait_for(lambda: len(results) >= 20, 60)
            os.kill(n.proc.pid, signal.SIGHUP)
            assert wait_for(lambda: not set(n.worker_pids()) & old
                            and len(n.worker_pids()) == 2, 120), n.log_text()
            seen = len(results)
            # the new workers answer
            assert wait_for(lambda: len(results) >= seen + 20, 60)
        finally:
            stop.set()
            t.join()
    failed = [r for r in results if r[0] != 200]
    assert not failed, failed[:5]
    pids = {r[1] for r in results}
    assert pids & {str(p) for p in old} and pids - {str(p) for p in old}


def test_https_is_secure_to_the_servlet(war, cache):
    n = launcher(war, cache, "--tls-self-signed")
    with n:
        r = subprocess.run(["curl", "-sk", "https://127.0.0.1:%d/hello"
                            % n.port], stdout=subprocess.PIPE, text=True,
                           timeout=30)
        f = dict(l.split(": ", 1) for l in r.stdout.splitlines()
                 if ": " in l)
        assert (f["scheme"], f["secure"]) == ("https", "true"), r.stdout


# -- what the launcher refuses, and a WAR that cannot start -----------------

def run_launcher(*args, timeout=90, cache=None):
    env = dict(os.environ)
    if cache:
        env["NGINX_JVM_CACHE"] = str(cache)
    started = time.monotonic()
    r = subprocess.run([str(LAUNCHER), "run", "--port", "1"] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout, env=env)
    return r, time.monotonic() - started


def test_a_file_that_is_not_a_war(tmp, cache):
    bad = tmp / "app.war"
    bad.write_text("not a zip\n")
    r, _ = run_launcher("--war", str(bad), cache=cache)
    assert r.returncode == 2
    assert "--war %s: not a WAR (a zip file)" % bad in r.stderr
    assert not list((cache / "webapps").glob("*app*")) \
        if (cache / "webapps").exists() else True


@pytest.mark.parametrize("args,said", [
    (["--mode", "loop"], "cannot run on the event loop"),
    (["--handler", "a.B"], "--war and --handler: take one"),
    (["--context-path", "/a;b"], "--context-path must be a path"),
    (["--context-path", "/a/../b"], None),
])
def test_what_the_launcher_refuses(war, args, said):
    r, _ = run_launcher("--war", str(war), "--print-config", *args)
    if said is None:
        # dots are letters of a path here; nginx's $uri decides the rest
        assert r.returncode == 0, r.stderr
        return
    assert r.returncode == 2
    assert said in r.stderr


def test_context_path_without_a_war():
    r, _ = run_launcher("--handler", "a.B", "--classpath", "/tmp",
                        "--context-path", "/app")
    assert r.returncode == 2
    assert "--context-path is for --war" in r.stderr


def test_a_web_xml_that_does_not_parse(tmp, cache):
    """The launcher exits non-zero within a minute and the cause is named:
    here the class cache's build loads the application first."""
    app = tmp / "broken"
    (app / "WEB-INF").mkdir(parents=True)
    (app / "WEB-INF" / "web.xml").write_text("<web-app><servlet>\n")
    r, took = run_launcher("--war", str(app), "--mode", "pool", cache=cache)
    assert r.returncode != 0
    assert took < 60
    assert "did not start" in r.stderr, r.stderr
    assert "web.xml" in r.stderr, r.stderr


def test_a_listener_that_throws_stops_the_start(tmp):
    """Without a class cache the workers load it: the launcher sees a
    worker fail to load its handler, and exits 1 naming the cause."""
    app = tmp / "throws"
    classes = app / "WEB-INF" / "classes" / "bad"
    classes.mkdir(parents=True)
    (classes / "Boom.java").write_text(
        "package bad;\n"
        "@jakarta.servlet.annotation.WebListener\n"
        "public class Boom implements jakarta.servlet.ServletContextListener"
        " {\n  public void contextInitialized("
        "jakarta.servlet.ServletContextEvent e) {\n"
        "    throw new IllegalStateException(\"database down, on purpose\");"
        "\n  }\n}\n")
    api = next((ROOT / "build" / "servlet" / "tomcat-lib")
               .glob("tomcat-embed-core-*.jar"))
    subprocess.run(["javac", "-d", str(app / "WEB-INF" / "classes"), "-cp",
                    str(api), str(classes / "Boom.java")], check=True,
                   timeout=120)
    (classes / "Boom.java").unlink()
    r, took = run_launcher("--war", str(app), "--cache", "off")
    assert r.returncode == 1, r.stderr
    assert took < 60
    assert "database down, on purpose" in r.stderr, r.stderr


# -- jvm_webapp: the same in nginx.conf --------------------------------------

SERVLET_CP = [str(ROOT / "build" / "nginx-jvm.jar"), str(SERVLET),
              '"%s/*"' % (ROOT / "build" / "servlet" / "tomcat-lib")]


def jsp_app(d, text):
    d.mkdir()
    (d / "index.jsp").write_text('<%@ page contentType="text/plain" %>' + text)
    return d


def test_jvm_webapp_serves_two_applications(war, tmp):
    """Two locations, two applications in each worker's one Tomcat; no
    jvm_mode said: pool, which a servlet needs."""
    other = jsp_app(tmp / "other", "other ${2 * 21}")
    n = Nginx("""
        location /app/ { jvm_webapp %s context=/app; }
        location /other/ { jvm_webapp %s context=/other/; }
        location /app/hello/secret { return 403; }
    """ % (war, other), classpath=SERVLET_CP, workers=2)
    with n:
        r = n.get("/app/hello?name=conf")
        assert r.status == 200, r
        assert r.text.startswith("hello conf\n")
        assert fields(r)["contextPath"] == "/app"
        assert n.get("/other/").text.strip() == "other 42"
        assert n.get("/app/hello/secret").status == 403
        assert n.get("/app/async?ms=5").text == "async done after 5 ms\n"


@pytest.mark.parametrize("location,said", [
    ("location / { jvm_mode loop; jvm_webapp @WAR@; }",
     '"jvm_webapp" in location "/" cannot run in "jvm_mode loop"'),
    ("location / { jvm_webapp @WAR@ \"context=/a;b\"; }",
     'the context path "context=/a;b" is not a path'),
    ("location / { jvm_webapp @WAR@ ctx=/a; }",
     '"ctx=/a" is not "context=/PATH"'),
    ("location /a/ { jvm_webapp @WAR@ context=/a; }\n"
     "location /b/ { jvm_webapp @WAR@ context=/a/; }",
     'the context path "/a" is another application\'s already'),
    ("location / { jvm_webapp /no/such.war; }",
     'jvm_webapp: stat() "/no/such.war" failed'),
    ("location / { jvm_content a.B; jvm_webapp @WAR@; }",
     '"jvm_webapp" directive is duplicate'),
])
def test_jvm_webapp_refused_by_nginx_t(war, location, said):
    r = config_test(location.replace("@WAR@", str(war)),
                    classpath=SERVLET_CP)
    assert r.returncode != 0
    assert said in r.stderr, r.stderr
