"""The configs of bench/websocket.py, phases.py and shared.py: their
nginx-jvm servers' from the one writer (bin/nginx-jvm config), and
nginx-jetty's nginx with the writer's settings.  Nothing is started."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import phases  # noqa: E402
import reload  # noqa: E402
import shared  # noqa: E402
import websocket  # noqa: E402
from benchsuite import servers  # noqa: E402
from test_bench_servers import settings  # noqa: E402

WRITTEN = "# Written by bin/nginx-jvm (config)."


def test_websocket_servers(tmp_path, monkeypatch):
    (tmp_path / "java-classes").mkdir()
    monkeypatch.setattr(websocket, "BUILT", tmp_path)
    jvm = {n: websocket.nginx_conf(n, 1, tmp_path) for n in websocket.NGINX_JVM}
    for name, conf in jvm.items():
        assert conf.startswith(WRITTEN), name
        assert 'jvm_options "-XX:+StartAttachListener"' in conf
        assert 'pid "%s/%s/nginx.pid";' % (tmp_path, name) in conf
    assert "jvm_mode pool;" in jvm["jvm-pool"]
    assert "build/lib" not in jvm["jvm-java"]
    assert 'jvm_content "wsbench.JavaEcho";' in jvm["jvm-java"]
    # nginx in front of Jetty: the same settings, 20,000 connections
    proxy = websocket.nginx_conf("nginx-jetty", 1, tmp_path, 2)
    assert settings(proxy) == settings(jvm["jvm-ring"])
    assert "worker_connections 20000;" in proxy
    assert "proxy_set_header Upgrade $http_upgrade;" in proxy


def test_phases_server(tmp_path):
    (tmp_path / "html" / "static").mkdir(parents=True)
    conf = phases.jvm_conf(str(tmp_path), 1, "/tmp", 4321)
    assert conf.startswith(WRITTEN)
    assert "worker_processes 1;" in conf
    assert ('location / {\n            jvm_content "bench.PhaseBench$OneCall";'
            "\n            jvm_async on;") in conf
    assert 'location "/static/" {\n            alias "%s/html/static/";' \
        % tmp_path in conf
    assert "upstream up { server 127.0.0.1:4321; keepalive 32; }" in conf
    for route in ("/checked/", "/checked-pool/", "/proxy/", "/internal/"):
        assert "location %s {" % route in conf
    assert "jvm_access bench.PhaseBench$Check;" in conf


def test_shared_server(tmp_path, monkeypatch):
    # (Jedis's directory need not exist yet: make bench-deps makes it)
    monkeypatch.setattr(shared, "BENCH_LIB", tmp_path / "bench-lib")
    shared.BENCH_LIB.mkdir()
    conf = shared.conf(str(tmp_path), 1, 2, "/tmp", 6379)
    assert conf.startswith(WRITTEN)
    assert "listen 127.0.0.1:1 backlog=4096 reuseport;" in conf
    assert "worker_processes 2;" in conf
    assert "worker_processes 1;" in shared.conf(str(tmp_path), 1, 1, "/tmp",
                                                6379)
    assert "jvm_shared_dict bench 16m;" in conf
    assert "jvm_topic bench 1m;" in conf
    assert "jvm_init bench.TopicBench;" in conf
    assert 'jvm_options "-Dbench.redis=6379";' in conf
    assert '"%s/*"' % shared.BENCH_LIB in conf
    assert 'jvm_content "bench.SharedBench";' in conf      # /bench
    assert "location /pool/bench { jvm_mode pool;" in conf
    assert "location /roundtrip { jvm_mode pool;" in conf


def test_reload_plain_nginx_keeps_the_launchers_settings():
    # nginx-jvm is `bin/nginx-jvm run`: its config, printed
    r = subprocess.run(
        [str(servers.LAUNCHER), "run", "--handler", "a.B", "--classpath",
         "/tmp", "--port", "1", "--workers", "2", "--print-config"]
        + reload.RUN_OPTIONS, stdout=subprocess.PIPE, text=True, check=True)
    plain = reload.plain_conf(1)
    assert settings(plain) == settings(r.stdout)
    assert 'return 200 "Hello, nginx!";' in plain


def test_the_writer_is_called_once_per_server_kind():
    # no third copy of the writer's call: the scripts use servers.py's
    for script in ("websocket.py", "phases.py", "shared.py"):
        text = (ROOT / "bench" / script).read_text()
        assert "servers.writer_conf(" in text, script
        assert "load_module" not in text and "jvm_classpath" not in text, \
            script
    assert servers.LAUNCHER.exists()
