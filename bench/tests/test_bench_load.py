"""Unit tests of the benchmark's parsers (bench/benchsuite/load.py) on
recorded tool output in bench/tests/data/.  No servers, no tools run."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from benchsuite import load  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"


def sample(name):
    return (DATA / name).read_text()


def test_wrk_plain_run():
    r = load.parse_wrk(sample("wrk-hello.txt"))
    assert r["rps"] == pytest.approx(10870.23)
    assert r["requests"] == 22808
    assert r["latency_avg_ms"] == pytest.approx(12.24)
    assert r["non2xx"] == 0 and r["socket_errors"] == 0


def test_wrk_counts_non_2xx_answers():
    r = load.parse_wrk(sample("wrk-non2xx.txt"))
    assert r["non2xx"] == 41616
    assert r["rps"] == pytest.approx(19708.38)


def test_wrk_adds_up_socket_errors_and_reads_microseconds():
    text = sample("wrk-hello.txt").replace(
        "12.24ms", "516.63us").replace(
        "Requests/sec",
        "  Socket errors: connect 0, read 12, write 1, timeout 3\n"
        "Requests/sec")
    r = load.parse_wrk(text)
    assert r["socket_errors"] == 16
    assert r["latency_avg_ms"] == pytest.approx(0.51663)


def test_wrk_that_could_not_connect_is_an_error():
    with pytest.raises(ValueError, match="Requests/sec"):
        load.parse_wrk(sample("wrk-refused.txt"))


def test_wrk_lua_posts_the_body():
    script = load.wrk_lua("POST", [("Content-Type", "text/plain")], b"abc")
    assert script == ('wrk.method = "POST"\n'
                      'wrk.headers["Content-Type"] = "text/plain"\n'
                      'wrk.body = "abc"\n')


def test_oha_json_percentiles_in_ms():
    # oha 1.16.0 --output-format json, -q 5000 -z 3s against plain nginx
    r = load.parse_oha_json(sample("oha.json"))
    assert r["p50"] == pytest.approx(0.22073)
    assert r["p90"] == pytest.approx(0.610993)
    assert r["p99.9"] == pytest.approx(10.577121)
    assert r["p99.99"] == pytest.approx(23.550355)
    assert r["statuses"] == {"200": 14996}
    assert r["rps"] == pytest.approx(4993.88, abs=0.01)
    assert r["success"] == 1.0
    # the one request cut by -z's deadline is not a failure
    assert r["errors"] == 0


def test_oha_json_counts_real_errors():
    data = json.loads(sample("oha.json"))
    data["errorDistribution"]["connection closed before message completed"] = 7
    assert load.parse_oha_json(json.dumps(data))["errors"] == 7


def test_oha_text_percentiles_in_ms():
    # the same run's text report
    r = load.parse_oha_text(sample("oha.txt"))
    assert r["p50"] == pytest.approx(0.2301)
    assert r["p90"] == pytest.approx(0.5469)
    assert r["p99"] == pytest.approx(2.7954)
    assert r["p99.9"] == pytest.approx(4.4751)
    assert r["p99.99"] == pytest.approx(5.2819)
    assert r["rps"] == pytest.approx(4994.0634)
    assert r["statuses"] == {"200": 14994}
    assert r["success"] == pytest.approx(1.0)
    assert r["errors"] == 0


def test_oha_text_in_seconds_and_with_errors():
    text = (sample("oha.txt").replace("50.00% in 0.2301 ms",
                                      "50.00% in 0.0002 secs")
            + "  [3] connection reset\n")
    r = load.parse_oha_text(text)
    assert r["p50"] == pytest.approx(0.2)
    assert r["errors"] == 3


def test_oha_output_flags_follow_its_help():
    assert load.oha_output_flags(
        "      --output-format <OUTPUT_FORMAT>  [default: text]") == [
        "--output-format", "json"]
    assert load.oha_output_flags("  -j, --json   Print results as JSON") == [
        "--json"]
    assert load.oha_output_flags("  --no-tui  No realtime tui") == []


@pytest.mark.parametrize("data, complete", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", False),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", True),
    (b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", True),
    (b"HTTP/1.1 200 OK\r\nContent-Len", False),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
     False),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
     b"0\r\n\r\n", True),
])
def test_response_complete(data, complete):
    assert load.response_complete(data) is complete


def test_proc_status_memory_fields():
    fields = load.parse_proc_status(sample("proc-status.txt"))
    assert fields["VmRSS"] == 2168
    assert fields["VmPeak"] >= fields["VmSize"]
    assert "Name" not in fields and "Threads" not in fields


def test_thread_allocated_bytes_are_summed_in_their_units():
    text = ('"main" #1 prio=5 os_prio=0 cpu=37.68ms elapsed=2.09s allocated=9866K '
            'defined_classes=4 tid=0x1 nid=0x2 waiting\n'
            '"Reference Handler" #2 daemon prio=10 os_prio=0 cpu=0.11ms elapsed=2.06s '
            'allocated=0B defined_classes=0 tid=0x3\n'
            '"worker" #9 prio=5 cpu=1.0ms elapsed=2.0s allocated=544B defined_classes=0\n'
            '"big" #10 prio=5 cpu=1.0ms elapsed=2.0s allocated=250M defined_classes=0\n')
    assert load.parse_thread_allocated(text) == 9866 * 1024 + 544 + 250 * 1024 ** 2


def test_proc_stat_cpu_is_user_plus_system():
    stat = "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0"
    assert load.parse_proc_stat_cpu(stat) == 300
