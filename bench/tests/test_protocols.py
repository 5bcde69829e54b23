"""Unit tests of bench/protocols.py's pure parts: the pipelining Lua
script, the parser of pipelined answers, h2load's output (recorded in
bench/tests/data/) and the report.  No servers, no tools run."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import protocols  # noqa: E402
from benchsuite import servers  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"


def test_lua_writes_16_gets_at_once():
    lua = protocols.pipeline_lua("/hello", 16)
    assert "local depth = 16\n" in lua
    assert 'r[i] = wrk.format("GET", "/hello")' in lua
    # built once in init, returned whole by every request()
    assert "batch = table.concat(r)" in lua
    assert "request = function()\n  return batch\nend" in lua


def test_split_pipelined_answers():
    one = b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\nHello, Clojure!"
    chunked = (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
               b"7\r\nHello, \r\n8\r\nClojure!\r\n0\r\n\r\n")
    found, rest = protocols.split_responses(one + chunked + one[:30])
    assert found == [(200, b"Hello, Clojure!")] * 2
    assert rest == one[:30]
    found, rest = protocols.split_responses(chunked[:-2])
    assert found == [] and rest == chunked[:-2]
    found, _ = protocols.split_responses(
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n" + one)
    assert [s for s, _ in found] == [404, 200]


def test_parse_h2load():
    r = protocols.parse_h2load((DATA / "h2load.txt").read_text())
    assert r["rps"] == pytest.approx(54273.00)
    assert r["protocol"] == "h2" and r["tls"] == "TLSv1.2"
    assert r["done"] == r["succeeded"] == r["2xx"] == 108546
    assert r["failed"] == r["errored"] == r["timeout"] == r["4xx"] == 0
    assert protocols.h2_problem("nginx", r) is None


def test_h2load_problems():
    r = protocols.parse_h2load((DATA / "h2load.txt").read_text()
                               .replace("Application protocol: h2",
                                        "Application protocol: http/1.1"))
    assert "not h2" in protocols.h2_problem("enso", r)
    r = protocols.parse_h2load((DATA / "h2load.txt").read_text()
                               .replace(", 0 4xx", ", 12 4xx"))
    assert "12 failed" in protocols.h2_problem("enso", r)
    with pytest.raises(ValueError):
        protocols.parse_h2load("connect to 127.0.0.1 failed\n")
    # 108,546 requests on one connection: under keepalive_requests; on
    # one connection with the limit at 100,000: the run ended early
    r = protocols.parse_h2load((DATA / "h2load.txt").read_text())
    assert protocols.h2_problem("nginx", r, clients=2) is None
    assert "ended early" in protocols.h2_problem("nginx", r, clients=1)


def results():
    return {
        "started": "2026-11-27 23:00", "finished": "2026-11-27 23:10",
        "command": "bench/protocols.py --quick", "quick": True,
        "machine": {"cores": 2, "h2load": "h2load nghttp2/1.52.0"},
        "settings": {"duration": 3, "rounds": 2, "warmup": 2, "conns": 50,
                     "depth": 16, "h2_clients": 8, "h2_streams": 32},
        "servers": {"nginx": "plain", "jvm-loop": "loop", "enso": "enso"},
        "skipped": {"http-kit": "not built"},
        "pipeline": {"rps": {"nginx": [400000, 420000],
                             "jvm-loop": [200000, 210000],
                             "enso": [100000, None]},
                     "cpu_us": {"nginx": [4.0, 4.2], "jvm-loop": [9.0, 9.5]},
                     "checks": ["enso: 15 good answers of 16"],
                     "problems": [], "restricted": [],
                     "log_problems": {"nginx": []}},
        "h2": {"rps": {"nginx": [50000, 50000], "jvm-loop": [46000, 45000]},
               "cpu_us": {}, "checks": [], "problems": [],
               "restricted": [], "log_problems": {}},
        "h2_skipped": dict(protocols.H2_SKIPPED)}


def test_report():
    text = protocols.render(results())
    assert "Smoke run" in text
    assert "## Pipelined HTTP/1.1, depth 16" in text
    # rates per round, median, ratio to nginx with the rounds' ratios
    assert ("| jvm-loop | 200.0k, 210.0k | 205.0k | **0.50** (0.50, 0.50) "
            "| 9.2 |") in text
    # a failed round stays a hole, not a shifted ratio
    assert "| enso | 100.0k, n/a | 100.0k | **0.24** (0.25, n/a) | n/a |" \
        in text
    # nginx-jvm over each peer, per round
    assert "| jvm-loop | **2.00** (2.00, n/a) |" in text
    assert "- enso: 15 good answers of 16" in text
    assert "- http-kit: skipped, not built" in text
    assert "Error logs: no warnings or errors." in text
    assert ("jvm-loop >= 0.90 of plain nginx's HTTP/2 rate: 0.910, pass"
            in text)
    assert "- jetty (HTTP/2): not measured" in text


def test_report_peer_table_with_several_peers():
    r = results()
    r["pipeline"]["rps"]["http-kit"] = [20000, 21000]
    text = protocols.render(r)
    assert "| | enso | http-kit |\n|---|---|---|\n" in text
    assert "| jvm-loop | **2.00** (2.00, n/a) | **10.00** (10.00, 10.00) |" \
        in text


def test_report_survives_a_scenario_left_out():
    r = results()
    del r["h2"], r["h2_skipped"]
    text = protocols.render(r)
    assert "## HTTP/2" not in text and "## Pipelined" in text


def test_plain_nginx_tls_matches_the_launchers(tmp_path):
    # the launcher checks the files exist; their content is not read here
    tls = (str(tmp_path / "c.pem"), str(tmp_path / "k.pem"))
    for f in tls:
        Path(f).write_text("")
    conf = servers.nginx_conf("nginx", 1, tmp_path, tls=tls)
    assert "listen 127.0.0.1:1 ssl http2 backlog=4096;" in conf
    mine = servers.nginx_conf("jvm-loop", 1, tmp_path, tls=tls)
    for line in servers.TLS_CONF.splitlines():
        line = line.strip()
        if "%s" in line:
            line = line % tls[line.startswith("ssl_certificate_key")]
        assert line in conf and line in mine, line
    assert "ssl http2 backlog=4096;" in mine


def test_tls_fleet_only_for_what_it_can_start(tmp_path):
    with pytest.raises(ValueError):
        servers.Fleet(["nginx", "jetty"], tmp_path, tls=True)
    assert set(protocols.H2_SERVERS) <= set(servers.TLS_SERVERS)
