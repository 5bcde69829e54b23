"""Unit tests of bench/conns.py's pure parts: how N connections are spread,
/proc parsing, the clients' reports merged, the writer's listen line
multiplied.  No servers, no clients run."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import conns  # noqa: E402


def test_plan_spreads_600k_over_32_workers_and_clients():
    http, ws, workers, shares = conns.plan(600000)
    assert (http, ws, workers, len(shares)) == (300000, 300000, 32, 32)
    assert sum(h for h, _ in shares) == http
    assert sum(w for _, w in shares) == ws
    assert max(h + w for h, w in shares) == 18750


def test_plan_gives_the_odd_connection_and_remainders_out():
    http, ws, workers, shares = conns.plan(10001, workers=2, clients=3)
    assert (http, ws, workers) == (5001, 5000, 2)
    assert shares == [(1667, 1667), (1667, 1667), (1667, 1666)]


def test_plan_refuses_more_than_a_client_may_hold():
    with pytest.raises(ValueError, match="more --clients"):
        conns.plan(60000, clients=2)
    with pytest.raises(ValueError):
        conns.plan(1)


def test_client_sources_are_distinct_loopback_addresses():
    addrs = [conns.client_source(i) for i in range(1000)]
    assert len(set(addrs)) == 1000
    assert addrs[0] == "127.1.0.1" and addrs[199] == "127.1.0.200"
    assert addrs[200] == "127.1.1.1"
    assert all(int(a.split(".")[3]) in range(1, 255) for a in addrs)


def test_parse_kv_kb_reads_meminfo_and_smaps_rollup():
    meminfo = ("MemTotal:       24598324 kB\nSlab:             526176 kB\n"
               "SReclaimable:     476956 kB\nSUnreclaim:        49220 kB\n")
    assert conns.parse_kv_kb(meminfo, ("Slab", "SUnreclaim")) == {
        "Slab": 526176, "SUnreclaim": 49220}
    rollup = ("55d0c0a00000-7ffd7b5f1000 ---p 00000000 00:00 0  [rollup]\n"
              "Rss:               70512 kB\nPss:               35001 kB\n"
              "Pss_Anon:          30000 kB\n")
    assert conns.parse_kv_kb(rollup, ("Pss",)) == {"Pss": 35001}


def test_parse_sockstat_takes_the_tcp_line():
    text = ("sockets: used 1215\n"
            "TCP: inuse 40012 orphan 3 tw 120 alloc 40020 mem 57\n"
            "UDP: inuse 0 mem 39\n")
    assert conns.parse_sockstat(text) == {
        "inuse": 40012, "orphan": 3, "tw": 120, "alloc": 40020, "mem": 57}
    assert conns.parse_sockstat("") == {}


def test_percentile_is_nearest_rank():
    v = list(range(1, 101))
    assert conns.percentile(v, 50) == 50
    assert conns.percentile(v, 99) == 99
    assert conns.percentile(v, 100) == 100
    assert conns.percentile([7], 99) == 7
    assert conns.percentile([], 50) is None


def test_merge_reports_adds_counts_and_pools_each_broadcast():
    a = {"http_open": 10, "ws_open": 10, "timeouts": 1, "asks_http": 5,
         "first_error": "timeout: no answer in time",
         "error_kinds": {"timeout": 1},
         "rounds": [{"ns": 2, "lat_us": [3000, 1000]},
                    {"ns": 1, "lat_us": [500]}]}
    b = {"http_open": 10, "ws_open": 9, "closed_early": 2,
         "first_error": "closed early: EOF",
         "error_kinds": {"closed early": 2},
         "rounds": [{"ns": 2, "lat_us": [2000]}]}
    t = conns.merge_reports([a, b])
    assert t["http_open"] == 20 and t["ws_open"] == 19
    assert t["errors"] == 3
    assert t["error_kinds"] == {"timeout": 1, "closed early": 2}
    assert t["first_errors"] == ["closed early: EOF",
                                 "timeout: no answer in time"]
    assert [r["ns"] for r in t["rounds"]] == [1, 2]
    second = t["rounds"][1]
    assert second["got"] == 3
    assert (second["p50_ms"], second["max_ms"]) == (2.0, 3.0)


def test_log_problems_finds_errors_and_failed_sends():
    text = ("2026/11/27 15:22:42 [notice] 1#1: start worker process 2\n"
            "2026/11/27 15:22:43 [error] 2#2: *7 jvm: the handler threw\n"
            "connbench: broadcast send failed (1): java.io.IOException\n"
            "2026/11/27 15:22:44 [warn] 2#2: something mild\n"
            "2026/11/28 03:27:01 [warn] 5#5: 19500 worker_connections are "
            "not enough, reusing connections\n")
    bad = conns.log_problems(text)
    assert len(bad) == 3 and "[error]" in bad[0]
    assert "reusing connections" in bad[2]


def test_listen_lines_multiplies_the_writers_listen():
    conf = "    server {\n        listen 127.0.0.1:8080 backlog=4096;\n"
    out = conns.listen_lines(conf, 8080, 3)
    for k in (1, 2, 3):
        assert "listen 127.0.0.%d:8080 backlog=4096 reuseport;" % k in out
    assert "backlog=4096;" not in out
    assert out.count("jvm_warmup /ping") == 1
    assert "jvm_warmup" not in conns.listen_lines(conf, 8080, 1, warmup=None)
    with pytest.raises(ValueError):
        conns.listen_lines(conf, 9090, 2)


def test_conntrack_room_counts_what_is_there_already():
    assert conns.conntrack_needed(60000, 600000) == 60000 + 720000 + 10000


def test_slabinfo_growth_names_the_caches_that_grew():
    head = ("slabinfo - version: 2.1\n# name            <active_objs> "
            "<num_objs> <objsize> <objperslab> <pagesperslab> : tunables\n")
    before = conns.parse_slabinfo(
        head + "TCP  10  20 2368 13 8 : tunables 0 0 0 : slabdata 2 2 0\n"
               "filp 100 128  256 16 1 : tunables 0 0 0 : slabdata 8 8 0\n")
    after = conns.parse_slabinfo(
        head + "TCP  9000 9000 2368 13 8 : tunables 0 0 0 : slabdata 1 1 0\n"
               "filp 100 100  256 16 1 : tunables 0 0 0 : slabdata 8 8 0\n")
    assert before == {"TCP": 20 * 2368, "filp": 128 * 256}
    assert conns.slab_growth(before, after) == [
        ("TCP", round((9000 - 20) * 2368 / 1048576, 1))]


def test_summary_of_a_run_stopped_half_way_says_why():
    r = {"server": "nginx-jvm", "conns": 600000, "http": 300000,
         "ws": 300000, "workers": 40, "clients": 40, "ok": False,
         "http_open": 299990, "exception": "TimeoutError: 39 of 40 clients"}
    text = conns.summary(r)
    assert "FAILED" in text and "299990 HTTP open of 300000" in text
    assert "stopped by: TimeoutError: 39 of 40 clients" in text
    assert "broadcast 1" not in text


def test_summary_gives_each_broadcast_and_the_worker_balance():
    r = {"server": "nginx-jvm", "conns": 4, "http": 2, "ws": 2,
         "workers": 2, "clients": 1, "ok": True, "workers_conns": [130, 98],
         "rounds": [{"ns": 1, "got": 2, "p50_ms": 1.5, "p99_ms": 2.0,
                     "max_ms": 2.0}],
         "publish": [{"server_cpu_s": 0.01, "server_user_s": 0.0,
                      "server_sys_s": 0.01, "server_us_per_socket": 5000.0,
                      "clients_cpu_s": 0.0}]}
    text = conns.summary(r)
    assert "OK" in text and "descriptors per worker 98 to 130" in text
    assert "broadcast 1: 2 of 2 got it; p50 1.5 ms" in text


def test_multi_accept_goes_into_the_writers_events_block():
    conf = "events {\n    worker_connections 19500;\n}\nhttp {\n}\n"
    out = conns.multi_accept(conf)
    assert "events {\n    multi_accept on;\n    worker_connections 19500;" in out
    with pytest.raises(ValueError):
        conns.multi_accept("http {\n}\n")


def test_latency_histograms_merge_and_give_percentiles():
    a = {"1": 50, "2": 40}
    b = {"2": 9, "455": 1}
    h = conns.hist_merge([a, b, None])
    assert h == {1: 50, 2: 49, 455: 1}
    assert conns.hist_summary(h) == {"n": 100, "p50_ms": 1, "p99_ms": 2,
                                     "max_ms": 455}
    assert conns.hist_summary({}) is None
    assert conns.hist_diff({1: 5, 2: 3}, {1: 5, 2: 1}) == {2: 2}


def test_merge_reports_pools_the_latency_histograms():
    t = conns.merge_reports([{"lat_first": {"3": 2}, "lat_ask": {"1": 1}},
                             {"lat_first": {"3": 1, "20": 1}}])
    assert t["hist_first"] == {3: 3, 20: 1}
    assert t["hist_ask"] == {1: 1} and t["hist_connect"] == {}


def test_tcp_counters_parse_header_and_value_lines():
    text = ("TcpExt: SyncookiesSent ListenOverflows ListenDrops\n"
            "TcpExt: 1 20 21\n"
            "IpExt: InNoRoutes\nIpExt: 0\n")
    assert conns.parse_snmp(text) == {"SyncookiesSent": 1,
                                      "ListenOverflows": 20, "ListenDrops": 21}


def test_cpu_shares_are_percent_of_the_time_between():
    a = {"user": 100, "system": 50, "idle": 850, "steal": 0}
    b = {"user": 300, "system": 150, "idle": 1550, "steal": 0}
    assert conns.cpu_shares(a, b) == {"user": 20.0, "system": 10.0,
                                      "idle": 70.0}
