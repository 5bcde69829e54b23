"""The container image (`make image`): built with podman from a Debian 13
root made locally with mmdebstrap (no registry pull), run as its README
says (`podman run -p PORT:8080 -v APP:/app IMAGE --handler ... --classpath
/app/...`) with a Ring handler mounted from here, a page fetched over
loopback, then stopped and removed by its container id; an unmodified
Spring Boot jar (`--jar`, examples/servlet-boot) the same way; and `IMAGE dev`,
the development loop of docs/operations.md ("A development loop on any
laptop"): a save on the host served by both workers, the REPL and the
debugger through published ports.

podman runs with the project's configuration (scripts/podman.sh: runc,
no default ulimits, its storage in build/podman).  Skipped, saying why,
only where podman cannot run a container.  `make test-image` runs this
file; the first build makes the root (mmdebstrap, a few minutes).
"""

import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request

import pytest

from harness import PROBLEM, ROOT, free_port, free_port_range, maven_package, request
from test_dev import Jdb
from test_repl import Repl

PODMAN = str(ROOT / "scripts" / "podman.sh")
IMAGE = "localhost/nginx-jvm:latest"


def podman(*args, check=True, timeout=120):
    r = subprocess.run([PODMAN] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, r.stdout
    return r


def podman_cannot_run():
    """Why podman cannot run a container here, or None."""
    if os.geteuid() != 0:
        return "the image is built and run by root's podman (mmdebstrap makes its base)"
    if not shutil.which("podman"):
        # `make image` installs it (scripts/install-deps.sh roots)
        return None if shutil.which("apt-get") else "no podman, and no apt-get to install it"
    r = subprocess.run([PODMAN, "info"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    if r.returncode != 0:
        return "podman cannot run here: " + r.stdout.strip().splitlines()[-1]
    return None


WHY = podman_cannot_run()
pytestmark = pytest.mark.skipif(WHY is not None, reason=str(WHY))

APP = """\
(ns my.app
  "A Ring handler mounted into the image at /app.")

(defn handler [request]
  {:status 200
   :headers {"Content-Type" "text/plain"}
   :body (str "hello from the image: " (:request-method request) " "
              (:uri request) " on Java " (System/getProperty "java.version")
              " as " (System/getProperty "user.name"))})
"""


@pytest.fixture(scope="module")
def image():
    """`make image`: its name and size (the last line)."""
    started = time.monotonic()
    r = subprocess.run(["make", "-s", "--no-print-directory",
                        "image"], cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=3600)
    assert r.returncode == 0, r.stdout
    last = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout.strip().splitlines()[-1])
    m = re.match(r"^(\S+) (\d+) MB$", last)
    assert m and m.group(1) == IMAGE, r.stdout
    print("\nimage %s: %s MB, made in %.0f s" % (m.group(1), m.group(2),
                                                time.monotonic() - started))
    return m.group(1)


def test_image_is_debian_13_with_its_nginx_and_jre(image):
    r = podman("run", "--rm", "--network=none", "--entrypoint", "/bin/sh", image,
               "-c", "cat /etc/debian_version; nginx -v 2>&1; id -un; "
               "java -version 2>&1 | head -1; "
               "dpkg-query -W -f='${Status}' libnginx-mod-http-jvm")
    lines = r.stdout.splitlines()
    assert lines[0].startswith("13."), r.stdout
    assert lines[1] == "nginx version: nginx/1.26.3", r.stdout
    assert lines[2] == "www-data", r.stdout
    assert '"21.' in lines[3], r.stdout
    assert lines[4] == "install ok installed", r.stdout
    # made here, from the mmdebstrap root: no registry in its history
    hist = podman("image", "inspect", "--format", "{{.NamesHistory}}", image).stdout
    assert "docker.io" not in hist and "quay.io" not in hist, hist


def first_answer(cid, url, seconds):
    """The body of the first 200 the container `cid` answers at `url`,
    asked until it does (its JVMs start) within `seconds`, or None; fails
    at once if the container stops."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = podman("inspect", "--format", "{{.State.Running}}", cid).stdout.strip()
        assert state == "true", podman("logs", cid, check=False).stdout
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                assert resp.status == 200
                return resp.read().decode()
        except OSError:
            time.sleep(0.5)
    return None


def test_image_serves_a_mounted_ring_handler(image, tmp_path):
    app = tmp_path / "app"
    (app / "src" / "my").mkdir(parents=True)
    (app / "src" / "my" / "app.clj").write_text(APP)
    os.chmod(tmp_path, 0o755)
    port = free_port()
    r = podman("run", "-d", "-p", "127.0.0.1:%d:8080" % port,
               "-v", "%s:/app:ro" % app, image,
               "--handler", "my.app/handler", "--classpath", "/app/src",
               "--workers", "2")
    cid = r.stdout.strip().splitlines()[-1]
    assert re.match(r"^[0-9a-f]{64}$", cid), r.stdout
    try:
        body = first_answer(cid, "http://127.0.0.1:%d/hello?x=1" % port, 180)
        logs = podman("logs", cid, check=False).stdout
        assert body is not None, logs
        assert body.startswith("hello from the image: :get /hello on Java 21."), body
        assert body.endswith(" as www-data"), body
        # nginx's master and its workers, none of them root (a worker has
        # its title once its JVM has started: the second may be starting)
        def processes():
            top = podman("top", cid, "user", "args").stdout.splitlines()[1:]
            return [l.split(None, 1) for l in top]
        deadline = time.monotonic() + 60
        while len([a for u, a in processes() if a.startswith("nginx: worker process")]) < 2:
            assert time.monotonic() < deadline, processes()
            time.sleep(0.5)
        top = processes()
        assert [a for u, a in top if a.startswith("nginx: master process")], top
        assert all(u == "www-data" for u, a in top), top
        assert not [l for l in logs.splitlines() if PROBLEM.search(l)], logs
    finally:
        podman("stop", "-t", "10", cid, check=False)
        podman("rm", "-f", cid, check=False)
    assert podman("ps", "-a", "-q", "--filter", "id=" + cid).stdout.strip() == ""


def boot_jar():
    """examples/servlet-boot's jar (the Tomcat starter): the one
    tests/test_servlet_boot.py built in this `make test`, if it is newer
    than the example's sources, else built here."""
    example = ROOT / "examples" / "servlet-boot"
    made = ROOT / "build" / "servlet-boot" / "target" / "servlet-boot.jar"
    sources = max(p.stat().st_mtime for p in example.rglob("*")
                  if p.is_file() and "target" not in p.parts)
    if made.is_file() and made.stat().st_mtime >= sources:
        return made
    return maven_package(example, ROOT / "build" / "servlet-boot-image",
                         "servlet-boot.jar", m2=ROOT / "build" / "projects" / "m2")


def test_image_serves_an_unmodified_spring_boot_jar(image, tmp_path):
    """`run --jar`, as docs/servlet.md says for a Spring Boot executable
    jar: the package's servlet seam jars are in the image; a session made
    on one connection is there on the next (2 workers, the shared store)."""
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(boot_jar(), app / "app.jar")
    os.chmod(tmp_path, 0o755)
    os.chmod(app, 0o755)
    os.chmod(app / "app.jar", 0o644)
    port = free_port()
    r = podman("run", "-d", "-p", "127.0.0.1:%d:8080" % port,
               "-v", "%s:/app:ro" % app, image, "--jar", "/app/app.jar",
               "--workers", "2")
    cid = r.stdout.strip().splitlines()[-1]
    assert re.match(r"^[0-9a-f]{64}$", cid), r.stdout
    try:
        body = first_answer(cid, "http://127.0.0.1:%d/hello?name=image" % port, 300)
        assert body is not None, podman("logs", cid, check=False).stdout
        assert body.endswith(", image!"), body
        # each request on a new connection: either worker may take it
        first = request(port, "GET", "/count", timeout=30)
        assert first.status == 200 and first.text.startswith("count 1, pid "), first
        cookie = first.header("Set-Cookie").split(";")[0]
        for n in range(2, 6):
            r = request(port, "GET", "/count", headers={"Cookie": cookie}, timeout=30)
            assert r.status == 200 and r.text.startswith("count %d, pid " % n), r
        # the application's own Tomcat never listened: its connector is ours
        logs = podman("logs", cid, check=False).stdout
        assert re.search(r"Tomcat started on port -1 \(http\)", logs), logs
        assert not [l for l in logs.splitlines() if PROBLEM.search(l)], logs
    finally:
        podman("stop", "-t", "10", cid, check=False)
        podman("rm", "-f", cid, check=False)
    assert podman("ps", "-a", "-q", "--filter", "id=" + cid).stdout.strip() == ""


# --- dev: the development loop of a laptop with podman or Docker Desktop -----

DEV_UTIL = """(ns devtest.util)
(defn version [] "%s")
"""

DEV_APP = """(ns devtest.app
  (:require [devtest.util :as u]))
(defn handler [req]
  {:status 200 :headers {"content-type" "text/plain"}
   :body (str (u/version) " " (.pid (java.lang.ProcessHandle/current)))})
"""


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)


@pytest.fixture(scope="module")
def dev_app():
    """Sources on the host, bind-mounted at /app (readable by www-data)."""
    top = tempfile.mkdtemp(prefix="nginx-jvm-image-dev-")
    src = os.path.join(top, "src", "devtest")
    os.makedirs(src)
    for d in (top, os.path.dirname(src), src):
        os.chmod(d, 0o755)
    write(os.path.join(src, "util.clj"), DEV_UTIL % "v1")
    write(os.path.join(src, "app.clj"), DEV_APP)
    yield top
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="module")
def cache_volume(image):
    """A named volume for the class cache, removed afterwards."""
    name = "nginx-jvm-test-cache-%d" % os.getpid()
    podman("volume", "rm", "-f", name, check=False)
    yield name
    podman("volume", "rm", "-f", name, check=False)


class Dev:
    """`podman run ... IMAGE dev ...` with 2 workers, --repl 7000 and
    --debug 5005, each port published on the host's 127.0.0.1."""

    def __init__(self, image, app, volume):
        self.port, self.repl, self.debug = free_port(), free_port_range(2), \
            free_port_range(2)
        publish = ["-p", "127.0.0.1:%d:8080" % self.port]
        for base, inside in ((self.repl, 7000), (self.debug, 5005)):
            for w in (0, 1):
                publish += ["-p", "127.0.0.1:%d:%d" % (base + w, inside + w)]
        self.started = time.monotonic()
        r = podman("run", "-d", *publish, "-v", "%s:/app:ro" % app,
                   "-v", "%s:/var/cache/nginx-jvm" % volume, image,
                   "dev", "--handler", "devtest.app/handler",
                   "--classpath", "/app/src", "--workers", "2",
                   "--reuseport", "--repl", "7000", "--debug", "5005")
        self.cid = r.stdout.strip().splitlines()[-1]
        assert re.match(r"^[0-9a-f]{64}$", self.cid), r.stdout

    def logs(self):
        return podman("logs", self.cid, check=False).stdout

    def versions(self, timeout):
        """{worker pid: its version} once both workers answered, each on
        a new connection, and the seconds that took (None: not both)."""
        started = time.monotonic()
        seen = {}
        while time.monotonic() - started < timeout:
            try:
                r = request(self.port, "GET", "/", timeout=5)
            except OSError:
                state = podman("inspect", "--format", "{{.State.Running}}",
                               self.cid).stdout.strip()
                assert state == "true", self.logs()
                time.sleep(0.05)
                continue
            assert r.status == 200, r.text
            version, _, pid = r.text.partition(" ")
            seen[int(pid)] = version
            if len(seen) == 2:
                return seen, time.monotonic() - started
        return None, timeout

    def save_served(self, path, text, pids):
        """Writes text to path on the host: {pid: seconds until that worker
        served it}, each of pids within 10 s."""
        saved = time.monotonic()
        write(path, text)
        version = re.search(r'"(\w+)"', text).group(1)
        served = {}
        while len(served) < len(pids) and time.monotonic() - saved < 10:
            r = request(self.port, "GET", "/", timeout=5)
            v, _, pid = r.text.partition(" ")
            if v == version:
                served.setdefault(int(pid), time.monotonic() - saved)
        assert set(served) == set(pids), (served, self.logs())
        return served

    def check_logs(self):
        logs = self.logs()
        assert not [l for l in logs.splitlines() if PROBLEM.search(l)], logs
        # the JVM said nothing of the class data sharing archive (it says
        # why when it cannot map one)
        assert "[cds" not in logs and "shared archive" not in logs, logs
        return logs

    def stop(self):
        podman("stop", "-t", "10", self.cid, check=False)
        podman("rm", "-f", self.cid, check=False)
        assert podman("ps", "-a", "-q", "--filter",
                      "id=" + self.cid).stdout.strip() == ""


def test_image_dev_serves_a_save_and_publishes_its_repl_and_debugger(
        image, dev_app, cache_volume):
    """`podman run ... IMAGE dev`: a save on the host is served by both
    workers within 1 s (the watcher polls: a bind mount of a VM's file
    sharing sends no inotify events); the REPL evaluates and jdb attaches
    through ports published on the host's 127.0.0.1.  The class cache's
    volume, empty at the first start, holds the archive of the jars'
    classes after it, which the second start maps; a save is served as
    before."""
    util = os.path.join(dev_app, "src", "devtest", "util.clj")
    write(util, DEV_UTIL % "v1")
    podman("volume", "rm", "-f", cache_volume, check=False)
    d = Dev(image, dev_app, cache_volume)
    try:
        seen, _ = d.versions(180)
        assert seen and set(seen.values()) == {"v1"}, d.logs()
        first = time.monotonic() - d.started
        served = d.save_served(util, DEV_UTIL % "v2", seen)
        print("\ndev in the image, first start: both workers answered %.1f s "
              "after podman run; a save served by both after %.3f s"
              % (first, max(served.values())))
        assert max(served.values()) < 1.0, served

        # the REPL of each worker, through the published ports
        pids = set()
        for w in (0, 1):
            repl = Repl(d.repl + w)
            try:
                assert repl.eval("(+ 1 2)") == "3"
                assert repl.eval("(devtest.util/version)") == '"v2"'
                pids.add(int(repl.eval(
                    "(.pid (java.lang.ProcessHandle/current))")))
            finally:
                repl.close()
        assert pids == set(seen)

        # jdb, attached to worker 1 through its published port
        jdb = Jdb(d.debug + 1)
        try:
            jdb.expect(r"Initializing jdb")
            jdb.send("threads")
            jdb.expect(r"Reference Handler")
        finally:
            jdb.close()
        assert request(d.port, "GET", "/", timeout=5).status == 200

        logs = d.check_logs()
        assert re.search(r"dev: watching /app/src; REPL on 0\.0\.0\.0:7000; "
                         r"JDWP on 0\.0\.0\.0:5005", logs), logs
        assert "dev: archiving the jars' classes into " \
            "/var/cache/nginx-jvm/dev/" in logs, logs
    finally:
        d.stop()

    # the second start, on the same volume
    archives = podman("run", "--rm", "--network=none", "-v",
                      "%s:/c" % cache_volume, "--entrypoint", "/bin/ls",
                      image, "/c/dev").stdout.split()
    assert len(archives) == 1 and archives[0].endswith(".jsa"), archives
    d = Dev(image, dev_app, cache_volume)
    try:
        seen, _ = d.versions(180)
        assert seen and set(seen.values()) == {"v2"}, d.logs()
        second = time.monotonic() - d.started
        repl = Repl(d.repl)
        try:
            args = repl.eval("(str (.getInputArguments (java.lang.management."
                             "ManagementFactory/getRuntimeMXBean)))")
        finally:
            repl.close()
        assert "-XX:SharedArchiveFile=/var/cache/nginx-jvm/dev/%s" \
            % archives[0] in args, args
        served = d.save_served(util, DEV_UTIL % "v3", seen)
        print("second start: both workers answered %.1f s after podman run "
              "(the first: %.1f s); a save served by both after %.3f s"
              % (second, first, max(served.values())))
        assert max(served.values()) < 1.0, served
        logs = d.check_logs()
        assert "archiving" not in logs, logs
    finally:
        d.stop()


@pytest.mark.parametrize("word", ["", "run", "dev"])
def test_image_entry_point_words(image, word):
    """The first word, run (also when left out) or dev, picks the command;
    the rest are the launcher's, after --listen 0.0.0.0 --port 8080."""
    r = podman("run", "--rm", "--network=none", image,
               *([word] if word else []), "--handler", "devtest.app/handler",
               "--classpath", "/tmp", "--repl", "7000", "--debug",
               "127.0.0.1:5005", "--print-config")
    conf = r.stdout
    assert "# Written by bin/nginx-jvm (%s)." % (word or "run") in conf, conf
    assert "listen 0.0.0.0:8080 " in conf, conf
    # dev's REPL on all the container's addresses unless one is given
    assert ("jvm_repl 0.0.0.0:7000;" if word == "dev"
            else "jvm_repl 7000;") in conf, conf
    assert "address=127.0.0.1:%{5005+w}" in conf, conf
