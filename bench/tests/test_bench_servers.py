"""Unit tests of the benchmark's server definitions (bench/benchsuite/
servers.py): configurations and the routes' expected bytes.  Nothing is
started."""

import json
import re
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
    assert "listen 127.0.0.1:8080 backlog=4096;" in conf
    assert "return 200 'Hello, Clojure!'" in conf
    assert "return 200 '%s'" % servers.json_body().decode() in conf
    assert "alias /tmp/w/index.html;" in conf
    assert "/echo" not in conf and "load_module" not in conf
    assert "jvm_" not in conf


def test_every_nginx_takes_10000_idle_connections(tmp_path):
    (tmp_path / "classes").mkdir()
    for name in ["nginx", "nginx-jetty"] + list(servers.NGINX_JVM):
        conf = servers.nginx_conf(name, 1, tmp_path, 2)
        assert "worker_rlimit_nofile 20000;" in conf
        assert "worker_connections 16384;" in conf
        assert "keepalive_timeout 300s;" in conf
        assert "access_log off;" in conf


# What plain nginx must share with nginx-jvm for a fair ratio
SETTINGS = ("sendfile", "tcp_nopush", "keepalive_requests",
            "keepalive_timeout", "worker_connections", "worker_rlimit_nofile",
            "worker_processes", "access_log")


def settings(conf):
    found = {l.strip().rstrip(";") for l in conf.splitlines()
             if l.strip().split(" ")[0] in SETTINGS}
    found |= set(re.findall(r"listen \S+:\d+( \S+)?;", conf))
    return found


def test_plain_nginx_keeps_the_writers_settings():
    # the writer (bin/nginx-jvm config) is the source; plain nginx, behind
    # Jetty or nginx-clojure's, writes them out
    jvm = settings(servers.nginx_conf("jvm-loop", 1, WORK))
    assert "sendfile on" in jvm and " backlog=4096" in jvm
    for name in ("nginx", "nginx-jetty", "nginx-clojure"):
        assert settings(servers.nginx_conf(name, 1, WORK, 2)) == jvm, name


def test_nginx_jvm_modes(tmp_path):
    loop = servers.nginx_conf("jvm-loop", 1, WORK)
    assert 'load_module "%s";' % servers.MODULE in loop
    assert 'jvm_content "bench.routes/handler";\n        }' in loop
    assert "java-17" in loop and "jvm_mode" not in loop
    assert '"%s/lib/*"' % servers.BUILD in loop
    assert "jvm_mode pool;" in servers.nginx_conf("jvm-pool", 1, WORK)
    assert "jvm_async on;" in servers.nginx_conf("jvm-async", 1, WORK)
    virtual = servers.nginx_conf("jvm-virtual", 1, WORK)
    assert "jvm_mode virtual;" in virtual
    assert 'jvm_path "%s/lib/server/libjvm.so";' % servers.JDK25 in virtual
    (tmp_path / "classes").mkdir()
    java = servers.nginx_conf("jvm-java", 1, tmp_path)
    assert 'jvm_content "bench.JavaRoutes";' in java
    assert "build/lib" not in java          # no Clojure for Java handlers


def test_extra_jvm_options_reach_only_nginx_jvm():
    conf = servers.nginx_conf("jvm-pool", 1, WORK, jvm_options="-Xms16m")
    assert ('jvm_options "-Dbench.file=/tmp/w/index.html" '
            '"-XX:+StartAttachListener" "-XX:-DisableAttachMechanism" '
            '"-Xms16m";') in conf
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


def test_nginx_clojure_runs_the_handler_on_the_loop(tmp_path):
    conf = servers.nginx_conf("nginx-clojure", 1, WORK, peers_dir=tmp_path)
    assert ("load_module %s;" % (tmp_path / "nginx-clojure" /
                                 "ngx_http_clojure_module.so")) in conf
    assert "load_module %s" % servers.MODULE not in conf
    assert "content_handler_type clojure;" in conf
    assert "(require 'bench.routes) bench.routes/handler" in conf
    assert "jvm_workers" not in conf and "jvm_content" not in conf
    assert "jvm_path %s/lib/server/libjvm.so;" % servers.JDK17 in conf
    assert 'jvm_options "-Dbench.file=/tmp/w/index.html";' in conf
    assert 'jvm_options "--add-opens=java.base/java.lang=ALL-UNNAMED";' \
        in conf
    assert "%s/nginx-clojure/nginx-clojure.jar:" % tmp_path in conf
    # the same main and http settings as every other nginx
    assert servers.MAIN_CONF in conf and servers.HTTP_CONF in conf
    assert "-Xmx" not in servers.nginx_conf("nginx-clojure", 1, WORK,
                                            jvm_options="-Xmx64m")


def test_peer_status(tmp_path):
    built, why = servers.peer_status("http-kit", tmp_path)
    assert built is None and "make bench-peers" in why and "PEERS_SRC" in why
    d = tmp_path / "http-kit"
    d.mkdir()
    (d / "failed").write_text("cannot download https://x/y.tar.gz\n")
    assert servers.peer_status("http-kit", tmp_path) == (
        None, "not built: cannot download https://x/y.tar.gz")
    (d / "failed").unlink()
    (d / "built").write_text("http-kit 2.9.0-beta4 from /src\n")
    built, why = servers.peer_status("http-kit", tmp_path)
    assert built is None and "classes is missing" in why
    for f in servers.peer_files("http-kit", tmp_path):
        f.parent.mkdir(parents=True, exist_ok=True)
        f.mkdir() if f.name == "classes" else f.write_text("")
    assert servers.peer_status("http-kit", tmp_path) == (
        "http-kit 2.9.0-beta4 from /src", None)


def test_peers_are_servers():
    for peer in servers.PEERS:
        assert peer in servers.SERVERS
    assert "http-kit" in servers.JVM_PROCESSES
    assert "nginx-clojure" not in servers.JVM_PROCESSES


def test_every_jvm_starts_its_attach_listener(tmp_path):
    """jcmd reads allocated bytes through it; without it jcmd sends
    SIGQUIT, and an nginx worker quits."""
    assert "-XX:+StartAttachListener" in servers.nginx_conf("jvm-loop", 1, WORK)
    assert "-XX:+StartAttachListener" in servers.nginx_clojure_http(WORK, tmp_path)


def test_jvms_of_a_server():
    class P:
        pid = 1
    jetty = servers.Server("jetty", 1, P(), None, [])
    assert jetty.jvms() == [1]
    assert servers.Server("nginx-jetty", 2, P(), None, [], jetty).jvms() == [1]
    assert servers.Server("nginx", 3, P(), None, []).jvms() == []
