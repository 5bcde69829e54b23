"""Conformance we did not write (issue 47, item 9): each example on its own
server and through nginx-jvm with two workers, browsed by the same script,
each request on a new connection: the same status, Location, content type
and body.

- examples/servlet-war and examples/servlet-jaxrs (Jersey) on Tomcat's own
  HTTP connector (nginx.jvm.servlet.tomcat.Standalone: the same Tomcat,
  its error pages as quiet as ours) against `nginx-jvm run --war`;
- examples/servlet-boot, `java -jar app.jar --server.port=N` (Spring
  Boot's own Tomcat, untouched) against `nginx-jvm run --jar app.jar`.

What differs by nature is left out of the comparison and listed here: the
port and process id an application prints, the Server and Date fields,
the framing (Content-Length or chunked: nginx frames, the bodies are
compared byte for byte), the session cookie's value, and Spring's error
timestamps (each answer's own clock)."""

import json
import re
import subprocess

import pytest

from harness import (ROOT, Launcher, free_port, maven_package,
                     request, wait_for)
from test_servlet_war import (SERVLET, cache, launcher, multipart,  # noqa: F401
                              shared, war)

TRACE = r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: |\s+Suppressed: )"
TOMCAT_LIB = ROOT / "build" / "servlet" / "tomcat-lib"
RUNTIME = ROOT / "build" / "nginx-jvm.jar"


def start_standalone(war, context, log):
    """The WAR on Tomcat's own connector: (process, port) once it serves."""
    port = free_port()
    cp = ":".join([str(SERVLET), str(RUNTIME), str(TOMCAT_LIB / "*")])
    p = subprocess.Popen(["java", "-cp", cp,
                          "nginx.jvm.servlet.tomcat.Standalone", str(war),
                          str(port), context],
                         stdout=subprocess.PIPE, stderr=open(log, "wb"))
    line = p.stdout.readline()
    if line.strip() != b"ready":
        p.kill()
        p.wait()
        raise AssertionError(log.read_text())
    return p, port


def stopped(p):
    p.kill()
    p.wait()


@pytest.fixture(scope="module")
def standalone(war, shared):
    p, port = start_standalone(war, "/app", shared / "standalone.log")
    yield port
    stopped(p)


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


def same(direct_port, ours, method, path, headers=None, body=None,
         normal=normal):
    direct = request(direct_port, method, path, dict(headers or {}), body)
    mine = ours.request(method, path, dict(headers or {}), body)
    assert normal(mine, ours.port) == normal(direct, direct_port)
    return mine


# ---- Jersey (examples/servlet-jaxrs) on Standalone and through --war

@pytest.fixture(scope="module")
def jaxrs_war():
    return maven_package(ROOT / "examples" / "servlet-jaxrs",
                         ROOT / "build" / "servlet-jaxrs", "servlet-jaxrs.war")


@pytest.fixture(scope="module")
def jaxrs(jaxrs_war, shared, cache):
    """(Standalone's port, nginx-jvm's launcher) of the Jersey example."""
    p, port = start_standalone(jaxrs_war, "/rest", shared / "jaxrs.log")
    try:
        with launcher(jaxrs_war, cache, "--context-path", "/rest",
                      workers=2) as n:
            yield port, n
    finally:
        stopped(p)


JSON = {"Content-Type": "application/json"}

# stateless requests, and one POST: the notes are each JVM's own (a worker
# of two may not have the note another made)
JAXRS = [
    ("GET", "/rest/api/notes/hello?name=%C3%A9t%C3%A9", {}, None),
    ("GET", "/rest/api/notes/hello", {"Accept": "text/plain"}, None),
    ("POST", "/rest/api/notes", JSON, json.dumps({"text": "été €"}).encode()),
    ("POST", "/rest/api/notes", JSON, b'{"text": " "}'),
    ("POST", "/rest/api/notes", JSON, b"{not json"),
    ("POST", "/rest/api/notes", {"Content-Type": "text/plain"}, b"x"),
    ("GET", "/rest/api/notes/abc", {}, None),
    ("GET", "/rest/api/notes/999999", {}, None),
    ("GET", "/rest/api/notes/boom", {}, None),
    ("PUT", "/rest/api/notes/hello", {}, b""),
    ("GET", "/rest/api/notes/hello", {"Accept": "image/png"}, None),
    ("GET", "/rest/api/nothing/here", {}, None),
    ("GET", "/rest/api/%C3%A9t%C3%A9", {}, None),
    ("GET", "/rest/", {}, None),
]


@pytest.mark.log_allows(r"example failure on purpose",
                        r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: )")
@pytest.mark.parametrize("method,path,headers,body", JAXRS,
                         ids=["%s %s" % (b[0], b[1]) for b in JAXRS])
def test_jaxrs_same_answer(jaxrs, method, path, headers, body):
    same(jaxrs[0], jaxrs[1], method, path, headers, body)


# ---- Spring Boot (examples/servlet-boot): java -jar and --jar

M2 = ROOT / "build" / "projects" / "m2"


@pytest.fixture(scope="module")
def boot_jar():
    """The same build as test_servlet_boot's Tomcat starter (reused when
    that module built it in this run)."""
    assert (SERVLET.parent / "nginx-jvm-servlet-boot.jar").is_file(), \
        "the servlet module is not built: make all"
    return maven_package(ROOT / "examples" / "servlet-boot",
                         ROOT / "build" / "servlet-boot", "servlet-boot.jar",
                         m2=M2)


def spring_started(port):
    try:
        return request(port, "GET", "/hello", timeout=5).status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def boot(boot_jar, shared):
    """(Boot's own Tomcat's port, nginx-jvm's launcher) of the example."""
    port = free_port()
    log = shared / "boot.log"
    p = subprocess.Popen(["java", "-jar", str(boot_jar),
                          "--server.port=%d" % port,
                          "--server.address=127.0.0.1"],
                         stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    try:
        assert wait_for(lambda: p.poll() is None and spring_started(port),
                        180, 0.2), log.read_text()
        with Launcher(["--jar", str(boot_jar)], mode="pool", workers=2,
                      env={"NGINX_JVM_CACHE": str(shared / "boot-cache")}) as n:
            yield port, n
    finally:
        stopped(p)


def spring_normal(reply, port):
    """Spring's error answers carry their own time: left out."""
    status, location, ctype, body = normal(reply, port)
    body = re.sub(r'"timestamp":"[^"]*"', '"timestamp":-', body)
    body = re.sub(r"<div id='created'>[^<]*</div>", "<div id='created'>-</div>",
                  body)                         # Boot's whitelabel page
    body = re.sub(r'"(pid|serverPort)":\d+', r'"\1":-', body)
    return status, location, ctype, body


HTML = {"Accept": "text/html"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}

BOOT = [
    ("GET", "/", {}, None),
    ("GET", "/?name=%C3%A9t%C3%A9", {}, None),
    ("POST", "/greet", FORM, "name=+%E2%82%AC+%26+co+".encode()),   # a redirect
    ("POST", "/greet", FORM, b""),                         # no name: 400
    ("GET", "/hello?name=%C3%A9t%C3%A9", {}, None),
    ("GET", "/hello?name=a&name=b", {}, None),
    ("GET", "/info?x=1", {"User-Agent": "conformance"}, None),
    ("POST", "/echo", {"Content-Type": "text/plain; charset=UTF-8"},
     "été €".encode() * 1000),
    ("GET", "/later?ms=20", {}, None),
    ("GET", "/boom", {}, None),                            # JSON error
    ("GET", "/boom", HTML, None),                          # error page
    ("GET", "/no/such/page", {}, None),
    ("GET", "/no/such/page", HTML, None),                  # templates/error/404
    ("GET", "/h%C3%A9llo", HTML, None),
    ("DELETE", "/hello", {}, None),
    ("HEAD", "/hello", {}, None),
    ("GET", "/hello?" + "&".join("p%d=v" % i for i in range(1001)), {}, None),
    ("POST", "/greet", FORM, b"name=big&pad=" + b"v" * (2 * 1024 * 1024)),
]


@pytest.mark.log_allows(r"example failure on purpose",
                        r"InvalidParameterException", TRACE)
@pytest.mark.parametrize("method,path,headers,body", BOOT,
                         ids=["%s %s" % (b[0], b[1][:40]) for b in BOOT])
def test_boot_same_answer(boot, method, path, headers, body):
    same(boot[0], boot[1], method, path, headers, body, normal=spring_normal)


def test_boot_session_cookie_is_alike(boot):
    a = request(boot[0], "GET", "/count").header("Set-Cookie")
    b = boot[1].get("/count").header("Set-Cookie")
    strip = lambda c: re.sub(r"JSESSIONID=[0-9A-F]+", "JSESSIONID=-", c)
    assert a and b and strip(a) == strip(b)



@pytest.mark.log_allows(r"InvalidParameterException", TRACE)
def test_boot_keeps_its_connector_limits(boot):
    """Boot's settings of its Connector (maxParameterCount, maxPostSize)
    hold beneath nginx, where ours is its protocol: 400 and 413 in Spring's
    JSON, as on Boot's own Tomcat (which logs them as [error] too)."""
    r = boot[1].get(BOOT[-2][1])
    assert r.status == 400, r
    assert json.loads(r.body)["status"] == 400
    method, path, headers, body = BOOT[-1]
    r = boot[1].request(method, path, dict(headers), body)
    assert r.status == 413, r
    assert json.loads(r.body)["error"] == "Content Too Large"
