"""scripts/cluster.sh without a cluster: its configurations are the ones
docs/scale-out.md shows (the page cannot drift from the script), and the
script is valid bash. The cluster itself is `make cluster-test`'s
(tests/cluster/)."""

import os
import re
import shutil
import subprocess
import tempfile

from harness import ROOT

CLUSTER = ROOT / "scripts" / "cluster.sh"
DOC = ROOT / "docs" / "scale-out.md"
DEFAULT_DIR = "/tmp/nginx-jvm-cluster"


def generated():
    """{host: text} from `cluster.sh config`, with the doc's paths: the
    checkout as /srv/nginx-jvm, NJC_DIR as its default, the descriptor
    limit (the machine's) as the doc's."""
    d = tempfile.mkdtemp(prefix="njc-config-")
    try:
        out = subprocess.run([str(CLUSTER), "config"], check=True,
                             stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, NJC_DIR=d)).stdout
    finally:
        shutil.rmtree(d, ignore_errors=True)
    out = out.replace(d, DEFAULT_DIR).replace(str(ROOT), "/srv/nginx-jvm")
    hosts = {}
    for part in re.split(r"^# ---- ", out, flags=re.M)[1:]:
        name = part.split(":", 1)[0]
        hosts[name] = normal(part.split("\n", 1)[1])
    return hosts


def normal(text):
    # the JDK the launcher found on this machine (its version and path)
    text = re.sub(r"# JDK [^\n]*", "# JDK ...", text)
    text = re.sub(r'jvm_path "[^"]*";', 'jvm_path "...";', text)
    text = re.sub(r"worker_rlimit_nofile \d+", "worker_rlimit_nofile N", text)
    text = re.sub(r"ulimit -Hn \d+\)", "ulimit -Hn N)", text)
    # the launcher's unpacked jars (bin/nginx-jvm: one Clojure on the class
    # path) are named by their path, size, times and inode on this machine
    text = re.sub(r"/jars/[0-9a-f]{16}-", "/jars/KEY-", text)
    return text.strip()


def documented():
    """{host: text} from the page's blocks under '#### HOST'."""
    page = DOC.read_text()
    return {m.group(1): normal(m.group(2)) for m in re.finditer(
        r"^#### (\w+)[^\n]*\n\n```[a-z]*\n(.*?)```", page, re.M | re.S)}


def test_the_page_shows_what_the_script_writes():
    gen, doc = generated(), documented()
    assert {"app1", "front", "redis"} <= set(doc), sorted(doc)
    for host, text in doc.items():
        assert text == gen[host], (
            "docs/scale-out.md's %s configuration differs from `scripts/"
            "cluster.sh config`'s: copy it from there" % host)
    # app2 and app3 differ from app1 in their address and name only
    for host, n in (("app2", 12), ("app3", 13)):
        assert gen[host] == gen["app1"].replace(
            "10.77.0.11", "10.77.0.%d" % n).replace("app1", host)


def test_usage_and_syntax():
    assert subprocess.run(["bash", "-n", str(CLUSTER)]).returncode == 0
    r = subprocess.run([str(CLUSTER)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    assert r.returncode == 2 and "cluster.sh up" in r.stderr
