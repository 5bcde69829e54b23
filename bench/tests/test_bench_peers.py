"""Unit tests of how bench/bench.py treats the peers (nginx-clojure,
http-kit): skipped with a reason when not built, not measured on a route
they answer otherwise.  Nothing is started."""

import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import bench  # noqa: E402
from benchsuite import servers  # noqa: E402


def args(names, routes=("hello", "echo")):
    return types.SimpleNamespace(servers=list(names), routes=list(routes))


def test_unbuilt_peers_are_skipped_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(servers, "PEERS_DIR", tmp_path)
    monkeypatch.setattr(bench.shutil, "which", lambda _: "/usr/bin/wrk")
    (tmp_path / "http-kit").mkdir()
    (tmp_path / "http-kit" / "failed").write_text("javac failed: see x\n")
    a = args(["nginx", "nginx-clojure", "http-kit"])
    skipped = bench.preflight(a)
    assert a.servers == ["nginx"]
    assert skipped["http-kit"] == "not built: javac failed: see x"
    assert "make bench-peers" in skipped["nginx-clojure"]


def test_a_built_peer_runs_and_says_what_was_built(tmp_path, monkeypatch):
    monkeypatch.setattr(servers, "PEERS_DIR", tmp_path)
    monkeypatch.setattr(bench.shutil, "which", lambda _: "/usr/bin/wrk")
    for f in servers.peer_files("nginx-clojure", tmp_path):
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("")
    (tmp_path / "nginx-clojure" / "built").write_text("nginx-clojure 0.6.1\n")
    a = args(["nginx", "nginx-clojure"])
    if (servers.BUILD / "lib").exists():
        assert bench.preflight(a) == {}
        assert a.servers == ["nginx", "nginx-clojure"]
    assert bench.describe("nginx-clojure").endswith(
        "; built: nginx-clojure 0.6.1")
    assert bench.describe("nginx") == servers.SERVERS["nginx"]


def test_a_peer_is_not_measured_where_its_bytes_differ(tmp_path,
                                                      monkeypatch):
    def check(server, route):
        if route == "echo":
            return "%s POST /echo: status 200, 0 bytes" % server.name
        return None
    monkeypatch.setattr(bench, "check", check)
    fleet = types.SimpleNamespace(servers={
        n: servers.Server(n, 1, None, None, list(servers.ROUTES))
        for n in ("jvm-loop", "nginx-clojure")})
    results = {"checks": [], "restricted": {}}
    run = bench.Runner(types.SimpleNamespace(routes=["hello", "echo"]),
                       fleet, tmp_path, results)
    run.checks()
    assert results["restricted"] == {"nginx-clojure": ["echo"]}
    assert "echo" not in fleet.servers["nginx-clojure"].routes
    # our own servers stay measured: the problem is theirs to fix
    assert "echo" in fleet.servers["jvm-loop"].routes
    assert results["checks"] == [
        "jvm-loop POST /echo: status 200, 0 bytes",
        "nginx-clojure POST /echo: status 200, 0 bytes "
        "(so /echo is not measured on it)"]
    assert [s.name for s in run.serving("echo")] == ["jvm-loop"]
