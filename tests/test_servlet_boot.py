"""An unmodified Spring Boot executable jar beneath nginx (issue 47 item 2):
examples/servlet-boot, built by Maven as its users build it, served by
nginx.jvm.servlet.boot.BootHandler in each worker, through real HTTP. The
application's own server never listens: on the Tomcat starter its
Connector's protocol is ours, on the Jetty starter its Server's connector.
The same application as a WAR (SpringBootServletInitializer), deployed by
--war into our Tomcat, and run by --jar through Boot's WarLauncher.

The example is built once per run, its five packagings at once (the Tomcat
and Jetty starters, the WAR, Boot 3.5's parent with each starter), each
into a directory of build/ (servlet-boot, -jetty, -war, -3.5, -3.5-jetty),
with build/projects/m2 as
Maven's local repository (test_projects' own). Skipped when the servlet
module is not built (make all, or mvn -f runtime/servlet/pom.xml package)."""

import http.client
import json
import re
import shutil
import signal
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from harness import LAUNCHER, ROOT, Launcher, wait_for

EXAMPLE = ROOT / "examples" / "servlet-boot"
M2 = ROOT / "build" / "projects" / "m2"
HANDLER = "nginx.jvm.servlet.boot.BootHandler"
HANDLER_JAR = "nginx-jvm-servlet-boot.jar"
SEAM_JAR = "nginx-jvm-servlet-boot-seam.jar"
TRACE = r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: |\s+Suppressed: )"
THREW = r"example failure on purpose"


def servlet_dir():
    """Where the module's jars are: build/servlet (make all), else the
    module's own target (mvn package)."""
    for d in (ROOT / "build" / "servlet", ROOT / "runtime" / "servlet" / "target"):
        if (d / HANDLER_JAR).is_file() and (d / SEAM_JAR).is_file():
            return d
    return None


SERVLET = servlet_dir()
pytestmark = pytest.mark.skipif(
    SERVLET is None, reason="the servlet module is not built (%s): make all"
    % HANDLER_JAR)


# how each packaging is built: the directory under build/, Maven's
# profile, another Spring Boot parent, the file it makes in target/
BUILDS = {
    "tomcat": ("servlet-boot", None, None, "servlet-boot.jar"),
    "jetty": ("servlet-boot-jetty", "jetty", None, "servlet-boot-jetty.jar"),
    "war": ("servlet-boot-war", "war", None, "servlet-boot.war"),
    "3.5": ("servlet-boot-3.5", None, "3.5.7", "servlet-boot.jar"),
    "3.5-jetty": ("servlet-boot-3.5-jetty", "jetty", "3.5.7",
                  "servlet-boot-jetty.jar"),
}


def start_build(dest, profile=None, boot=None):
    """`mvn package` of a copy of the example (with Maven's `profile`, and
    another Spring Boot parent when `boot` says one), started."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("target"))
    if boot:
        pom = dest / "pom.xml"
        text = pom.read_text()
        pom.write_text(re.sub(r"(<artifactId>spring-boot-starter-parent</artifactId>\s*"
                              r"<version>)[^<]+", r"\g<1>" + boot, text))
    return subprocess.Popen(["mvn", "-B", "-q", "-Dmaven.repo.local=%s" % M2,
                             "package"] + (["-P" + profile] if profile else []),
                            cwd=dest, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def built():
    """Every packaging of the example, built at once (Maven's start and
    Spring's repackaging are most of the cost, and overlap): a dict of
    packaging to its file."""
    procs = {}
    for name, (d, profile, boot, _) in BUILDS.items():
        procs[name] = start_build(ROOT / "build" / d, profile, boot)
    paths = {}
    for name, p in procs.items():
        out, _ = p.communicate(timeout=900)
        assert p.returncode == 0, (name, out)
        d, _, _, file = BUILDS[name]
        path = ROOT / "build" / d / "target" / file
        assert path.is_file(), path
        paths[name] = path
    return paths


@pytest.fixture(scope="module")
def jar(built):
    return built["tomcat"]


@pytest.fixture(scope="module")
def shared():
    """A directory the workers' user (nobody) can reach and write, as
    /tmp: the class cache of this module's launchers."""
    d = Path(tempfile.mkdtemp(prefix="nginx-jvm-boot-test-"))
    d.chmod(0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def launcher(jar, shared, *args, workers=1, mode="pool"):
    """`nginx-jvm run --jar APP.jar`, as a user runs it: with no --handler
    the launcher sees a Spring Boot jar and serves it through BootHandler
    (the application's jar on the class path, as java -jar puts it, and
    named by -Dnginx.jvm.boot.jar)."""
    return Launcher(["--jar", str(jar)] + list(args), mode=mode,
                    workers=workers,
                    env={"NGINX_JVM_CACHE": str(shared / "cache")})


# what nginx keeps from the world, whatever the engine's own path rules
DENY = "location /admin/ { return 403; }"


@pytest.fixture(scope="module", params=["tomcat", "jetty", "3.5-jetty"])
def app(request, built, shared):
    """The example on each starter, two workers; Spring's properties from
    -D; nginx denies /admin/. The Jetty starter twice: Boot 4 (Jetty 12.1,
    ee11) and Boot 3.5 (Jetty 12.0, ee10: the seam's second build)."""
    n = launcher(built[request.param], shared,
                 "--jvm-option", "-Dapp.greeting=hi from -D",
                 "--jvm-option", "-Dspring.profiles.active=nginx",
                 "--server", DENY, workers=2)
    n.starter = request.param
    n.jetty = request.param.endswith("jetty")
    with n:
        yield n


def test_the_session_is_every_workers(app):
    """The application's HttpSession lives in the dictionary "sessions"
    the launcher declares: a counter goes on whichever worker a new
    connection reaches (Boot's own Tomcat, with our session manager)."""
    r = app.get("/count")
    assert r.status == 200, r
    cookie = r.header("Set-Cookie").split(";")[0]
    assert r.text.startswith("count 1, ")
    pids, n = {r.text.split("pid ")[1]}, 1

    def next_visit():
        nonlocal n
        r = app.get("/count", headers={"Cookie": cookie})
        n += 1
        assert r.text.startswith("count %d, " % n), r.text
        pids.add(r.text.split("pid ")[1])
        return len(pids) == 2
    assert wait_for(next_visit, 60, interval=0.01), pids
    assert app.log_lines(r"the sessions of / are in ")


def test_a_forgotten_session_is_gone_for_every_worker(app):
    """invalidate() on one worker: the session is gone from the store, the
    next request on any worker starts a new one, under a new id."""
    r = app.get("/count")
    cookie = r.header("Set-Cookie").split(";")[0]
    assert app.get("/count", headers={"Cookie": cookie}).text.startswith(
        "count 2, ")
    r = app.request("POST", "/forget", headers={"Cookie": cookie})
    assert r.status == 200 and r.text == "forgotten", r
    for _ in range(6):              # new connections: both workers, likely
        r = app.get("/count", headers={"Cookie": cookie})
        assert r.text.startswith("count 1, "), r.text
        assert r.header("Set-Cookie").split(";")[0] != cookie


def test_a_session_is_stored_before_its_answer_ends(app):
    """Back to back over new connections, on either worker: a visit, then
    invalidate(), then the next request at once. Each answer's end goes to
    the client only once the store has the request's session (written, or
    deleted): on the Jetty starter the session was stored as the exchange
    completed, after its answer, and the previous visit's late store could
    bring a forgotten session back (12 of 200 pairs failed before
    NginxStream held the end; Tomcat's seam saves before the end since
    dec4e87)."""
    wrong = []
    for _ in range(100):
        r = app.get("/count")
        cookie = r.header("Set-Cookie").split(";")[0]
        r = app.get("/count", headers={"Cookie": cookie})
        if not r.text.startswith("count 2, "):
            wrong.append(("visit", r.text))
        r = app.request("POST", "/forget", headers={"Cookie": cookie})
        assert r.status == 200 and r.text == "forgotten", r
        r = app.get("/count", headers={"Cookie": cookie})
        if not r.text.startswith("count 1, "):
            wrong.append(("forgotten", r.text))
    assert not wrong, "%d of 100 pairs: %s" % (len(wrong), wrong[:5])


def test_a_cookie_that_names_no_session(app):
    """What a client may send as the session's cookie: none of it is a
    session, none of it becomes the new session's id, the store is not
    upset (no [error] in the log)."""
    for forged in ["A" * 3000, "../../etc/passwd", "node0abc.node0",
                   "%00", '"quoted"', "jsession:/:X", "Z" * 32]:
        r = app.get("/count", headers={"Cookie": "JSESSIONID=" + forged})
        assert r.status == 200, (forged, r)
        assert r.text.startswith("count 1, "), (forged, r.text)
        made = r.header("Set-Cookie").split(";")[0].split("=", 1)[1]
        assert made != forged and forged not in made, (forged, made)


def scratch_dirs(app, pids):
    """What the application made in the workers' temporary directory: the
    seam's Tomcat base directories (named by pid); Boot's Jetty document
    bases (jetty-docbase.0.N, each worker's as its Jetty logged it)."""
    tmp = Path(tempfile.gettempdir())
    if app.jetty:
        bases = set()
        # Boot 4's osbjs.JettyEmbeddedWebAppContext, Boot 3.5's osbwej.
        for line in app.log_lines(r"Started osb\w+\.JettyEmbeddedWebAppContext"):
            pid = int(re.search(r" (\d+)#", line).group(1))
            m = re.search(r"b=file:(?://)?(/[^,]*?)/?,", line)
            if pid in pids and m:
                bases.add(Path(m.group(1)))
        assert len(bases) == len(pids), bases
        return [p for p in bases if p.exists()]
    return [p for p in tmp.glob("nginx-jvm-boot-*-*")
            if p.name.split("-")[3] in {str(pid) for pid in pids}]


# URIs whose path is /admin/... once nginx has decoded and normalised it:
# nginx's 403, whatever the engine would have made of them
DENIED = ["/admin/secret", "/x/%2e%2e/admin/secret", "//admin//secret",
          "/admin%2Fsecret", "/%61dmin/secret", "/x/./../admin/secret",
          "/x;p=1/../admin/secret", "/x/..%2Fadmin/secret"]
# URIs that are not under /admin/ for nginx, which Tomcat's and Jetty's own
# rules (";" parameters stripped, then ".." resolved) would have mapped to
# /admin/secret: the engine maps nginx's $uri, so the application says 404
NOT_THE_SECRET = ["/x/..;/admin/secret", "/x/%2e%2e%3b/admin/secret",
                  "/admin;x/secret", "/admin%3Bx/secret", "/x/..;a=b/admin/secret",
                  "/ADMIN/secret"]


def test_nginx_denies_what_the_engine_would_map(app):
    """issue 47 item 5 on each starter: a `location /admin/ { return 403; }`
    cannot be walked around with `;`, `%2e`, `//` or an encoded slash."""
    for raw in DENIED:
        r = app.get(raw, headers={"Accept": "application/json"})
        assert r.status == 403, (raw, r)
    for raw in NOT_THE_SECRET:
        r = app.get(raw, headers={"Accept": "application/json"})
        assert r.status == 404, (raw, r)
        assert "the secret" not in r.text, raw
    # what the application sees of a path nginx normalised
    info = json.loads(app.get("/x/..//info").text)
    assert info["requestURI"] == "/info"


def test_a_rest_controller(app):
    r = app.get("/hello?name=nginx")
    assert r.status == 200, r
    assert r.text == "hi from -D, nginx!"
    assert r.header("Content-Type").startswith("text/plain")


def test_what_the_application_sees_of_its_request(app):
    r = app.get("/info?a=%C3%A9", headers={"User-Agent": "boot-test"})
    assert r.status == 200, r
    assert r.header("Content-Type") == "application/json"
    info = json.loads(r.text)
    assert info["requestURI"] == "/info"
    assert info["query"] == "a=%C3%A9"
    assert info["remoteAddr"] == "127.0.0.1"
    assert info["serverPort"] == app.port
    assert info["scheme"] == "http"
    assert info["userAgent"] == "boot-test"
    assert info["pid"] in app.worker_pids()


def test_system_properties_reach_spring(app):
    """-Dapp.greeting and -Dspring.profiles.active are Spring's properties,
    in each worker's application (the line it prints once ready)."""
    info = json.loads(app.get("/info").text)
    assert info["greeting"] == "hi from -D"
    assert info["profiles"] == ["nginx"]
    ready = app.log_lines(r"example: ready, app\.greeting=hi from -D, "
                          r"profiles=\[nginx\]")
    pids = {int(re.search(r" (\d+)#", l).group(1)) for l in ready}
    assert set(app.worker_pids()) <= pids, ready
    # and BootHandler's own line, once per worker
    boot = r"3\.5\.\d+" if app.starter.startswith("3.5") else r"4\.\d+\.\d+"
    assert len(app.log_lines(r"Spring Boot %s serves "
                             r"com\.example\.boot\.Application" % boot)) >= 2


def test_the_applications_main_returned(app):
    """SpringApplication.run returned, and its thread ended (BootHandler's
    "spring-boot-main"): the application serves on, from nginx's threads."""
    for pid in app.worker_pids():
        names = set()
        for comm in Path("/proc/%d/task" % pid).glob("*/comm"):
            try:
                names.add(comm.read_text().strip())
            except OSError:
                pass                # a thread that just ended
        assert "spring-boot-mai" not in names, names
        assert any(n.startswith("nginx-jvm-pool") for n in names), names
    assert app.get("/hello").status == 200


def test_a_form_post_and_its_redirect(app):
    """A Thymeleaf page's form posts; the controller redirects (302) to a
    page that says what was posted, on the same connection. (Tomcat's
    Location is absolute, Jetty's a path: both are HTTP's.)"""
    conn = http.client.HTTPConnection("127.0.0.1", app.port, timeout=30)
    try:
        r = app.get("/", conn=conn)
        assert r.status == 200, r
        assert '<form method="post" action="/greet">' in r.text
        r = app.request("POST", "/greet", body="name=Ann+%C3%A9t%C3%A9",
                        headers={"Content-Type":
                                 "application/x-www-form-urlencoded"},
                        conn=conn)
        assert r.status == 302, r
        location = r.header("Location")
        assert re.fullmatch(r"(http://[^/]+)?/\?name=Ann\+%C3%A9t%C3%A9",
                            location), location
        r = app.get(re.sub(r"^http://[^/]+", "", location), conn=conn)
        assert r.status == 200, r
        assert "<h1>Hello, Ann été!</h1>" in r.text
    finally:
        conn.close()


def test_a_request_body(app):
    r = app.request("POST", "/echo", body="x" * 100000,
                    headers={"Content-Type": "text/plain"})
    assert r.status == 200, r
    assert r.text == "echo 100000: " + "x" * 100000


def test_the_applications_404_page(app):
    r = app.get("/no/such/page", headers={"Accept": "text/html"})
    assert r.status == 404, r
    assert "<h1>Nothing at <span>/no/such/page</span></h1>" in r.text
    # and Boot's JSON error for a client that wants no page
    r = app.get("/no/such/page", headers={"Accept": "application/json"})
    assert r.status == 404, r
    assert '"status":404' in r.text and '"path":"/no/such/page"' in r.text


@pytest.mark.log_allows(THREW, TRACE)
def test_a_controller_that_throws(app):
    """500 through Boot's error handling; the stack trace is in nginx's
    error log (Tomcat's report at [error]; Jetty's at WARN through the
    application's own logging, on its standard output); the worker goes
    on."""
    since = app.log_size()
    r = app.get("/boom", headers={"Accept": "text/html"})
    assert r.status == 500, r
    assert "example failure" not in r.text
    assert wait_for(lambda: "com.example.boot.HelloController.boom"
                    in app.log_text(since), 30), app.log_text(since)
    log = app.log_text(since)
    if app.jetty:
        assert re.search(r"jvm: stdout: \S+ +WARN .*ServletChannel +: /boom",
                         log) and THREW in log, log
    else:
        assert "[error]" in log and THREW in log
    assert app.get("/hello").status == 200


def test_spring_mvc_async(app):
    """A Callable: the servlet goes async, Spring answers from its own
    thread, Tomcat dispatches back."""
    r = app.get("/later?ms=50")
    assert r.status == 200, r
    assert r.text == "later, after 50 ms on another thread"


def test_new_connections_land_on_both_workers(app):
    pids = set()

    def two():
        pids.add(json.loads(app.get("/info").text)["pid"])
        return len(pids) == 2
    assert wait_for(two, 60, interval=0.01), pids
    assert pids == set(app.worker_pids())


def test_the_application_opens_no_port(app):
    """Each worker's listening TCP sockets are nginx's: the application's
    Tomcat opens none (server.port is 8080 by default: nothing there)."""
    out = subprocess.run(["ss", "-Hltnp"], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    for pid in app.worker_pids():
        ports = {l.split()[3].rsplit(":", 1)[1] for l in out.splitlines()
                 if "pid=%d," % pid in l}
        assert ports == {str(app.port)}, (pid, ports)
    # what Boot logged: its connector, and no port
    if app.jetty:
        assert app.log_lines(r"Jetty started on port 0 \(http/1\.1\)")
        # (Jetty 12.0 logs the connector's simple name)
        assert app.log_lines(r"Started (njsbs\.JettyBoot\$)?BootConnector@")
    else:
        assert app.log_lines(r"Tomcat started on port -1 \(http\)")


def test_a_stop_closes_the_application(app):
    """SIGTERM (Ctrl-C) stops the launcher; each worker's shutdown hooks
    run Spring's: the graceful shutdown, the context's close (the
    application's @PreDestroy), its temporary directories removed.
    (Last of the tests on `app`: it stops it.)"""
    pids = app.worker_pids()
    assert scratch_dirs(app, pids), "the application's scratch"
    since = app.log_size()
    assert app.stop(signal.SIGTERM, timeout=30)
    log = app.log_text(since)
    for pid in pids:
        mine = [l for l in log.splitlines() if " %d#%d: " % (pid, pid) in l]
        assert any("Graceful shutdown complete" in l for l in mine), log
        assert any("example: the application context is closing" in l
                   for l in mine), log
    assert not scratch_dirs(app, pids)


# -- Spring Boot 3.5: Tomcat 10.1 on the same seam (its Jetty starter: app) --

@pytest.fixture(scope="module")
def jar35(built):
    return built["3.5"]


@pytest.mark.log_allows(THREW, TRACE)
def test_spring_boot_3_5(jar35, shared):
    """The example built on Spring Boot 3.5 (Tomcat 10.1) with the same
    seam, compiled against Tomcat 11; with --async (jvm_async on)."""
    n = launcher(jar35, shared, "--async",
                 "--jvm-option", "-Dapp.greeting=hello 3.5")
    with n:
        assert n.log_lines(r"Spring Boot 3\.5\.\d+ serves ")
        assert n.get("/hello?name=x").text == "hello 3.5, x!"
        r = n.request("POST", "/greet", body="name=y",
                      headers={"Content-Type":
                               "application/x-www-form-urlencoded"})
        assert r.status == 302 and r.header("Location").endswith("/?name=y")
        assert "<h1>Hello, y!</h1>" in n.get("/?name=y").text
        assert n.get("/nope", headers={"Accept": "text/html"}).status == 404
        assert n.get("/boom").status == 500
        assert n.get("/later?ms=20").text == "later, after 20 ms on another thread"
        since = n.log_size()
        assert n.stop(signal.SIGTERM, timeout=30)
        assert "example: the application context is closing" in n.log_text(since)


def test_the_seam_of_another_jetty(built):
    """The seam is built once per Jetty line (12.1 ee11, 12.0 ee10) and the
    launcher takes the one the application's Jetty needs; the wrong one
    (here named by nginx.jvm.boot.seam: Boot 3.5's Jetty 12.0 with the
    seam for 12.1) is refused at once, saying which Jetty it found."""
    seam = SERVLET / SEAM_JAR
    r, took = run_launcher(["--jar", str(built["3.5-jetty"]),
                            "--workers", "1", "--cache", "off",
                            "--jvm-option", "-Dnginx.jvm.boot.seam=%s" % seam])
    assert r.returncode != 0
    assert took < 60, took
    assert re.search(r"this application has Jetty 12\.0\.\d+, without "
                     r"org\.eclipse\.jetty\.ee11\.servlet .*take Spring "
                     r"Boot 3\.5 or 4, or the Tomcat starter", r.stderr), r.stderr


# -- an application that cannot start ---------------------------------------

def run_launcher(args, timeout=120):
    started = time.monotonic()
    r = subprocess.run([LAUNCHER, "run", "--port", "1"] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    return r, time.monotonic() - started


def test_an_application_whose_context_fails(jar):
    """The context fails to start (a bean's check): the launcher exits
    non-zero within a minute, naming the cause. No class cache: the
    worker's own start is what fails, as it would with the cache built."""
    r, took = run_launcher(["--jar", str(jar),
                            "--jvm-option", "-Dapp.greeting=",
                            "--workers", "2", "--cache", "off"])
    assert r.returncode != 0
    assert took < 60, took
    assert "did not start" in r.stderr, r.stderr
    assert "app.greeting must not be blank" in r.stderr, r.stderr


def test_what_the_launcher_writes_for_a_boot_jar(jar):
    r, _ = run_launcher(["--jar", str(jar), "--print-config"])
    assert r.returncode == 0, r.stderr
    assert 'jvm_content "%s";' % HANDLER in r.stdout
    assert "jvm_mode pool;" in r.stdout and "jvm_async on;" in r.stdout
    assert "-Dnginx.jvm.boot.jar=%s" % jar in r.stdout
    # the application brings its own Tomcat: not the engine's jars
    assert "tomcat-lib" not in r.stdout
    r, _ = run_launcher(["--jar", str(jar), "--mode", "loop",
                         "--print-config"])
    assert r.returncode == 2
    assert "cannot run on the event loop" in r.stderr


def test_a_jar_that_is_not_a_spring_boot_jar(tmp_path):
    r, took = run_launcher(["--handler", HANDLER, "--classpath",
                            str(SERVLET / HANDLER_JAR),
                            "--jvm-option", "-Dnginx.jvm.boot.jar=%s"
                            % (SERVLET / HANDLER_JAR),
                            "--mode", "pool", "--workers", "1",
                            "--cache", "off"])
    assert r.returncode != 0
    assert took < 60, took
    assert "is not a Spring Boot executable jar" in r.stderr, r.stderr


def test_the_jar_must_be_on_the_class_path(jar):
    r, took = run_launcher(["--handler", HANDLER, "--classpath",
                            str(SERVLET / HANDLER_JAR),
                            "--jvm-option", "-Dnginx.jvm.boot.jar=%s" % jar,
                            "--mode", "pool", "--workers", "1",
                            "--cache", "off"])
    assert r.returncode != 0
    assert "must be on the worker's class path too" in r.stderr, r.stderr


# -- the same application as a WAR (mvn -Pwar) -------------------------------

@pytest.fixture(scope="module")
def war(built):
    return built["war"]


def test_a_boot_war_deployed_by_war(war, shared):
    """--war: our Tomcat deploys the WAR as any servlet container would. Its
    scan of ServletContainerInitializers finds spring-web's, which starts
    the application through the example's SpringBootServletInitializer:
    no main method, no BootHandler, no embedded Tomcat (the WAR's
    WEB-INF/lib-provided is not on any class path). Each worker's context
    has its sessions in the shared dictionary, as any WAR's, and a session
    is there for the next request at once: Spring writes the counter's
    whole Content-Length, which ends the response before the controller
    returns (test_servlet_sessions' "whole" case)."""
    n = Launcher(["--war", str(war), "--server", DENY,
                  "--jvm-option", "-Dapp.greeting=hi from a WAR"],
                 mode="pool", workers=2,
                 env={"NGINX_JVM_CACHE": str(shared / "cache")})
    with n:
        started = n.log_lines(r"com\.example\.boot\.ServletInitializer +: "
                              r"Started ServletInitializer in ")
        pids = {int(re.search(r" (\d+)#", l).group(1)) for l in started}
        assert set(n.worker_pids()) <= pids, started
        assert n.log_lines(r"Tomcat serves ")
        assert not n.log_lines(r"Spring Boot \S+ serves ")
        assert not n.log_lines(r"TomcatWebServer")
        assert n.get("/hello?name=war").text == "hi from a WAR, war!"
        r = n.request("POST", "/greet", body="name=w",
                      headers={"Content-Type":
                               "application/x-www-form-urlencoded"})
        assert r.status == 302 and r.header("Location").endswith("/?name=w")
        for raw in DENIED:
            assert n.get(raw).status == 403, raw
        for raw in NOT_THE_SECRET:
            assert n.get(raw).status == 404, raw
        shared_in = n.log_lines(r"the sessions of / are in shared "
                                r"dictionary \"sessions\"")
        pids = {int(re.search(r" (\d+)#", l).group(1)) for l in shared_in}
        assert set(n.worker_pids()) <= pids, shared_in
        for _ in range(10):         # new connections: either worker
            r = n.get("/count")
            assert r.text.startswith("count 1, "), r.text
            cookie = r.header("Set-Cookie").split(";")[0]
            r = n.get("/count", headers={"Cookie": cookie})
            assert r.text.startswith("count 2, "), r.text
            assert not r.header("Set-Cookie"), r.header("Set-Cookie")


def test_an_executable_war_by_jar(war, shared):
    """--jar APP.war: the WAR as `java -jar` runs it, through its own
    WarLauncher (BootHandler's NginxWarLauncher), on the embedded Tomcat
    of WEB-INF/lib-provided, whose connector is ours: no port."""
    n = launcher(war, shared, "--server", DENY)
    with n:
        assert n.log_lines(r"Spring Boot 4\.\d+\.\d+ serves com\.example\.boot"
                           r"\.Application \(servlet-boot\.war\)")
        assert n.log_lines(r"Tomcat started on port -1 \(http\)")
        assert n.get("/hello?name=x").text == "hello, x!"
        for raw in DENIED[:3] + NOT_THE_SECRET[:3]:
            assert n.get(raw).status in (403, 404), raw
        since = n.log_size()
        assert n.stop(signal.SIGTERM, timeout=30)
        assert "example: the application context is closing" in n.log_text(since)


def test_a_war_that_is_not_spring_boots_by_jar(tmp_path):
    """--jar names jars, and Spring Boot's executable WARs; any other WAR
    is told to take --war."""
    plain = tmp_path / "plain.war"
    with zipfile.ZipFile(plain, "w") as z:
        z.writestr("WEB-INF/web.xml", "<web-app/>")
    r, _ = run_launcher(["--jar", str(plain)])
    assert r.returncode != 0
    assert "(a web application: --war %s)" % plain in r.stderr, r.stderr
