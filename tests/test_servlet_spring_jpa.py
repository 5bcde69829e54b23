"""A realistic Spring Boot application beneath nginx (issue 47 item 8):
examples/servlet-spring-jpa, Spring MVC with Thymeleaf pages, bean
validation, Spring Data JPA (Hibernate) on PostgreSQL and flash messages,
served unmodified by `nginx-jvm run --jar` with two workers, through real
HTTP, every request on a new connection: the flash message a POST leaves
in the HttpSession is read by whichever worker takes the GET of its
redirect (the sessions are the workers' shared dictionary "sessions").

PostgreSQL is Debian's, started here on a free port of 127.0.0.1 in a
temporary directory (bench/realapp/pg.py, as test_realapp_verify does);
the application is told where it is by Spring's properties, with
--jvm-option -Dspring.datasource.url=... The jar is built once per run into
build/servlet-spring-jpa with build/projects/m2 as Maven's local
repository (test_projects' own). Skipped when the servlet module is not
built, or PostgreSQL is not installed (scripts/install-deps.sh)."""

import html
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import pytest

from harness import (LAUNCHER, ROOT, Launcher, free_port, maven_package,
                     request, wait_for)

sys.path.insert(0, str(ROOT / "bench" / "realapp"))
import pg  # noqa: E402

EXAMPLE = ROOT / "examples" / "servlet-spring-jpa"
BUILT = ROOT / "build" / "servlet-spring-jpa"
M2 = ROOT / "build" / "projects" / "m2"
HANDLER_JAR = "nginx-jvm-servlet-boot.jar"
SEAM_JAR = "nginx-jvm-servlet-boot-seam.jar"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
FLASH = re.compile(r'<p class="flash">([^<]*)</p>')


def servlet_dir():
    for d in (ROOT / "build" / "servlet", ROOT / "runtime" / "servlet" / "target"):
        if (d / HANDLER_JAR).is_file() and (d / SEAM_JAR).is_file():
            return d
    return None


pytestmark = [
    pytest.mark.skipif(servlet_dir() is None,
                       reason="the servlet module is not built (%s): make all"
                       % HANDLER_JAR),
    pytest.mark.skipif(pg.missing_reason() is not None,
                       reason=str(pg.missing_reason())),
]


@pytest.fixture(scope="module")
def jar():
    """`mvn package` of a copy of the example: its executable jar."""
    return maven_package(EXAMPLE, BUILT, "servlet-spring-jpa.jar", m2=M2)


@pytest.fixture(scope="module")
def db():
    with pg.Postgres(shared_buffers="32MB", max_connections=40) as p:
        yield p


@pytest.fixture(scope="module")
def shared():
    """The class cache of this module's launcher, where the workers' user
    (nobody) can write."""
    d = Path(tempfile.mkdtemp(prefix="nginx-jvm-jpa-test-"))
    d.chmod(0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def datasource(port):
    """Spring's properties that name the database (trust authentication
    on loopback: any password does)."""
    return ["--jvm-option", "-Dspring.datasource.url=jdbc:postgresql://"
            "%s:%d/%s" % (pg.HOST, port, pg.DATABASE),
            "--jvm-option", "-Dspring.datasource.username=%s" % pg.USER,
            "--jvm-option", "-Dspring.datasource.password=not-checked"]


@pytest.fixture(scope="module")
def app(jar, db, shared):
    n = Launcher(["--jar", str(jar)] + datasource(db.port), mode="pool",
                 workers=2, env={"NGINX_JVM_CACHE": str(shared / "cache")})
    with n:
        yield n


def post(app, title, body=""):
    return app.request("POST", "/notes", headers=FORM,
                       body=urllib.parse.urlencode({"title": title,
                                                    "body": body}))


def served_by(app, r):
    pid = int(r.header("X-Served-By"))
    assert pid in app.worker_pids()
    return pid


def notes_in_db(db):
    return {int(i): (t, b) for i, t, b in
            db.query("SELECT id, title, coalesce(body, '') FROM note")}


def test_the_list_page(app):
    r = app.get("/notes")
    assert r.status == 200, r
    assert r.header("Content-Type") == "text/html;charset=UTF-8"
    assert "<h1>Notes</h1>" in r.text
    assert '<a href="/notes/new">New note</a>' in r.text
    assert not FLASH.search(r.text)
    served_by(app, r)
    # / is a redirect to it
    r = app.get("/")
    assert r.status == 302 and r.header("Location").endswith("/notes"), r


def test_the_form_and_its_validation(app, db):
    """An invalid note: the form again with 200, the error next to its
    field, what was entered kept; nothing saved."""
    before = notes_in_db(db)
    r = app.get("/notes/new")
    assert r.status == 200, r
    assert '<form method="post" action="/notes">' in r.text
    r = post(app, "   ", "déjà vu for 5 €")
    assert r.status == 200, r
    assert '<span class="error">A note needs a title.</span>' in r.text
    textarea = re.search(r'<textarea name="body"[^>]*>([^<]*)</textarea>',
                         r.text)
    assert html.unescape(textarea.group(1)) == "déjà vu for 5 €", r.text
    r = post(app, "é" * 101, "kept")
    assert r.status == 200, r
    assert "A title has at most 100 characters." in r.text
    value = re.search(r'<input name="title" id="title" value="([^"]*)"',
                      r.text)
    assert html.unescape(value.group(1)) == "é" * 101
    assert notes_in_db(db) == before


def test_a_saved_note_redirects_with_a_flash_shown_once(app, db):
    """POST → 302 → GET of its Location, each on a new connection: the
    flash message (in the session) is shown once, by whichever worker,
    with the new row; a reload shows the row and no message. Repeated
    until the GET was another worker's than the POST's."""
    crossed = []
    for i in range(20):
        title = "Flash %d ✓" % i
        r = post(app, title, "note %d" % i)
        assert r.status == 302, r
        location = r.header("Location")
        assert re.fullmatch(r"http://[^/]+/notes", location), location
        cookie = r.header("Set-Cookie").split(";")[0]
        assert cookie.startswith("JSESSIONID="), cookie
        poster = served_by(app, r)
        path = "/" + location.split("/", 3)[3]

        r = app.get(path, headers={"Cookie": cookie})
        assert r.status == 200, r
        assert FLASH.findall(r.text) == ["Note “%s” saved." % title], r.text
        assert ">%s</a></li>" % title in r.text
        reader = served_by(app, r)

        r = app.get(path, headers={"Cookie": cookie})
        assert r.status == 200, r
        assert not FLASH.search(r.text), r.text
        assert ">%s</a></li>" % title in r.text
        if reader != poster:
            crossed.append((poster, reader))
            break
    assert crossed, "every redirect was read by the worker that posted"
    titles = [t for t, _ in notes_in_db(db).values()]
    assert titles.count(title) == 1


def test_the_detail_page_and_utf8(app, db):
    """A note's page; its text from the form's UTF-8 to PostgreSQL and
    back, as written."""
    title, body = "Crème brûlée à 5 €", "Ünïcödé — 日本語, 2 × 3 €"
    r = post(app, title, body)
    assert r.status == 302, r
    found = [i for i, (t, b) in notes_in_db(db).items() if t == title]
    assert len(found) == 1
    nid = found[0]
    assert notes_in_db(db)[nid] == (title, body)

    r = app.get("/notes")
    assert '<a href="/notes/%d">%s</a>' % (nid, title) in r.text
    r = app.get("/notes/%d" % nid)
    assert r.status == 200, r
    assert "<h1>%s</h1>" % title in r.text
    assert '<div class="body">%s</div>' % body in r.text
    assert "<title>%s</title>" % title in r.text
    assert r.body.decode("utf-8")               # as the page says it is


def test_a_missing_note(app):
    r = app.get("/notes/987654", headers={"Accept": "text/html"})
    assert r.status == 404, r
    assert "<h1>Nothing at <span>/notes/987654</span></h1>" in r.text
    r = app.get("/notes/987654", headers={"Accept": "application/json"})
    assert r.status == 404, r
    assert '"status":404' in r.text
    r = app.get("/notes/not-a-number", headers={"Accept": "text/html"})
    assert r.status == 400, r


def test_both_workers_serve(app):
    pids = set()

    def two():
        pids.add(served_by(app, app.get("/notes")))
        return len(pids) == 2
    assert wait_for(two, 60, interval=0.01), pids
    assert pids == set(app.worker_pids())
    # each started Spring and Hibernate, on the one database
    ready = app.log_lines(r"Spring Boot 4\.\d+\.\d+ serves "
                          r"com\.example\.notes\.Application")
    assert len(ready) >= 2, ready
    assert app.log_lines(r"the sessions of / are in shared dictionary "
                         r'"sessions"')


def test_the_table_hibernate_made(db):
    """ddl-auto=update made the table in PostgreSQL."""
    columns = {c for c, in db.query(
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_name = 'note'")}
    assert columns == {"id", "title", "body", "created"}


def test_conformance_with_boots_own_tomcat(jar, db, shared):
    """Issue 47, item 9, on this module's PostgreSQL: the jar on Spring
    Boot's own Tomcat (`java -jar`) and through nginx-jvm (two workers),
    each on a fresh database of its own, browsed by the same script, each
    request on a new connection: the same status, Location, content type
    and body (tests/test_servlet_conformance.py's comparison; the note's
    creation time, each server's own clock, and Boot's ";jsessionid=" in
    URLs, where nginx-jvm tracks sessions by cookie only, left out). Pages, a form with
    validation errors, a saved note's redirect followed with its session
    cookie and its flash message shown once, 404 and 400 pages, UTF-8 in
    paths, parameters and bodies."""
    from test_servlet_conformance import spring_normal
    for name in ("conf_direct", "conf_ours"):
        db.query("DROP DATABASE IF EXISTS %s" % name)
        db.query("CREATE DATABASE %s" % name)

    def on(name):
        return ["--jvm-option", "-Dspring.datasource.url=jdbc:postgresql://"
                "%s:%d/%s" % (pg.HOST, db.port, name)] + datasource(db.port)[2:]

    port = free_port()
    log = shared / "conformance-direct.log"
    direct = subprocess.Popen(
        ["java"] + [o for o in on("conf_direct") if o != "--jvm-option"]
        + ["-jar", str(jar), "--server.port=%d" % port,
           "--server.address=127.0.0.1"],
        stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    ours = Launcher(["--jar", str(jar)] + on("conf_ours"), mode="pool",
                    workers=2, env={"NGINX_JVM_CACHE": str(shared / "cache")})
    try:
        def up():
            try:
                return request(port, "GET", "/notes", timeout=5).status == 200
            except OSError:
                return False
        assert wait_for(lambda: direct.poll() is None and up(), 180, 0.2), \
            log.read_text()[-3000:]
        ours.start()

        def normal(r, p):
            # Boot's own Tomcat also tracks a new session in the URL
            # (";jsessionid=" in a redirect and in links, until the cookie
            # comes back); nginx-jvm by its cookie only (docs/servlet.md)
            status, location, ctype, body = [
                re.sub(r";jsessionid=[0-9A-F]+", "", x) if isinstance(x, str) else x
                for x in spring_normal(r, p)]
            body = re.sub(r"<time>[^<]*</time>", "<time>-</time>", body)
            return status, location, ctype, body

        cookies = {}

        def same(step, method, path, headers=None, body=None):
            """One step on both; the session cookie each server gave
            is sent back to it."""
            answers = []
            for key, call in (("direct", lambda *a: request(port, *a)),
                              ("ours", ours.request)):
                h = dict(headers or {})
                if key in cookies:
                    h["Cookie"] = cookies[key]
                r = call(method, path, h, body)
                c = r.header("Set-Cookie")
                if c:
                    cookies[key] = c.split(";")[0]
                answers.append(normal(r, port if key == "direct" else ours.port))
            assert answers[1] == answers[0], step
            return answers[1]

        html_ = {"Accept": "text/html"}
        same("the empty list", "GET", "/notes")
        same("/ redirects", "GET", "/")
        same("the form", "GET", "/notes/new")
        same("no title", "POST", "/notes", FORM,
             urllib.parse.urlencode({"title": "  ", "body": "déjà vu for 5 €"}))
        same("a title too long", "POST", "/notes", FORM,
             urllib.parse.urlencode({"title": "é" * 101, "body": "kept"}))
        for i, title in enumerate(["Crème brûlée à 5 €", "日本語 ✓"]):
            status, location, _, _ = same("saved %d" % i, "POST", "/notes", FORM,
                                          urllib.parse.urlencode(
                                              {"title": title, "body": "Ünïcödé %d" % i}))
            assert status == 302 and location.endswith("/notes"), location
            _, _, _, page = same("its redirect %d, flash" % i, "GET", "/notes")
            assert FLASH.findall(page) == ["Note “%s” saved." % title], page
            _, _, _, page = same("again %d, no flash" % i, "GET", "/notes")
            assert not FLASH.search(page) and title in page
        same("a note", "GET", "/notes/1")
        same("a note, UTF-8", "GET", "/notes/2")
        same("no such note", "GET", "/notes/987654", html_)
        same("no such note, JSON", "GET", "/notes/987654",
             {"Accept": "application/json"})
        same("not a number", "GET", "/notes/not-a-number", html_)
        same("UTF-8 in the path", "GET", "/notes/%C3%A9t%C3%A9", html_)
        same("no such page", "GET", "/nothing/%E2%82%AC?x=%C3%A9", html_)
        same("a method not allowed", "DELETE", "/notes", html_)
        same("parameters in a GET", "GET", "/notes?title=%C3%A9&x=1")
        assert not ours.log_problems(0, ours.startup_allow)
    finally:
        ours.stop()
        ours.cleanup()
        direct.terminate()
        direct.wait(30)


def test_a_stop_closes_each_workers_pool(app, db):
    """SIGTERM: each worker's Spring context closes, and with it its
    Hikari pool: no connection of the application is left in PostgreSQL.
    (Last of the tests on `app`: it stops it.)"""
    def connections():
        return int(db.query("SELECT count(*) FROM pg_stat_activity WHERE "
                            "backend_type = 'client backend' AND "
                            "application_name <> 'psql'")[0][0])
    assert connections() >= 2
    pids = app.worker_pids()
    since = app.log_size()
    assert app.stop(timeout=30)
    log = app.log_text(since)
    for pid in pids:
        mine = [l for l in log.splitlines() if " %d#%d: " % (pid, pid) in l]
        assert any("HikariPool-1 - Shutdown completed" in l
                   for l in mine), log
    assert wait_for(lambda: connections() == 0, 10), connections()


# -- the database is not there -----------------------------------------------

def test_the_database_down(jar):
    """Nothing listens on the datasource's port: Hibernate cannot learn
    the database's dialect, the context fails, the launcher exits non-zero
    well within 90 s, saying why. No class cache: the worker's own start
    is what fails."""
    port = free_port()
    started = time.monotonic()
    r = subprocess.run([LAUNCHER, "run", "--port", str(free_port()),
                        "--jar", str(jar), "--workers", "2",
                        "--mode", "pool", "--cache", "off"]
                       + datasource(port),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    took = time.monotonic() - started
    assert r.returncode != 0
    assert took < 90, took
    err = r.stderr
    # BootHandler's summary: the context's failure, and its last cause
    last = err.strip().splitlines()[-1]
    assert last.startswith("nginx-jvm: stopped: "), last
    assert ("servlet-spring-jpa.jar did not start: "
            "org.springframework.beans.factory.BeanCreationException: "
            "Error creating bean with name 'entityManagerFactory'") in last
    assert "Unable to determine Dialect without JDBC metadata" in last
    # and why: the driver's words, in the application's own log
    assert ("Connection to 127.0.0.1:%d refused" % port) in err, err
