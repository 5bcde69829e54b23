"""The container image (`make image`): built with podman from a Debian 13
root made locally with mmdebstrap (no registry pull), run as its README
says (`podman run -p PORT:8080 -v APP:/app IMAGE --handler ... --classpath
/app/...`) with a Ring handler mounted from here, a page fetched over
loopback, then stopped and removed by its container id.

podman runs with the project's configuration (scripts/podman.sh: runc,
no default ulimits, its storage in build/podman).  Skipped, saying why,
only where podman cannot run a container.  `make test-image` runs this
file; the first build makes the root (mmdebstrap, a few minutes).
"""

import os
import re
import shutil
import subprocess
import time
import urllib.request

import pytest

from harness import PROBLEM, ROOT, free_port

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
        body = None
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            state = podman("inspect", "--format", "{{.State.Running}}", cid).stdout.strip()
            assert state == "true", podman("logs", cid, check=False).stdout
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/hello?x=1" % port,
                                            timeout=5) as resp:
                    assert resp.status == 200
                    body = resp.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
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
