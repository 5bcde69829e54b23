"""The Debian 13 package (`make deb DIST=trixie`) in Debian 13: built in a
Debian 13 root (scripts/debian-root.sh build, made with mmdebstrap) against
its nginx 1.26.3 and OpenJDK 21, installed with apt into a copy of that root,
serving the notes example through the root's own nginx (Debian's prefix,
modules-enabled, workers as www-data) and the hello example through its
/usr/bin/nginx-jvm, to a client here over loopback, then removed and purged
without a trace.

The copy is an overlay (the root below, a temporary directory above) in a
mount namespace of its own, with /proc and /dev bound into it, held by one
process: the test's changes are all in the upper directory, which shows
what the package left, and everything goes when that process ends.  The
machine's own nginx and packages are never touched.  `make test-deb-trixie`
runs this file; the first run makes the root (a few minutes, mmdebstrap
under the heavy lock), later ones reuse it.
"""

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness import ROOT, Launcher, Nginx, walk_notes

PACKAGE = "libnginx-mod-http-jvm"
DOC = "/usr/share/doc/" + PACKAGE
SHARE = "/run/njvm"          # the test's directory, seen from the root
LINK = "/etc/nginx/modules-enabled/50-mod-http-jvm.conf"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare")
    or not shutil.which("nsenter"),
    reason="makes and enters a Debian 13 root: needs root, unshare and nsenter")

HOLD = r"""
lower=$1 upper=$2 work=$3 merged=$4 share=$5
mount -t overlay overlay -o "lowerdir=$lower,upperdir=$upper,workdir=$work" "$merged"
mount -t proc proc "$merged/proc"
mount --rbind /dev "$merged/dev"
mkdir -p "$merged/run/njvm"
mount --bind "$share" "$merged/run/njvm"
echo ready
exec sleep 86400
"""


class Root:
    """A copy of the Debian root `lower` while it lives (see the module's
    docstring).  self.share is a directory here that the root sees as
    /run/njvm."""

    def __init__(self, lower):
        self.dir = tempfile.mkdtemp(prefix="nginx-jvm-trixie-")
        os.chmod(self.dir, 0o755)
        self.upper, work, self.merged, self.share = (
            os.path.join(self.dir, d) for d in ("upper", "work", "merged", "share"))
        for d in (self.upper, work, self.merged, self.share):
            os.mkdir(d)
        os.chmod(self.share, 0o755)
        self.holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "--",
             "/bin/sh", "-ec", HOLD, "sh", lower, self.upper, work,
             self.merged, self.share],
            stdout=subprocess.PIPE, text=True)
        line = self.holder.stdout.readline()
        if line != "ready\n":
            self.close()
            raise RuntimeError("the root's overlay: %r" % line)

    def command(self, *args):
        """args run in the root, as root, with a clean environment."""
        return ["nsenter", "-t", str(self.holder.pid), "-m", "--",
                "chroot", self.merged, "/usr/bin/env", "-i",
                "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
                "LC_ALL=C.UTF-8", "DEBIAN_FRONTEND=noninteractive"] + list(args)

    def run(self, *args, check=True, timeout=300):
        r = subprocess.run(self.command(*args), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
        if check:
            assert r.returncode == 0, r.stdout
        return r

    def exists(self, path):
        return self.run("test", "-e", path, check=False).returncode == 0 \
            or self.run("test", "-L", path, check=False).returncode == 0

    def close(self):
        if self.holder.poll() is None:
            self.holder.terminate()
            self.holder.wait(30)
        self.holder.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def apt_get(root, *args):
    return root.run("apt-get", "-y", "-q", "--no-install-recommends", *args).stdout


def status(root):
    r = root.run("dpkg-query", "-W", "-f=${db:Status-Abbrev}", PACKAGE,
                 check=False)
    return r.stdout.strip() if r.returncode == 0 else ""


@pytest.fixture(scope="module")
def trixie():
    """`make deb DIST=trixie`, the Debian 13 root, a copy of it with the
    package installed by apt; the copy goes at the end whatever happens."""
    # --no-print-directory: under `make test` this make is a sub-make, and
    # its "Leaving directory" line would come after the package's path
    r = subprocess.run(["make", "-s", "--no-print-directory",
                        "deb", "DIST=trixie"], cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=1800)
    assert r.returncode == 0, r.stdout
    deb = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout.strip().splitlines()[-1])
    assert deb.endswith(".deb") and os.path.isfile(deb) \
        and "/build/trixie/" in deb, r.stdout
    lower = subprocess.run([str(ROOT / "scripts" / "debian-root.sh"), "build"],
                           stdout=subprocess.PIPE, text=True, check=True,
                           timeout=1800).stdout.strip().splitlines()[-1]
    root = Root(lower)
    try:
        assert root.run("cat", "/etc/debian_version").stdout.startswith("13.")
        assert status(root) == "" and not root.exists(LINK)
        shutil.copy(deb, root.share)
        # apt resolves the Depends from the root's lists (kept by
        # mmdebstrap), all installed already: nothing is fetched
        out = apt_get(root, "install", "%s/%s" % (SHARE, os.path.basename(deb)))
        assert not re.search(r"^Get:\d+ \w+://", out, re.M), out
        assert "1 newly installed" in out, out
        root.deb = deb
        yield root
    finally:
        root.close()


def test_built_for_debian_13s_nginx_and_jdk(trixie):
    provides = trixie.run("dpkg-query", "-W", "-f=${Provides}", "nginx").stdout
    abi = [p.strip() for p in provides.split(",") if p.strip().startswith("nginx-abi-")]
    assert abi and abi[0].startswith("nginx-abi-1.26."), provides
    depends = subprocess.run(["dpkg-deb", "-f", trixie.deb, "Depends"],
                             stdout=subprocess.PIPE, text=True, check=True).stdout
    fields = [d.strip() for d in depends.split(",")]
    assert abi[0] in fields, fields
    assert "openjdk-21-jre-headless | java21-runtime-headless" in fields, fields
    # the launcher reads jars' manifests with unzip
    assert "unzip" in fields, fields
    # built against 1.26.3's headers: the module's signature matches the
    # root's nginx (which refuses a module built for another version)
    r = trixie.run("nginx", "-t", check=False)
    assert r.returncode == 0, r.stdout


def test_installed_like_debians_module_packages(trixie):
    assert status(trixie) == "ii"
    assert trixie.run("readlink", LINK).stdout.strip() == \
        "/usr/share/nginx/modules-available/mod-http-jvm.conf"
    r = trixie.run("dpkg", "--verify", PACKAGE, check=False)
    assert r.returncode == 0 and r.stdout == "", r.stdout


MAIN = """\
user www-data;
worker_processes 2;
pid %(share)s/nginx.pid;
error_log %(share)s/logs/error.log info;
include /etc/nginx/modules-enabled/*.conf;

events { worker_connections 64; }

http {
    include /etc/nginx/mime.types;
    access_log off;
    client_body_temp_path %(share)s/tmp/body;
    proxy_temp_path %(share)s/tmp/proxy;
    fastcgi_temp_path %(share)s/tmp/fastcgi;
    uwsgi_temp_path %(share)s/tmp/uwsgi;
    scgi_temp_path %(share)s/tmp/scgi;

    jvm_classpath /usr/share/nginx-jvm/nginx-jvm.jar
                  /usr/share/nginx-jvm/lib/*
                  %(ring)s
                  %(doc)s/examples/notes/src;
    jvm_shared_dict notes 1m;

    server {
        listen 127.0.0.1:%(port)d;

        location /static/ {
            alias %(doc)s/examples/notes/public/;
        }

        location / {
            jvm_content notes.core/app;
        }
    }
}
"""


class RootNginx(Nginx):
    """The root's /usr/sbin/nginx, as Debian's service runs it (its
    prefix, modules-enabled, workers as www-data), its own files in the
    test's directory (self.prefix here, /run/njvm in the root)."""

    def __init__(self, root, ring):
        self.root = root
        self.own(root.share, workers=2)
        for d in ("logs", "tmp"):
            os.makedirs(os.path.join(self.prefix, d), exist_ok=True)
        with open(self.conf, "w") as f:
            f.write(MAIN % {"share": SHARE, "ring": "\n                  ".join(ring),
                            "doc": DOC, "port": self.port})
        Nginx.instances.append(self)

    def command(self):
        return self.root.command("/usr/sbin/nginx", "-e", SHARE + "/logs/error.log",
                                 "-c", SHARE + "/nginx.conf")

    def cleanup(self):
        if self in Nginx.instances:
            Nginx.instances.remove(self)


def uid(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(next(l for l in f if l.startswith("Uid:")).split()[1])


def test_root_nginx_serves_the_notes_example(trixie):
    ring = ring_jars(trixie)
    www = int(trixie.run("id", "-u", "www-data").stdout)
    with RootNginx(trixie, ring) as n:
        workers = n.worker_pids()
        assert len(workers) == 2 and all(uid(p) == www for p in workers)
        # the root's JRE 21 in the workers
        with open("/proc/%d/maps" % workers[0]) as f:
            maps = f.read()
        assert "/usr/lib/jvm/java-21-openjdk-amd64/lib/server/libjvm.so" in maps
        walk_notes(n, "Trixie", "from Debian 13")


def ring_jars(root):
    """Debian 13's Ring and Compojure, as the package suggests them."""
    ring = ["/usr/share/java/%s.jar" % line.strip()
            for line in (ROOT / "scripts" / "ring-jars.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    missing = [j for j in ring if not root.exists(j)]
    assert not missing, missing
    return ring


class RootLauncher(Launcher):
    """The root's /usr/bin/nginx-jvm run as root in it (so its class
    cache is /var/cache/nginx-jvm, which purge removes)."""

    def __init__(self, root, args):
        Launcher.__init__(self, args)
        self.args = root.command(*(["/usr/bin/nginx-jvm"] + self.args[1:]))


def test_launcher_in_the_root_serves_a_handler(trixie):
    hello = DOC + "/examples/hello"
    cp = ":".join([hello + "/src"] + ring_jars(trixie))
    with RootLauncher(trixie, ["--handler", "hello.core/app", "--classpath", cp,
                               "--jvm-option", "-Dhello.root=" + hello]) as n:
        assert n.get("/hello").text == "Hello, Clojure!"
        with open("/proc/%d/maps" % n.worker_pids()[0]) as f:
            assert "/usr/lib/jvm/java-21-openjdk-amd64/" in f.read()
    assert trixie.exists("/var/cache/nginx-jvm")


def changed(root):
    """What the upper directory holds: the root's files the test made or
    changed (a character device 0/0 is a file it deleted)."""
    found = []
    for d, dirs, files in os.walk(root.upper):
        for f in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            found.append("/" + os.path.relpath(os.path.join(d, f), root.upper))
    return found


# dpkg's and apt's own records, logs, and the test's mount point
BOOKKEEPING = re.compile(r"^/(var/lib/dpkg/|var/lib/apt/|var/cache/|var/log/"
                         r"|var/cache/debconf/|run/|tmp/|root/)")


def test_remove_then_purge_leaves_nothing(trixie):
    apt_get(trixie, "remove", PACKAGE)
    assert status(trixie) == "rc"
    assert not trixie.exists(LINK) and trixie.exists(LINK + ".removed")
    assert not trixie.exists("/usr/lib/nginx/modules/ngx_http_jvm_module.so")
    assert trixie.run("nginx", "-t", check=False).returncode == 0
    apt_get(trixie, "purge", PACKAGE)
    assert status(trixie) == ""
    for p in (LINK, LINK + ".removed", "/usr/share/nginx-jvm", "/usr/bin/nginx-jvm",
              DOC, "/var/cache/nginx-jvm", "/usr/share/maven-repo/org/nginx-jvm"):
        assert not trixie.exists(p), p
    left = [f for f in changed(trixie) if not BOOKKEEPING.match(f)]
    assert left == [], left
