"""The container image for arm64 (`make image ARCH=arm64`: Apple silicon
laptops, Graviton hosts), built on this amd64 machine from arm64 Debian 13
roots and run here with podman --platform linux/arm64, its programs run by
qemu-user through binfmt_misc (scripts/qemu-binfmt.sh): the image says
arm64, a container's `uname -m` aarch64, its processes are qemu's on the
host, the module in it is an AArch64 ELF object and is the one nginx's
worker has loaded; a plain Java handler and a Ring handler, mounted from
here, answer on a published loopback port, the error log clean.

`make test-image-arm64`, not in `make test`: everything runs emulated (a
JVM's start, the class cache's first dump among it, takes minutes; the
times are printed, and in docs/operations.md).  What this cannot test:
real arm64 hardware (none here): its memory model is weaker than what
qemu-user gives on x86, and a race that only shows there would not show
here.  Skipped, saying why, where podman cannot run a container or this
machine cannot run arm64 programs.
"""

import os
import re
import subprocess
import time

import pytest

from harness import JAR, JAVA_HOME, PROBLEM, ROOT, free_port, request
from test_image import APP, WHY, podman

IMAGE = "localhost/nginx-jvm:arm64"
BINFMT = "/proc/sys/fs/binfmt_misc/qemu-aarch64"
QEMU = "/usr/bin/qemu-aarch64-static"
# an emulated start, podman run to the first answer, measured here (2
# cores, others' tests running), in three runs: a Java handler 17 to 69 s,
# a Ring handler 129 to 339 s (Clojure's loading, emulated); generous, but
# bounded
START = 1200

JAVA_APP = """\
package arm;

import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/** A plain Java handler: no Clojure on the class path. */
public final class Hello implements Handler {
    @Override
    public Response handle(Request request) {
        return Response.of(200, "text/plain; charset=utf-8",
                "hello from " + System.getProperty("os.arch") + ": "
                + request.method() + " " + request.uri() + " on Java "
                + System.getProperty("java.version"));
    }
}
"""


def arm64_cannot_run():
    """Why this machine cannot run arm64 programs, or None.  Registers
    qemu-user (scripts/qemu-binfmt.sh: installs it if need be) when it
    is not, as `make image ARCH=arm64` would."""
    if WHY is not None:
        return WHY
    if not os.path.exists(BINFMT):
        r = subprocess.run([str(ROOT / "scripts" / "qemu-binfmt.sh"), "arm64"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=600)
        if r.returncode != 0:
            return ("binfmt_misc cannot run arm64 programs here: "
                    + (r.stdout.strip().splitlines() or ["?"])[-1])
    with open(BINFMT) as f:
        entry = f.read()
    if not entry.startswith("enabled"):
        return "qemu-aarch64's binfmt_misc entry is disabled: " + entry
    # F: the kernel opened the interpreter at registration, so that a
    # container (which has no qemu of its own) runs it
    if not re.search(r"^flags: .*F", entry, re.M):
        return "qemu-aarch64 registered without the F flag: " + entry
    return None


REASON = arm64_cannot_run()
pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))


@pytest.fixture(scope="module")
def image():
    """`make image ARCH=arm64`: its name and size (the last line).  On a
    fresh machine it makes the arm64 roots first (about an hour, all
    emulated)."""
    started = time.monotonic()
    r = subprocess.run(["make", "-s", "--no-print-directory", "image",
                        "ARCH=arm64"], cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=7200)
    assert r.returncode == 0, r.stdout
    last = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout.strip().splitlines()[-1])
    m = re.match(r"^(\S+) (\d+) MB$", last)
    assert m and m.group(1) == IMAGE, r.stdout
    print("\nimage %s: %s MB, made in %.0f s" % (m.group(1), m.group(2),
                                                time.monotonic() - started))
    return IMAGE


def test_arm64_image_is_arm64(image, tmp_path):
    arch = podman("image", "inspect", "--format", "{{.Architecture}}",
                  image).stdout.strip()
    assert arch == "arm64", arch
    r = podman("run", "--rm", "--platform", "linux/arm64", "--network=none",
               "--entrypoint", "/bin/sh", image, "-c", "uname -m; dpkg --print-architecture; "
               "dpkg-query -W -f='${Architecture} ${Status}\\n' libnginx-mod-http-jvm; "
               "nginx -v 2>&1; java -XshowSettings:properties -version 2>&1 "
               "| sed -n 's/^ *os.arch = //p'", timeout=600)
    assert r.stdout.splitlines() == [
        "aarch64", "arm64", "arm64 install ok installed",
        "nginx version: nginx/1.26.3", "aarch64"], r.stdout
    # the module, read here: an AArch64 shared object
    cid = podman("create", "--platform", "linux/arm64", image).stdout.strip().splitlines()[-1]
    try:
        so = tmp_path / "ngx_http_jvm_module.so"
        podman("cp", cid + ":/usr/lib/nginx/modules/ngx_http_jvm_module.so", str(so))
    finally:
        podman("rm", "-f", cid, check=False)
    header = subprocess.run(["readelf", "-h", str(so)], stdout=subprocess.PIPE,
                            text=True, check=True).stdout
    assert re.search(r"Machine:\s+AArch64", header), header
    assert re.search(r"Type:\s+DYN", header), header


def serve(image, app, handler, classpath, path, expect):
    """`podman run` of the image serving handler from app (mounted at
    /app), until path answers (expect: a pattern of its body); then the
    checks every emulated server gets.  Prints how long the start took."""
    port = free_port()
    started = time.monotonic()
    cid = podman("run", "-d", "--platform", "linux/arm64",
                 "-p", "127.0.0.1:%d:8080" % port, "-v", "%s:/app:ro" % app,
                 image, "--handler", handler, "--classpath", classpath,
                 "--workers", "1").stdout.strip().splitlines()[-1]
    assert re.match(r"^[0-9a-f]{64}$", cid), cid
    try:
        reply = None
        while reply is None:
            assert time.monotonic() - started < START, \
                podman("logs", cid, check=False).stdout
            state = podman("inspect", "--format", "{{.State.Running}}",
                           cid).stdout.strip()
            assert state == "true", podman("logs", cid, check=False).stdout
            try:
                r = request(port, "GET", path, timeout=120)
            except OSError:
                time.sleep(1)
                continue
            # 502/503 while the worker's JVM starts would be a fault: the
            # port is nginx's from its start, and the worker answers once
            # its JVM is up
            assert r.status == 200, (r, podman("logs", cid, check=False).stdout)
            reply = r
        took = time.monotonic() - started
        assert re.match(expect, reply.text), reply.text
        # and again, with the JVM warm
        t = time.monotonic()
        again = request(port, "GET", path, timeout=120)
        warm = time.monotonic() - t
        assert again.status == 200 and again.text == reply.text, again
        print("\n%s under qemu-user: first answer %.0f s after podman run, "
              "the next in %.3f s" % (handler, took, warm))

        # its processes on this machine: qemu's (binfmt_misc), arm64 inside
        pid = podman("inspect", "--format", "{{.State.Pid}}", cid).stdout.strip()
        assert os.readlink("/proc/%s/exe" % pid) == QEMU, pid
        # the module nginx's worker has loaded, the one checked above, beside
        # the arm64 JVM (a process's title is qemu's argv to others: the
        # worker is the process that maps both)
        maps = podman("exec", cid, "/bin/sh", "-c",
                      "for m in /proc/[0-9]*/maps; do "
                      "  if grep -q libjvm.so $m 2>/dev/null; then "
                      "    grep -h -m1 -e ngx_http_jvm_module.so $m; "
                      "    grep -h -m1 -e libjvm.so $m; fi; done",
                      timeout=300).stdout
        assert "/usr/lib/nginx/modules/ngx_http_jvm_module.so" in maps, maps
        assert "/usr/lib/jvm/java-21-openjdk-arm64/lib/server/libjvm.so" in maps, maps
        logs = podman("logs", cid, check=False).stdout
        assert not [l for l in logs.splitlines() if PROBLEM.search(l)], logs
    finally:
        podman("stop", "-t", "60", cid, check=False, timeout=300)
        podman("rm", "-f", cid, check=False, timeout=300)
    assert podman("ps", "-a", "-q", "--filter", "id=" + cid).stdout.strip() == ""


def test_arm64_image_serves_a_java_handler(image, tmp_path):
    app = tmp_path / "app"
    src = app / "src" / "arm"
    src.mkdir(parents=True)
    (src / "Hello.java").write_text(JAVA_APP)
    # compiled here (Java 17 bytecode, which the image's Java 21 runs)
    subprocess.run([JAVA_HOME + "/bin/javac", "--release", "17", "-cp", str(JAR),
                    "-d", str(app / "classes"), str(src / "Hello.java")],
                   check=True)
    subprocess.run(["chmod", "-R", "a+rX", str(tmp_path)], check=True)
    serve(image, app, "arm.Hello", "/app/classes", "/arm?x=1",
          r"^hello from aarch64: GET /arm on Java 21\.")


def test_arm64_image_serves_a_ring_handler(image, tmp_path):
    app = tmp_path / "app"
    (app / "src" / "my").mkdir(parents=True)
    (app / "src" / "my" / "app.clj").write_text(APP)
    subprocess.run(["chmod", "-R", "a+rX", str(tmp_path)], check=True)
    serve(image, app, "my.app/handler", "/app/src", "/ring",
          r"^hello from the image: :get /ring on Java 21\.\S+ as www-data$")
