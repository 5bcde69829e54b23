"""The Debian package (`make deb`): installed with apt into a clean state,
serving the notes example through the system's nginx (as its service runs
it: Debian's prefix, modules-enabled, workers as www-data) and the hello
example through the launcher on PATH, then removed and purged without a
trace.

It changes the machine it runs on, so it runs only as root with apt, and
always purges what it installed. It never touches a running nginx service:
its nginx has its own configuration, pid file, logs and loopback port.
"""

import fcntl
import os
import re
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness import NGINX, RING_JARS, ROOT, Launcher, Nginx, walk_notes

PACKAGE = "libnginx-mod-http-jvm"
MODULE = Path("/usr/lib/nginx/modules/ngx_http_jvm_module.so")
SNIPPET = Path("/usr/share/nginx/modules-available/mod-http-jvm.conf")
LINK = Path("/etc/nginx/modules-enabled/50-mod-http-jvm.conf")
REMOVED_LINK = Path(str(LINK) + ".removed")
SHARE = Path("/usr/share/nginx-jvm")
LAUNCHER = Path("/usr/bin/nginx-jvm")
DOC = Path("/usr/share/doc") / PACKAGE
CACHE = Path("/var/cache/nginx-jvm")   # the launcher's, as root
# the artifacts projects build against (docs/projects.md), as Debian's Java
# libraries are installed
JAVA = Path("/usr/share/java")
MAVEN_REPO = Path("/usr/share/maven-repo/org/nginx-jvm")
VERSION = re.search(r"^  <version>(.*)</version>",
                    (ROOT / "runtime" / "pom.xml").read_text(), re.M).group(1)

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("apt-get")
    or not shutil.which("dpkg-deb"),
    reason="installs a Debian package: needs root, apt-get and dpkg-deb")


def apt_get(*args):
    r = subprocess.run(
        ["apt-get", "-y", "-q", "--no-install-recommends",
         "-o", "DPkg::Lock::Timeout=120"] + list(args),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=300, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    assert r.returncode == 0, r.stdout
    return r.stdout


def status():
    """dpkg's status of the package: "ii" installed, "rc" removed with its
    configuration, "" unknown (purged)."""
    r = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}",
                        PACKAGE], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return r.stdout.strip() if r.returncode == 0 else ""


def present(*paths):
    return [str(p) for p in paths if p.exists() or p.is_symlink()]


def process_user(pid):
    with open("/proc/%d/status" % pid) as f:
        uid = next(l for l in f if l.startswith("Uid:")).split()[1]
    return pwd.getpwuid(int(uid)).pw_name


def system_config_test():
    """`nginx -t` of the machine's own /etc/nginx/nginx.conf."""
    return subprocess.run([NGINX, "-t", "-q"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=60)


PACKAGE_PATHS = (MODULE, SNIPPET, LINK, REMOVED_LINK, SHARE, LAUNCHER, DOC, MAVEN_REPO,
                 JAVA / "nginx-jvm-api.jar", JAVA / "nginx-jvm-test.jar")


@pytest.fixture(scope="module")
def machine_lock():
    """One run of these tests at a time on a machine (worktrees share it)."""
    with open("/run/lock/nginx-jvm-test-deb.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="module")
def deb(machine_lock):
    """`make deb`, then the package installed into a clean state; purged
    at the end whatever happens."""
    r = subprocess.run(["make", "-s", "--no-print-directory",
                        "deb"], cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    assert r.returncode == 0, r.stdout
    # the last line, without the colour resets Maven writes when it rebuilds
    path = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout.strip().splitlines()[-1])
    assert path.endswith(".deb") and os.path.isfile(path), r.stdout
    if status():
        apt_get("purge", PACKAGE)
    assert not present(*PACKAGE_PATHS), "not a clean state"
    available_existed = SNIPPET.parent.exists()
    system_config_ok = system_config_test().returncode == 0
    try:
        apt_get("install", path)
        yield {"path": path, "available_existed": available_existed,
               "system_config_ok": system_config_ok}
    finally:
        if status():
            apt_get("purge", PACKAGE)


def test_installed_like_debians_module_packages(deb):
    assert status() == "ii"
    files = subprocess.run(["dpkg", "-L", PACKAGE], stdout=subprocess.PIPE,
                           text=True, check=True).stdout.split()
    for f in (MODULE, SNIPPET, SHARE / "nginx-jvm.jar", LAUNCHER,
              DOC / "copyright", DOC / "changelog.Debian.gz",
              DOC / "examples/notes/src/notes/core.clj",
              Path("/usr/share/man/man1/nginx-jvm.1.gz")):
        assert str(f) in files, f
        assert f.is_file()
    assert [p.name for p in (SHARE / "lib").glob("clojure-1.12*.jar")]
    assert SNIPPET.read_text() == "load_module modules/ngx_http_jvm_module.so;\n"
    # enabled through modules-enabled, as Debian's module packages are
    assert LINK.is_symlink() and os.readlink(LINK) == str(SNIPPET)
    assert os.access(LAUNCHER, os.X_OK)
    # the machine's nginx.conf loads the module too, and stays valid
    if deb["system_config_ok"]:
        r = system_config_test()
        assert r.returncode == 0, r.stdout
    # every file as the package shipped it
    r = subprocess.run(["dpkg", "--verify", PACKAGE], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0 and r.stdout == "", r.stdout


def test_depends_on_the_nginx_abi_and_a_jre(deb):
    provides = subprocess.run(["dpkg-query", "-W", "-f=${Provides}", "nginx"],
                              stdout=subprocess.PIPE, text=True,
                              check=True).stdout
    abi = [p.strip() for p in provides.split(",")
           if p.strip().startswith("nginx-abi-")]
    assert len(abi) == 1, provides
    depends = subprocess.run(["dpkg-deb", "-f", deb["path"], "Depends"],
                             stdout=subprocess.PIPE, text=True,
                             check=True).stdout
    fields = [d.strip() for d in depends.split(",")]
    assert abi[0] in fields
    assert "openjdk-17-jre-headless | java17-runtime-headless" in fields
    # the launcher reads jars' manifests with unzip
    assert "unzip" in fields, fields
    assert any(d.startswith("libc6 (>= ") for d in fields), fields


# --- the system's nginx -------------------------------------------------------

MAIN = """\
# As Debian's /etc/nginx/nginx.conf, with its own pid, logs and port.
user www-data;
worker_processes @WORKERS@;
pid @PREFIX@/nginx.pid;
error_log @PREFIX@/logs/error.log info;
include /etc/nginx/modules-enabled/*.conf;

events { worker_connections 64; }

http {
    include /etc/nginx/mime.types;
    access_log off;
    client_body_temp_path @PREFIX@/tmp/body;
    proxy_temp_path @PREFIX@/tmp/proxy;
    fastcgi_temp_path @PREFIX@/tmp/fastcgi;
    uwsgi_temp_path @PREFIX@/tmp/uwsgi;
    scgi_temp_path @PREFIX@/tmp/scgi;
@HTTP@
}
"""

# What a site file (/etc/nginx/sites-available/notes) holds: README.md
# shows the same.
NOTES_SITE = """
    jvm_classpath /usr/share/nginx-jvm/nginx-jvm.jar
                  /usr/share/nginx-jvm/lib/*
                  @RING@
                  @DOC@/examples/notes/src;
    jvm_shared_dict notes 1m;

    server {
        listen 127.0.0.1:@PORT@;

        location /static/ {
            alias @DOC@/examples/notes/public/;
        }

        location / {
            jvm_content notes.core/app;
        }
    }
"""


class SystemNginx(Nginx):
    """/usr/sbin/nginx run as Debian's service runs it: its default prefix
    (/usr/share/nginx, where modules/ leads to /usr/lib/nginx/modules), the
    modules of /etc/nginx/modules-enabled, workers as www-data. Its own
    files are in a temporary directory www-data may traverse."""

    def __init__(self, http, workers=1):
        self.own(tempfile.mkdtemp(prefix="nginx-jvm-deb-"), workers)
        os.chmod(self.prefix, 0o755)
        for d in ("logs", "tmp"):
            os.mkdir(os.path.join(self.prefix, d))
        text = MAIN.replace("@HTTP@", http)
        for key, value in (("@RING@", "\n                  ".join(RING_JARS)),
                           ("@DOC@", str(DOC)), ("@PREFIX@", self.prefix),
                           ("@WORKERS@", str(workers)),
                           ("@PORT@", str(self.port))):
            text = text.replace(key, value)
        with open(self.conf, "w") as f:
            f.write(text)
        Nginx.instances.append(self)

    def command(self):
        return [NGINX, "-e", self.log, "-c", self.conf]


def test_enabled_module_leaves_other_configs_alone(deb):
    """The link makes every nginx.conf that includes modules-enabled load
    the module: one without jvm_ directives is still valid, and starts no
    JVM."""
    n = SystemNginx("""
    server {
        listen 127.0.0.1:@PORT@;
        location / { return 200 "plain\\n"; }
    }
""")
    with n:
        assert n.get("/").text == "plain\n"
        worker = n.worker_pids()[0]
        with open("/proc/%d/maps" % worker) as f:
            maps = f.read()
        assert "ngx_http_jvm_module.so" in maps
        assert "libjvm.so" not in maps


def test_system_nginx_serves_the_notes_example(deb):
    with SystemNginx(NOTES_SITE) as n:
        assert all(process_user(p) == "www-data" for p in n.worker_pids())
        walk_notes(n, "Debian", "from apt", style=(
            DOC / "examples/notes/public/style.css").read_bytes())


# --- the launcher on PATH -------------------------------------------------------

def test_launcher_on_path_serves_a_handler(deb, tmp_path):
    assert shutil.which("nginx-jvm") == str(LAUNCHER)
    hello = DOC / "examples/hello"
    cp = ":".join([str(hello / "src")] + RING_JARS)
    args = ["--handler", "hello.core/app", "--classpath", cp,
            "--jvm-option", "-Dhello.root=%s" % hello]
    conf = subprocess.run(["nginx-jvm", "run"] + args + ["--print-config"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, cwd=tmp_path, timeout=60)
    assert conf.returncode == 0, conf.stderr
    # the installed module and jars, not a checkout's
    assert 'load_module "%s";' % MODULE in conf.stdout
    assert '"%s"' % (SHARE / "nginx-jvm.jar") in conf.stdout
    assert '"%s/*"' % (SHARE / "lib") in conf.stdout
    assert str(ROOT) not in conf.stdout
    launcher = Launcher(args, command="nginx-jvm", cwd=tmp_path)
    # as root its class cache is /var/cache/nginx-jvm, which purge removes
    launcher.env.pop("NGINX_JVM_CACHE", None)
    with launcher:
        assert launcher.get("/hello").text == "Hello, Clojure!"
        r = launcher.get("/file")
        assert r.body == (hello / "public/index.html").read_bytes()
    assert CACHE.is_dir()


def test_launcher_on_path_serves_a_war(deb, tmp_path):
    """--war with the package's servlet engine (/usr/share/nginx-jvm/servlet):
    a directory with a JSP, which Jasper compiles in the worker."""
    # where the workers' user (nobody) reaches it, as pytest's tmp_path is not
    app = Path(tempfile.mkdtemp(prefix="nginx-jvm-deb-war-"))
    app.chmod(0o755)
    (app / "index.jsp").write_text(
        '<%@ page contentType="text/plain" %>jsp ${1 + 2} ${param.x}')
    try:
        serve_war(app, tmp_path)
    finally:
        shutil.rmtree(app, ignore_errors=True)


def serve_war(app, tmp_path):
    args = ["--war", str(app), "--context-path", "/app"]
    conf = subprocess.run(["nginx-jvm", "run"] + args + ["--print-config"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, cwd=tmp_path, timeout=60)
    assert conf.returncode == 0, conf.stderr
    assert '"%s/servlet/tomcat-lib/*"' % SHARE in conf.stdout
    assert str(ROOT) not in conf.stdout
    launcher = Launcher(args, command="nginx-jvm", cwd=tmp_path, mode="pool")
    launcher.env.pop("NGINX_JVM_CACHE", None)
    with launcher:
        r = launcher.get("/app/?x=y")
        assert r.status == 200, r
        assert r.text.strip() == "jsp 3 y"


def test_api_installed_into_debians_maven_repository(deb):
    """nginx-jvm-api and nginx-jvm-test as maven-repo-helper installs a
    library: the jar in /usr/share/java with an unversioned link; in
    /usr/share/maven-repo, the version's directory and "debian"'s, each a
    pom and a relative link to that jar; and Maven resolves the artifact
    from file:///usr/share/maven-repo."""
    for a in ("nginx-jvm-api", "nginx-jvm-test"):
        jar = JAVA / ("%s-%s.jar" % (a, VERSION))
        assert jar.is_file() and not jar.is_symlink()
        assert (JAVA / ("%s.jar" % a)).resolve() == jar
        built = ROOT / "build" / "api" / jar.name
        assert jar.read_bytes() == built.read_bytes()
        for version in (VERSION, "debian"):
            d = MAVEN_REPO / a / version
            link = d / ("%s-%s.jar" % (a, version))
            assert link.is_symlink() and not os.readlink(link).startswith("/")
            assert link.resolve() == jar
            pom = (d / ("%s-%s.pom" % (a, version))).read_text()
            assert "<artifactId>%s</artifactId>" % a in pom
            assert "<version>%s</version>" % version in pom
        for extra in ("sources", "javadoc"):
            assert (MAVEN_REPO / a / VERSION / ("%s-%s-%s.jar" % (a, VERSION, extra))).is_file()
    # Maven's own resolution, into a local repository of its own (the
    # dependency plugin it needs cached under build/ between runs)
    local = ROOT / "build" / "projects" / "m2-deb"
    shutil.rmtree(local / "org" / "nginx-jvm", ignore_errors=True)
    r = subprocess.run(
        ["mvn", "-B", "-q", "-Dmaven.repo.local=%s" % local,
         "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:get",
         "-Dartifact=org.nginx-jvm:nginx-jvm-api:%s" % VERSION, "-Dtransitive=false",
         "-DremoteRepositories=debian::default::file:///usr/share/maven-repo"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert r.returncode == 0, r.stdout
    got = local / "org/nginx-jvm/nginx-jvm-api" / VERSION / ("nginx-jvm-api-%s.jar" % VERSION)
    assert got.read_bytes() == (JAVA / got.name).read_bytes()


# --- remove and purge (last: the fixture's package goes) ------------------------

def test_remove_then_purge_leaves_nothing(deb):
    apt_get("remove", PACKAGE)
    assert status() == "rc"
    # as Debian's module packages: the link is kept aside, renamed, so that
    # a reinstall enables the module again; nginx's configuration stays valid
    assert not LINK.exists() and REMOVED_LINK.is_symlink()
    assert not present(MODULE, SNIPPET, SHARE, LAUNCHER, MAVEN_REPO)
    n = SystemNginx("")
    try:
        r = n.test_config()
        assert r.returncode == 0, r.stderr
    finally:
        n.cleanup()

    apt_get("install", deb["path"])
    assert LINK.is_symlink() and not REMOVED_LINK.is_symlink()

    apt_get("purge", PACKAGE)
    assert status() == ""
    assert not present(*PACKAGE_PATHS, CACHE)
    if not deb["available_existed"]:
        assert not SNIPPET.parent.exists()
