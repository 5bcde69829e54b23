"""Unit tests of the benchmark's report (bench/benchsuite/report.py) on a
recorded set of measurements.  No servers, no tools run."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from benchsuite import report  # noqa: E402


def results(**changes):
    r = {
        "started": "2025-01-02 03:04", "finished": "2025-01-02 03:40",
        "command": "bench/bench.py",
        "machine": {"cores": 2, "memory": "23.4 GiB", "kernel": "Linux 6.1",
                    "nginx": "nginx version: nginx/1.22.1",
                    "jdks": ["openjdk version \"17.0.16\""],
                    "wrk": "wrk debian/4.1.0", "oha": "oha 1.10.0",
                    "build": "commit abc1234; module built 2025-01-02 03:00"},
        "uptime_before": "up 1 day, load average: 0.10, 0.2, 0.3",
        "load_before": 0.1, "uptime_after": "load average: 2.1",
        "load_after": 2.1,
        "settings": {"duration": 10, "rounds": 3, "warmup": 5, "conns": 50,
                     "latency_duration": 15, "idle": 10000},
        "servers": {"nginx": "plain nginx", "jvm-loop": "loop",
                    "jvm-pool": "pool", "jetty": "Jetty"},
        "routes": ["hello", "file", "echo"],
        "throughput": {
            "nginx": {"hello": [100000, 90000, 110000],
                      "file": [70000, 72000, 71000]},
            "jvm-loop": {"hello": [95000, 94000, 80000],
                         "file": [70000, 69800, 69700], "echo": [30000]},
            "jvm-pool": {"hello": [70000, 74000, 76000]},
            "jetty": {"hello": [34000, 33000, 35000]},
        },
        "latency": {
            "nginx": {"rate": 10000, "rps": 9999.0, "p50": 0.3, "p90": 0.5,
                      "p99": 0.8, "p99.9": 2.0, "p99.99": 9.8,
                      "statuses": {"200": 150000}, "errors": 0},
            "jvm-loop": {"rate": 10000, "rps": 9990.0, "p50": 0.4,
                         "p90": 0.6, "p99": 1.0, "p99.9": 2.9,
                         "p99.99": 10.0, "statuses": {"200": 149000},
                         "errors": 0},
            "jvm-pool": {"rate": 10000, "rps": 9000.0, "p50": 0.8,
                         "p90": 2.0, "p99": 4.0, "p99.9": 3.1,
                         "p99.99": 12.0, "statuses": {"200": 1, "503": 2},
                         "errors": 0},
            "jetty": {"rate": 5000, "error": "oha failed (1): boom"},
        },
        "memory": {
            "nginx": {"start_kb": 8000, "start_worker_kb": 2900,
                      "rest_kb": 9000, "rest_worker_kb": 3000,
                      "idle": {"held": 10000, "failed": 0, "before_kb": 9000,
                               "after_kb": 14000, "per_conn_bytes": 512.0}},
            "jvm-loop": {"start_kb": 150000, "start_worker_kb": 40960,
                         "rest_kb": 200000, "rest_worker_kb": 59000,
                         "idle": {"held": 10000, "failed": 0,
                                  "before_kb": 200000, "after_kb": 215000,
                                  "per_conn_bytes": 1536.0}},
        },
        "checks": [], "wrk_problems": [], "log_problems": {},
    }
    r.update(changes)
    return r


def targets(r):
    return {(t.split(" (")[0], s): (m, ok)
            for t, s, m, ok in report.evaluate_targets(r)}


def test_throughput_targets_use_medians_against_nginx():
    t = targets(results())
    assert t[("/hello >= 0.92 of nginx", "jvm-loop")] == ("0.940", True)
    assert t[("/file >= 0.98 of nginx", "jvm-loop")] == ("0.983", True)
    assert t[("/hello >= 0.75 of nginx", "jvm-pool")] == ("0.740", False)
    # servers not run are not judged
    assert ("/hello >= 0.92 of nginx", "jvm-java") not in t


def test_latency_target_compares_p999_at_the_same_rate():
    rows = {s: (m, ok) for tgt, s, m, ok in report.evaluate_targets(results())
            if tgt.startswith("p99.9")}
    assert rows["jvm-loop"] == ("2.90 ms (1.45x)", True)
    assert rows["jvm-pool"] == ("3.10 ms (1.55x)", False)
    r = results()
    r["latency"]["jvm-loop"]["rate"] = 20000
    rows = {s: ok for tgt, s, m, ok in report.evaluate_targets(r)
            if tgt.startswith("p99.9")}
    assert rows["jvm-loop"] is None          # different rates: no verdict


def test_memory_targets():
    t = targets(results())
    assert t[("idle keep-alive connection <= 1 KB", "jvm-loop")] == (
        "1536 bytes", False)
    assert t[("a worker", "jvm-loop")] == (
        "57.6 MB (40.0 MB before any load)", True)
    assert ("idle keep-alive connection <= 1 KB", "nginx") not in t


def test_report_sections_and_marks():
    text = report.render(results())
    assert text.startswith("# nginx-jvm benchmark, 2025-01-02 03:04")
    for heading in ("## Machine", "## Targets", "## Throughput",
                    "### /hello", "### /echo", "## Latency", "## Memory",
                    "## Checks"):
        assert "\n%s" % heading in text
    assert "| jvm-loop | 94.0k | 0.94 | 2.76 | 95.0k 94.0k 80.0k |" in text
    assert "| nginx | n/a | | | |" in text           # nginx cannot echo
    assert "| jvm-pool | 10000 | 9.0k (not held) |" in text
    assert "| 1.55x | 2 |" in text                   # the 503s counted
    assert "oha failed (1): boom" in text
    assert "**FAIL**" in text and "| pass |" in text
    assert "busy" not in text
    assert "- nginx-jvm: commit abc1234; module built" in text
    assert "all as expected" in text
    assert ("| jvm-loop | 146.5 MB | 40.0 MB | 195.3 MB | 57.6 MB | 10000 "
            "| 195.3 MB → 210.0 MB | 1536 bytes |") in text


def test_report_names_extra_jvm_options():
    r = results()
    assert "jvm_options" not in report.render(r)
    r["settings"]["jvm_options"] = "-Xmx64m"
    assert "ran with `jvm_options -Xmx64m`" in report.render(r)


def test_report_says_when_the_machine_was_busy():
    text = report.render(results(load_before=9.3, load_after=10.5))
    assert "**The machine was busy** (load average 9.3 before" in text


def test_report_lists_problems():
    text = report.render(results(
        checks=["jvm-loop GET /json: status 500"],
        wrk_problems=["jetty /hello: 3 non-2xx answers"],
        log_problems={"jvm-loop": ["2025/01/02 [error] 1#1: jvm: boom"]}))
    assert "**1 problems**" in text
    assert "- jvm-loop GET /json: status 500" in text
    assert "- jetty /hello: 3 non-2xx answers" in text
    assert "`jvm-loop`: `2025/01/02 [error] 1#1: jvm: boom`" in text


def test_report_without_latency_and_memory():
    r = results(memory={})
    del r["latency"]
    text = report.render(r)
    assert "## Latency" not in text and "## Memory" not in text
    assert "## Throughput" in text
    r["latency_note"] = "Not measured: oha is missing and so is cargo."
    assert "Not measured: oha is missing" in report.render(r)


def with_peers(**changes):
    r = results(**changes)
    r["servers"].update({"nginx-clojure": "nginx-clojure", "http-kit": "hk"})
    r["throughput"]["nginx-clojure"] = {"hello": [90000, 100000, 95000],
                                        "file": [60000, 61000, 62000]}
    r["throughput"]["http-kit"] = {"hello": [60000, 62000, 61000],
                                   "file": [70000, 69000, 71000],
                                   "echo": [40000]}
    return r


def test_peer_ratios_are_nginx_jvm_over_the_peer():
    found = report.peer_comparison(with_peers())
    loop_nc = {route: (r, rounds) for route, r, rounds
               in found[("jvm-loop", "nginx-clojure")]}
    assert round(loop_nc["hello"][0], 3) == round(94000 / 95000, 3)
    assert loop_nc["hello"][1] == [95000 / 90000, 94000 / 100000,
                                   80000 / 95000]
    assert round(loop_nc["file"][0], 3) == round(69800 / 61000, 3)
    assert "echo" not in loop_nc              # nginx-clojure not measured
    echo = found[("jvm-loop", "http-kit")][-1]
    assert echo[0] == "echo" and round(echo[1], 2) == 0.75
    assert found[("jvm-pool", "http-kit")] == [
        ("hello", 74000 / 61000, [70000 / 60000, 74000 / 62000,
                                  76000 / 61000])]
    assert ("jvm-java", "http-kit") not in found
    # Jetty 12 is a peer too: the one measured without the others
    assert {p for _, p in report.peer_comparison(results())} == {"jetty"}


def test_no_per_round_ratios_when_a_round_is_missing():
    r = with_peers()
    r["throughput"]["http-kit"]["hello"] = [60000, 62000]
    row = report.peer_comparison(r)[("jvm-loop", "http-kit")][0]
    assert row[0] == "hello" and row[2] == []


def test_standing_has_a_level_band_and_says_when_rounds_disagree():
    assert report.standing(1.10) == "ahead"
    assert report.standing(1.02) == "level"
    assert report.standing(0.98) == "level"
    assert report.standing(0.90) == "behind"
    assert report.standing(1.10, [1.2, 1.0, 1.1]) == "ahead"
    assert report.standing(1.10, [1.2, 0.9, 1.1]) == "unclear"
    assert report.standing(0.99, [1.0, 0.9, 0.99]) == "level"


def test_report_says_where_nginx_jvm_is_ahead_and_behind():
    text = report.render(with_peers())
    assert "\n## Against the peers" in text
    assert ("| route | server | vs nginx-clojure | vs http-kit | vs jetty |\n"
            "|---|---|---|---|---|\n") in text
    assert ("| /hello | jvm-loop | 0.99 (1.06 0.94 0.84) "
            "| 1.54 (1.58 1.52 1.31) |") in text
    assert "| /echo | jvm-loop | n/a | 0.75 |" in text
    assert ("- jvm-loop against nginx-clojure: ahead on /file (1.14); "
            "unclear on /hello (0.99).") in text
    assert ("- jvm-loop against http-kit: ahead on /hello (1.54); "
            "level on /file (1.00); behind on /echo (0.75).") in text
    r = results()
    del r["throughput"]["jetty"]
    assert "## Against the peers" not in report.render(r)


def test_report_says_why_a_peer_did_not_run():
    text = report.render(results(
        skipped={"http-kit": "not built: no source at /x"},
        restricted={"nginx-clojure": ["echo", "headers"]}))
    assert "- `http-kit`: not run: not built: no source at /x" in text
    assert "- `nginx-clojure`: not measured on /echo, /headers" in text


def test_cost_per_request_is_the_median_of_the_rounds():
    r = results()
    r["cost"] = {"jvm-loop": {"hello": [
        {"cpu_us_per_req": 12.0, "alloc_per_req": 700},
        {"cpu_us_per_req": 10.0, "alloc_per_req": 500},
        {"cpu_us_per_req": 11.0, "alloc_per_req": 600}]},
        "nginx": {"hello": [{"cpu_us_per_req": 5.0}]}}
    text = report.render(r)
    assert "## Allocation and CPU per request" in text
    row = [l for l in text.splitlines() if l.startswith("| jvm-loop | 600 | 11.0")]
    assert row, text
    assert [l for l in text.splitlines() if l.startswith("| nginx | - | 5.0")]


def test_issue_37_targets_pool_over_loop_and_the_lead_over_every_peer():
    rows = {(t, s): (m, ok) for t, s, m, ok
            in report.evaluate_targets(with_peers())}
    # jvm-pool's median /hello 74k over jvm-loop's 94k
    assert rows[("/hello >= 0.92 of jvm-loop's rate", "jvm-pool")] == (
        "%.3f" % (74000 / 94000), False)
    # the closest peer on /hello is nginx-clojure (95k), on /file http-kit
    assert rows[("/hello ahead of every peer", "jvm-loop")] == (
        "%.3f of nginx-clojure (the closest)" % (94000 / 95000), False)
    assert rows[("/file ahead of every peer", "jvm-loop")] == (
        "%.3f of http-kit (the closest)" % (69800 / 70000), False)
    assert not any(s == "jvm-coloop" for _, s in rows)
