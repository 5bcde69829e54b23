"""From a project to a running server: the three example projects
(examples/lein-app, examples/deps-app, examples/maven-app), each copied
clean and built with its real tool on this machine, its own tests run
(against a real nginx-jvm, through the fixtures of nginx-jvm-test), its
uberjar or class path served by the launcher and fetched over HTTP.  Also
the API artifact (only the documented classes) and an uberjar bundling
Clojure 1.11 (it runs on 1.11; two Clojures are refused).

Ring and friends resolve from Debian's /usr/share/maven-repo, the rest from
Maven Central; the tools' downloads are kept in build/projects (Maven's
repository, Leiningen's home, tools.deps compiled for deps-app's scripts),
so only a first run fetches them.  The
artifacts under test are installed there first by `make install-m2`.
"""

import os
import re
import shutil
import signal
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

from harness import ROOT, fake_clojure_jar, request
from test_launcher import launched
from test_layers import java_classes

EXAMPLES = ROOT / "examples"
PROJECTS = ROOT / "build" / "projects"
M2 = PROJECTS / "m2"
LAUNCHER = str(ROOT / "bin" / "nginx-jvm")
VERSION = re.search(r"^  <version>(.*)</version>",
                    (ROOT / "runtime" / "pom.xml").read_text(), re.M).group(1)
API_JAR = ROOT / "build" / "api" / ("nginx-jvm-api-%s.jar" % VERSION)
API_LIST = ROOT / "runtime" / "api" / "classes.txt"
# the docs a handler's author reads, where a class named is an API class
API_DOCS = ["handlers.md", "shared.md", "scale-out.md", "projects.md"]
BAD_LOG = re.compile(r"\[(error|crit|alert|emerg)\]")
# a build step's time limit: a first run downloads the tools' libraries
STEP_TIMEOUT = 900


def api_classes():
    return sorted(l.split("#")[0].strip() for l in API_LIST.read_text().splitlines()
                  if l.split("#")[0].strip())


@pytest.fixture(scope="module")
def base_env():
    """The environment of every build: the artifacts under test installed
    in build/projects/m2, Leiningen's home (its :local-repo) beside it, the
    launcher of this checkout."""
    for tool in ("lein", "mvn", "java"):
        assert shutil.which(tool), "%s is not installed: scripts/install-deps.sh" % tool
    PROJECTS.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["make", "-s", "--no-print-directory",
                        "-C", str(ROOT), "install-m2", "M2_REPO=%s" % M2],
                       capture_output=True, text=True, timeout=STEP_TIMEOUT)
    assert r.returncode == 0, r.stdout + r.stderr
    lein_home = PROJECTS / "lein"
    lein_home.mkdir(exist_ok=True)
    (lein_home / "profiles.clj").write_text('{:user {:local-repo "%s"}}\n' % M2)
    # XDG_CACHE_HOME: where deps-app's bin/classpath keeps tools.deps
    return dict(os.environ, LEIN_HOME=str(lein_home), M2_REPO=str(M2),
                XDG_CACHE_HOME=str(PROJECTS / "cache"), NGINX_JVM_LAUNCHER=LAUNCHER)


@pytest.fixture
def workdir(request, monkeypatch):
    """The test's own directory, build/projects/work/TEST, empty as it
    starts, which the workers (nobody, when started as root) can read; and
    the launcher's class cache for the servers the test and the projects'
    tests start, build/projects/classes/TEST.  Both are the same paths
    every run, and clean_copy keeps the files' times, so the class cache's
    keys (the class path's paths, sizes and times) are too: a later run
    finds the namespaces compiled and the classes archived by the first,
    and a fresh checkout builds them."""
    name = re.sub(r"\W+", "_", request.node.name).strip("_")
    d = PROJECTS / "work" / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    cache = PROJECTS / "classes" / name
    cache.mkdir(parents=True, exist_ok=True)
    for p in (PROJECTS, d.parent, d, cache.parent, cache):
        os.chmod(p, 0o755)
    monkeypatch.setenv("NGINX_JVM_CACHE", str(cache))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def env(base_env, workdir):
    return dict(base_env, NGINX_JVM_CACHE=os.environ["NGINX_JVM_CACHE"])


def clean_copy(name, workdir):
    """examples/NAME as a fresh checkout has it: nothing built."""
    dst = workdir / name
    shutil.copytree(EXAMPLES / name, dst,
                    ignore=shutil.ignore_patterns("target", ".cpcache"))
    return dst


def step(cmd, cwd, env):
    """Runs a build step; its output on failure.  Returns (output, seconds)."""
    t = time.monotonic()
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=STEP_TIMEOUT)
    took = time.monotonic() - t
    assert r.returncode == 0, "%s failed (%d):\n%s" % (" ".join(cmd), r.returncode,
                                                       r.stdout[-6000:])
    print("%s: %.1f s" % (" ".join(cmd), took))
    return r.stdout, took


def clojure_test_ran(out, at_least):
    m = re.search(r"Ran (\d+) tests containing (\d+) assertions\.\s+(\d+) failures, "
                  r"(\d+) errors\.", out)
    assert m, out[-3000:]
    assert int(m.group(1)) >= at_least and int(m.group(2)) > int(m.group(1))
    assert m.group(3) == "0" and m.group(4) == "0", out[-3000:]


# a location nginx answers itself, with the answering worker's pid
PID_LOCATION = ["--server", "location = /.pid { return 200 $pid; }"]


def every_worker_up(port, n):
    """Waits until n workers have answered (new connections, whichever
    worker takes each): a worker still starting its JVM cannot stop
    gracefully, and nginx kills it."""
    pids = set()
    deadline = time.monotonic() + 120
    while len(pids) < n and time.monotonic() < deadline:
        pids.add(request(port, "GET", "/.pid").body)
        time.sleep(0.02)
    assert len(pids) == n, pids


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    err = proc.stderr.read().decode()
    assert not BAD_LOG.search(err), err
    return err


# What a handler sees of Clojure on its class path: its version, every
# clojure/core__init.class its class loader finds (one per Clojure jar, a
# shadowed one included) and the class path's entries named like a Clojure
# jar.  Served beside the application at /.clojures.
PROBE = r"""(ns probe.clojures
  (:require [clojure.string :as str]))

(defn handler [_]
  (let [loader (clojure.lang.RT/baseLoader)
        found (enumeration-seq (.getResources loader "clojure/core__init.class"))
        named (filter #(re-find #"/clojure[-.][^/]*jar$" %)
                      (str/split (System/getProperty "java.class.path") #":"))]
    {:status 200
     :headers {"Content-Type" "text/plain"}
     :body (str/join "\n" (concat [(clojure-version) (count found)
                                    ;; a jar only ring-core.jar's manifest names
                                    (str "fileupload " (some? (.getResource loader
                                      "org/apache/commons/fileupload/FileUpload.class")))]
                                   (map str found) named))}))
"""
PROBE_LOCATION = ["--server", "location = /.clojures { jvm_content probe.clojures/handler; }"]


def probe_dir(workdir):
    """A class path directory holding the probe's namespace."""
    d = workdir / "probe"
    (d / "probe").mkdir(parents=True, exist_ok=True)
    (d / "probe" / "clojures.clj").write_text(PROBE)
    # the same time every run: a key of the class cache
    os.utime(d / "probe" / "clojures.clj", (1700000000, 1700000000))
    os.chmod(d, 0o755)
    os.chmod(d / "probe", 0o755)
    return d


def one_clojure(port, version):
    """The handler's Clojure is VERSION and the only one its class loader
    finds: no second Clojure, shadowed or not (Debian's clojure.jar, which
    the manifests of Debian's Ring jars name)."""
    lines = request(port, "GET", "/.clojures").body.decode().split("\n")
    assert lines[0].startswith(version) and lines[1] == "1", lines
    assert not [l for l in lines if "/usr/share/java/clojure" in l], lines
    return lines


def served_ring_app(args, greeting, clojure="1.12", probe=None):
    """The example Ring app served by the launcher with ARGS: its pages
    over HTTP, the counter shared by two workers, a session kept; with a
    PROBE directory, the one Clojure it runs on."""
    if probe:
        args = list(args)
        if "--classpath" in args:       # one --classpath: the last counts
            i = args.index("--classpath") + 1
            args[i] += ":%s" % probe
        else:
            args += ["--classpath", str(probe)]
        args += PROBE_LOCATION
    t = time.monotonic()
    with launched(["--handler", "app.core/handler", "--workers", "2",
                   "--shared-dict", "app:1m", "--shared-dict", "sessions:1m"]
                  + PID_LOCATION + args) as (proc, port, first):
        assert first.status == 200
        every_worker_up(port, 2)
        if probe:
            one_clojure(port, clojure)
        body = first.body.decode()
        assert body.startswith("%s, on Clojure %s" % (greeting, clojure)), body
        # a new connection each time: either worker; one count
        counts = [int(request(port, "GET", "/hits").body) for _ in range(12)]
        assert counts == list(range(1, 13))
        r = request(port, "GET", "/visits")
        cookie = r.header("Set-Cookie").split(";")[0]
        assert cookie.startswith("ring-session=") and r.body == b"1\n"
        for n in (2, 3):
            r = request(port, "GET", "/visits", headers={"Cookie": cookie})
            assert r.body == b"%d\n" % n
        assert request(port, "GET", "/none").status == 404
        stop(proc)
    print("served %s: %.1f s" % (" ".join(args)[:100], time.monotonic() - t))
    return body


def test_leiningen_project(env, workdir):
    """lein test (its tests against a real nginx-jvm), lein uberjar, then
    nginx-jvm run --jar target/app-standalone.jar: on the Clojure 1.12 the
    uberjar bundles, nothing of nginx-jvm inside it."""
    app = clean_copy("lein-app", workdir)
    out, _ = step(["lein", "test"], app, env)
    clojure_test_ran(out, 4)
    step(["lein", "uberjar"], app, env)
    jar = app / "target" / "app-standalone.jar"
    names = zipfile.ZipFile(jar).namelist()
    assert "clojure/main.class" in names and "ring/middleware/session.clj" in names
    assert not [n for n in names if n.startswith("nginx/")], "the API is provided, not bundled"
    probe = probe_dir(workdir)
    served_ring_app(["--jar", str(jar)], "Hello from a Leiningen project", probe=probe)
    # the class path nginx-jvm dev is given: Ring from Debian's Maven
    # repository (copied into the local one), whose jars' manifests name
    # Debian's Clojure 1.11
    out, _ = step(["lein", "classpath"], app, env)
    cp = out.strip().splitlines()[-1]
    ring = [e for e in cp.split(":") if e.endswith("/ring-core-1.8.2.jar")]
    assert ring and "/clojure-1.12.0.jar" in cp, cp
    manifest = zipfile.ZipFile(ring[0]).read("META-INF/MANIFEST.MF").decode()
    assert "/usr/share/java/clojure.jar" in re.sub(r"\r?\n ", "", manifest), manifest
    served_ring_app(["--classpath", cp], "Hello from a Leiningen project", probe=probe)


def test_deps_edn_project(env, workdir):
    """bin/test (clojure.test with the :test alias's class path), the class
    path tools.deps computes served as it is, then tools.build's uberjar."""
    app = clean_copy("deps-app", workdir)
    out, _ = step(["bin/test"], app, env)
    clojure_test_ran(out, 3)
    r = subprocess.run(["bin/classpath"], cwd=app, env=env, capture_output=True,
                       text=True, timeout=STEP_TIMEOUT)
    assert r.returncode == 0, r.stderr
    cp = r.stdout
    entries = cp.split(":")
    assert "src" in entries and not [e for e in entries if "nginx-jvm-" in e], cp
    served_ring_app(["--classpath", ":".join(str(app / e) if not e.startswith("/") else e
                                             for e in entries)],
                    "Hello from a deps.edn project", probe=probe_dir(workdir))
    step(["bin/uberjar"], app, env)
    jar = app / "target" / "app-standalone.jar"
    names = zipfile.ZipFile(jar).namelist()
    assert "clojure/main.class" in names and "app/core.clj" in names
    assert not [n for n in names if n.startswith("nginx/")]
    served_ring_app(["--jar", str(jar)], "Hello from a deps.edn project",
                    probe=probe_dir(workdir))


def test_maven_project(env, workdir):
    """mvn package (JUnit 5 tests through @NginxJvmTest against a real
    nginx-jvm), then nginx-jvm run --jar target/app.jar: a Java handler,
    no Clojure on its class path."""
    app = clean_copy("maven-app", workdir)
    step(["mvn", "-B", "-q", "-Dmaven.repo.local=%s" % M2, "package"], app, env)
    report = (app / "target" / "surefire-reports" / "com.example.HelloTest.txt").read_text()
    m = re.search(r"Tests run: (\d+), Failures: 0, Errors: 0, Skipped: 0", report)
    assert m and int(m.group(1)) >= 3, report
    jar = app / "target" / "app.jar"
    assert "com/example/Hello.class" in zipfile.ZipFile(jar).namelist()
    with launched(["--handler", "com.example.Hello", "--jar", str(jar), "--workers", "2",
                   "--shared-dict", "app:1m"] + PID_LOCATION, path="/") as (proc, port, first):
        every_worker_up(port, 2)
        assert first.body == b"Hello from a Maven project, GET /\n"
        assert [int(request(port, "GET", "/hits").body) for _ in range(6)] == list(range(1, 7))
        assert request(port, "GET", "/x").status == 404
        stop(proc)
    # the launcher added no Clojure for a Java handler
    r = subprocess.run([LAUNCHER, "run", "--print-config", "--handler", "com.example.Hello",
                        "--jar", str(jar)], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "/lib/*" not in r.stdout, r.stdout + r.stderr


def test_an_uberjar_bundling_clojure_1_11_runs_on_it(env, workdir):
    """The Leiningen example built with Clojure 1.11 (Maven Central): the
    launcher adds no Clojure of its own, so (clojure-version) is the
    uberjar's; a second Clojure on the class path is refused, naming both."""
    app = clean_copy("lein-app", workdir)
    project = app / "project.clj"
    text = project.read_text()
    assert '[org.clojure/clojure "1.12.0"]' in text
    project.write_text(text.replace('[org.clojure/clojure "1.12.0"]',
                                    '[org.clojure/clojure "1.11.4"]'))
    step(["lein", "uberjar"], app, env)
    jar = app / "target" / "app-standalone.jar"
    assert zipfile.ZipFile(jar).read("clojure/version.properties").startswith(b"version=1.11.4")
    r = subprocess.run([LAUNCHER, "run", "--print-config", "--handler", "app.core/handler",
                        "--jar", str(jar)], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    assert "/lib/*" not in r.stdout, "the launcher's Clojure beside the uberjar's"
    body = served_ring_app(["--jar", str(jar)], "Hello from a Leiningen project",
                           clojure="1.11.4")
    assert "1.11.4" in body
    other = sorted((ROOT / "build" / "lib").glob("clojure-1.*.jar"))[0]
    r = subprocess.run([LAUNCHER, "run", "--print-config", "--handler", "app.core/handler",
                        "--jar", str(jar), "--classpath", str(other)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2
    assert "2 Clojures" in r.stderr and "1.11.4, in %s" % jar in r.stderr, r.stderr
    assert str(other) in r.stderr


@pytest.mark.parametrize("after", [False, True], ids=["launchers", "after-ring"])
def test_debians_ring_jars_bring_no_second_clojure(workdir, after):
    """Debian's ring-core.jar names /usr/share/java/clojure.jar (Clojure
    1.11) in its manifest's Class-Path, which the JVM opens right after it:
    a second Clojure beside the launcher's, and the one that runs when the
    class path's own Clojure comes after the Ring jar.  The launcher serves
    such a jar unpacked, the other jars its manifests name (commons-fileupload
    here) after it: one Clojure, 1.12."""
    cp = [str(probe_dir(workdir)), "/usr/share/java/ring-core.jar"]
    if after:
        cp += [str(j) for j in sorted((ROOT / "build" / "lib").glob("*.jar"))]
    with launched(["--handler", "probe.clojures/handler", "--classpath", ":".join(cp),
                   "--workers", "1"],
                  path="/.clojures") as (proc, port, first):
        lines = one_clojure(port, "1.12")
        assert "fileupload true" in lines, lines
        stop(proc)
    r = subprocess.run([LAUNCHER, "run", "--print-config", "--handler", "probe.clojures/handler",
                        "--classpath", ":".join(cp)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "/usr/share/java/ring-core.jar" not in r.stdout and "-ring-core\"" in r.stdout
    assert "/usr/share/java/commons-fileupload.jar" in r.stdout


@pytest.mark.parametrize("version, warned", [("1.12.3", False), ("1.11.1", False),
                                              ("1.10.3", True), ("1.13.0-alpha1", True)])
def test_the_launcher_says_which_clojures_it_supports(workdir, version, warned):
    jar = fake_clojure_jar(workdir / "app-standalone.jar", version)
    r = subprocess.run([LAUNCHER, "run", "--print-config", "--handler", "app.core/handler",
                        "--jar", str(jar)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "/lib/*" not in r.stdout and str(jar) in r.stdout
    if warned:
        assert ("holds Clojure %s: nginx-jvm supports\nClojure 1.11 and 1.12" % version
                in r.stderr), r.stderr
        assert "is not tested" in r.stderr
    else:
        assert r.stderr == ""


def test_a_jar_without_clojure_gets_the_launchers(workdir):
    """An application jar of classes alone (a lein jar, mvn package): the
    launcher's Clojure 1.12 goes first, as for a --classpath."""
    jar = workdir / "app.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("app/core.clj", "(ns app.core)\n")
        # a name that only mentions Clojure is not Clojure
        z.writestr("docs/clojure/main.class.txt", "")
    r = subprocess.run([LAUNCHER, "run", "--print-config", "--handler", "app.core/handler",
                        "--jar", str(jar)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cp = r.stdout[r.stdout.index("jvm_classpath"):]
    assert cp.index("/lib/*") < cp.index(str(jar))


@pytest.mark.parametrize("args, message", [
    (["--jar", "/nonexistent/app.jar"], "--jar /nonexistent/app.jar: not a readable file"),
    (["--jar", "/etc/hostname"], "not a .jar file"),
])
def test_bad_jars_are_refused(args, message):
    r = subprocess.run([LAUNCHER, "run", "--handler", "a.b/c"] + args,
                       capture_output=True, text=True)
    assert r.returncode == 2 and message in r.stderr, r.stderr


# --- the API artifact --------------------------------------------------------

def test_the_public_classes_are_the_documented_api():
    """Every public class of package nginx.jvm is in runtime/api/classes.txt,
    and every class there is public: an internal class made public fails
    here (make it package-private, or document it and list it)."""
    public = sorted(c for c, (pub, _) in java_classes().items() if pub)
    assert public == api_classes()


def test_the_api_jar_holds_the_api_and_nothing_internal():
    assert API_JAR.exists(), "make api"
    names = zipfile.ZipFile(API_JAR).namelist()
    classes = [n for n in names if n.endswith(".class")]
    top = sorted({n[len("nginx/jvm/"):-len(".class")].split("$")[0] for n in classes})
    assert top == api_classes()
    assert all(n.startswith("nginx/jvm/") and n.count("/") == 2 for n in classes), \
        "another package's classes: %s" % [n for n in classes if n.count("/") != 2]
    internal = sorted(c for c, (pub, _) in java_classes().items() if not pub)
    assert internal and not set(internal) & set(top)
    assert not [n for n in names if n.startswith("META-INF/services/")]
    # the Clojure namespaces a handler requires, as source
    for ns in ("shared", "session", "timers", "request", "redis", "server"):
        assert "nginx/jvm/%s.clj" % ns in names
    pom = zipfile.ZipFile(API_JAR).read(
        "META-INF/maven/org.nginx-jvm/nginx-jvm-api/pom.properties").decode()
    assert "version=%s" % VERSION in pom


def test_the_api_comes_with_sources_javadoc_and_pom():
    base = API_JAR.parent
    for artifact in ("nginx-jvm-api", "nginx-jvm-test"):
        pom = (base / ("%s-%s.pom" % (artifact, VERSION))).read_text()
        assert "<groupId>org.nginx-jvm</groupId>" in pom
        assert "<artifactId>%s</artifactId>" % artifact in pom
        assert "<version>%s</version>" % VERSION in pom
        sources = zipfile.ZipFile(base / ("%s-%s-sources.jar" % (artifact, VERSION))).namelist()
        javadoc = zipfile.ZipFile(base / ("%s-%s-javadoc.jar" % (artifact, VERSION))).namelist()
        assert "index.html" in javadoc
        if artifact == "nginx-jvm-api":
            assert sorted(n[len("nginx/jvm/"):-5] for n in sources
                          if n.endswith(".java")) == api_classes()
            assert sorted(n[len("nginx/jvm/"):-5] for n in javadoc
                          if re.fullmatch(r"nginx/jvm/[A-Z]\w*\.html", n)) == api_classes()
        else:
            assert "nginx/jvm/testing.clj" in sources
            assert "nginx/jvm/testing/NginxJvmExtension.java" in sources


def test_the_docs_name_only_api_classes_and_every_one():
    """The handler author's docs: a class nginx.jvm.X they name is in the
    API (unless run as a program of the runtime jar: java -cp nginx-jvm.jar
    nginx.jvm.X), and docs/projects.md lists every API class."""
    api = set(api_classes())
    lacking = []
    for doc in API_DOCS:
        text = (ROOT / "docs" / doc).read_text()
        for m in re.finditer(r"nginx\.jvm\.([A-Z]\w*)", text):
            before = re.sub(r"\s+", " ", text[max(0, m.start() - 40):m.start()])
            if m.group(1) not in api and not before.endswith("nginx-jvm.jar "):
                lacking.append("%s: nginx.jvm.%s" % (doc, m.group(1)))
    assert not lacking, "docs name classes the API lacks: %s" % lacking
    projects = (ROOT / "docs" / "projects.md").read_text()
    missing = [c for c in api_classes() if "`%s`" % c not in projects]
    assert not missing, "docs/projects.md does not list %s" % missing
