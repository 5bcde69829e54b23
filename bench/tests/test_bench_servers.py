"""Unit tests of the benchmark's server definitions (bench/benchsuite/
servers.py): configurations and the routes' expected bytes.  Nothing is
started."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from benchsuite import servers  # noqa: E402

WORK = Path("/tmp/w")


def test_routes_bytes():
    assert servers.expected_body("hello") == b"Hello, Clojure!"
    assert len(servers.file_body()) == 29686
    assert len(servers.expected_body("echo")) == 4096
    doc = json.loads(servers.json_body())
    assert doc["count"] == len(doc["items"]) == 13
    assert 900 <= len(servers.json_body()) <= 1100
    assert int(servers.expected_body("headers")) == sum(
        len(v) for _, v in servers.HEADERS)
    assert len(servers.HEADERS) == 10


def test_json_matches_the_handlers_source():
    # bench.routes and bench.JavaRoutes build the same items; the check
    # before the load compares the bytes, this catches a drift early
    clj = (ROOT / "bench/ring/bench/routes.clj").read_text()
    java = (ROOT / "bench/java/bench/JavaRoutes.java").read_text()
    assert "(range 13)" in clj and "i < 13" in java
    assert '\\"tags\\":[\\"bench\\",\\"json\\"]}' in clj
    assert '\\"tags\\":[\\"bench\\",\\"json\\"]}' in java


def test_plain_nginx_serves_what_it_can():
    conf = servers.nginx_conf("nginx", 8080, WORK)
    assert "listen 127.0.0.1:8080;" in conf
    assert "return 200 'Hello, Clojure!'" in conf
    assert "return 200 '%s'" % servers.json_body().decode() in conf
    assert "alias /tmp/w/index.html;" in conf
    assert "/echo" not in conf and "load_module" not in conf
    assert "jvm_" not in conf


def test_every_nginx_takes_10000_idle_connections():
    for name in ["nginx", "nginx-jetty"] + list(servers.NGINX_JVM):
        conf = servers.nginx_conf(name, 1, WORK, 2)
        assert "worker_rlimit_nofile 20000;" in conf
        assert "worker_connections 16384;" in conf
        assert "keepalive_requests 1000000;" in conf
        assert "access_log off;" in conf


def test_nginx_jvm_modes():
    loop = servers.nginx_conf("jvm-loop", 1, WORK)
    assert "load_module %s;" % servers.MODULE in loop
    assert "location / { jvm_content bench.routes/handler; }" in loop
    assert "java-17" in loop and "jvm_mode" not in loop
    assert "jvm_mode pool;" in servers.nginx_conf("jvm-pool", 1, WORK)
    assert "jvm_async on;" in servers.nginx_conf("jvm-async", 1, WORK)
    virtual = servers.nginx_conf("jvm-virtual", 1, WORK)
    assert "jvm_mode virtual;" in virtual
    assert "jvm_path %s/lib/server/libjvm.so;" % servers.JDK25 in virtual
    java = servers.nginx_conf("jvm-java", 1, WORK)
    assert "jvm_content bench.JavaRoutes;" in java
    assert "build/lib" not in java          # no Clojure for Java handlers


def test_extra_jvm_options_reach_only_nginx_jvm():
    conf = servers.nginx_conf("jvm-pool", 1, WORK, jvm_options="-Xms16m")
    assert "jvm_options -Dbench.file=/tmp/w/index.html -Xms16m;" in conf
    assert "-Xms16m" not in servers.nginx_conf("nginx", 1, WORK,
                                               jvm_options="-Xms16m")


def test_proxy_to_jetty_keeps_connections():
    conf = servers.nginx_conf("nginx-jetty", 1, WORK, 4321)
    assert "server 127.0.0.1:4321; keepalive 64;" in conf
    assert "proxy_http_version 1.1;" in conf
    assert 'proxy_set_header Connection "";' in conf


def test_stat_ppid_survives_odd_command_names():
    stat = "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0"
    assert servers.parse_stat_ppid(stat) == 17
