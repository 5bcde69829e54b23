"""The cluster's tests (make cluster-test): scripts/cluster.sh brings the
cluster up once for the session, the tests run inside its client host's
network namespace (njc-client: every socket they open is on the cluster's
bridge), and the cluster is brought down at the end, whatever happened.

Not part of `make test`: collected only with NGINX_JVM_CLUSTER_TEST=1 (they
need root, and take a few minutes)."""

import ctypes
import json
import os
import re
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import clients  # noqa: E402
from clients import ARTEFACTS  # noqa: E402

if os.environ.get("NGINX_JVM_CLUSTER_TEST") != "1":
    collect_ignore_glob = ["test_*.py"]

ROOT = os.path.dirname(os.path.dirname(HERE))
CLUSTER = os.path.join(ROOT, "scripts", "cluster.sh")
STATE = os.environ.get("NJC_DIR", "/tmp/nginx-jvm-cluster")
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def setns(path):
    """Moves the calling thread (and the threads and processes it starts
    from then on) into the network namespace at path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, "setns(%s): %s" % (path, os.strerror(e)))
    finally:
        os.close(fd)


def cluster(*args, check=True):
    """scripts/cluster.sh ARGS; its output on failure."""
    r = subprocess.run([CLUSTER] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if check and r.returncode != 0:
        raise AssertionError("cluster.sh %s failed:\n%s" % (" ".join(args),
                                                             r.stdout))
    return r.stdout


class Cluster:
    front = "10.77.0.10"
    live = "http://10.77.0.10/"
    notes = "http://10.77.0.10:81/"
    apps = ("app1", "app2", "app3")

    def __init__(self):
        self.routes = {}          # app host -> a njc_route cookie value
        self.figures = {}

    def kill(self, host):
        cluster("kill", host)

    def stop(self, host):
        cluster("stop", host)

    def start(self, host):
        cluster("start", host)

    def unplug(self, host):
        cluster("unplug", host)

    def plug(self, host):
        cluster("plug", host)

    def log(self, host):
        path = os.path.join(STATE, host,
                            "redis.log" if host == "redis" else "error.log")
        with open(path, errors="replace") as f:
            return f.read()

    def find_routes(self):
        """A njc_route value per application host: the front hashes the
        cookie to a host (hash ... consistent); the tests pick values that
        land on the host they want."""
        for i in range(200):
            value = "r%d" % i
            host = clients.get(self.live, cookie="njc_route=" + value).host
            self.routes.setdefault(host, value)
            if len(self.routes) == len(self.apps):
                return
        raise AssertionError("no njc_route value for some host: %r"
                             % self.routes)

    def route(self, host):
        return "njc_route=" + self.routes[host]


# [error] lines the failures the tests cause may log; [alert], [crit] and
# [emerg] are never expected
EXPECTED_ERRORS = [
    r"Redis at [0-9.:]+ is unavailable",           # sessions: a 503
    r"RedisBridge\[chat",                           # the bridge, Redis away
    r"upstream prematurely closed|connect\(\) failed|recv\(\) failed"
    r"|no live upstreams|upstream timed out",       # the front, a host lost
]


def pytest_configure(config):
    # websockets would rather see connect() in a with block; the chat
    # clients outlive any one block
    config.addinivalue_line(
        "filterwarnings",
        r"ignore:connect\(\) must be used:DeprecationWarning")


def rss():
    """Each host's processes' resident memory (MB), after the tests:
    an application host's worker is its JVM."""
    out = {}
    for host in ("front", "app1", "app2", "app3", "redis"):
        pids = subprocess.run(["ip", "netns", "pids", "njc-" + host],
                              stdout=subprocess.PIPE, text=True).stdout.split()
        for pid in pids:
            try:
                with open("/proc/%s/status" % pid) as f:
                    status = f.read()
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    what = f.read().split(b"\0")[0].decode()
            except OSError:
                continue
            kb = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
            if "worker" in what:
                what = "worker"
            elif "master" in what:
                what = "master"
            else:
                what = os.path.basename(what.split()[0])
            out["%s %s" % (host, what)] = round(kb / 1024, 1)
    return out


@pytest.fixture(scope="session")
def njc():
    if os.geteuid() != 0:
        pytest.skip("the cluster needs root (network namespaces)")
    own = "/proc/self/ns/net"
    original = os.open(own, os.O_RDONLY)
    os.makedirs(ARTEFACTS, exist_ok=True)
    c = Cluster()
    started = time.monotonic()
    try:
        cluster("up")
        c.figures["up_seconds"] = round(time.monotonic() - started, 1)
        setns("/run/netns/njc-client")
        c.find_routes()
        yield c
        c.figures["rss_mb"] = rss()
        problems = []
        for host in ("front",) + c.apps:
            for line in c.log(host).splitlines():
                if re.search(r"\[(alert|crit|emerg)\]", line) or (
                        "[error]" in line and not any(
                            re.search(p, line) for p in EXPECTED_ERRORS)):
                    problems.append("%s: %s" % (host, line))
        assert not problems, "unexpected error log lines:\n" + \
            "\n".join(problems[:40])
    finally:
        if _libc.setns(original, CLONE_NEWNET) != 0:
            print("cannot go back to the test's own network namespace",
                  file=sys.stderr)
        os.close(original)
        with open(os.path.join(ARTEFACTS, "figures.json"), "w") as f:
            json.dump(c.figures, f, indent=2, sort_keys=True)
        print("\nthe cluster's figures (%s):\n%s" % (
            os.path.join(ARTEFACTS, "figures.json"),
            json.dumps(c.figures, indent=2, sort_keys=True)))
        if os.environ.get("NJC_KEEP") != "1":
            cluster("down", check=False)
