"""bench/websocket.py's pure helpers: the echo results' keys (connections
and messages in flight) and the report's tables of them."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import websocket  # noqa: E402


def run(rps, p99, cpu=None):
    r = {"rps": rps, "p50_ms": 0.1, "p99_ms": p99, "p999_ms": 1.0,
         "client_cpu_pct": 50, "errors": 0, "connect_errors": 0}
    if cpu is not None:
        r["server_cpu_us_per_rt"] = cpu
    return r


def results(echo):
    return {"date": "d", "command": "c", "machine": "m", "nginx": "n",
            "java": "j", "servers": ["jvm-ring", "jetty"],
            "args": {"rounds": 1, "duration": 3}, "echo": echo}


def test_echo_keys_round_trip_and_one_in_flight_keeps_the_old_key():
    assert websocket.echo_key(100, 1) == "100"
    assert websocket.echo_key(100, 8) == "100x8"
    for conns, n in ((100, 1), (1000, 8), (5, 16)):
        assert websocket.parse_echo_key(websocket.echo_key(conns, n)) == (
            conns, n)
    assert websocket.parse_echo_key("1000") == (1000, 1)


def test_inflight_table_puts_the_levels_side_by_side():
    echo = {"100": {"jvm-ring": [run(10000, 1.5, 20.0), run(12000, 2.5, 30.0),
                                 run(11000, 2.0, 25.0)],
                    "jetty": [run(5000, 3.0, 50.0)]},
            "100x8": {"jvm-ring": [run(40000, 4.0, 10.0)]}}
    lines = websocket.inflight_table(echo)
    text = "\n".join(lines)
    assert "1 in flight: msg/s | server CPU µs/msg | p99 ms" in text
    assert "8 in flight: msg/s" in text
    # medians of the rounds; a server not run at a level shows dashes
    assert "| 100 | jvm-ring | 11000 | 25.0 | 2.00 | 40000 | 10.0 | 4.00 |" \
        in lines
    assert "| 100 | jetty | 5000 | 50.0 | 3.00 | - | - | - |" in lines


def test_no_inflight_table_for_old_results_and_sections_per_level():
    old = {"100": {"jvm-ring": [run(10000, 1.5)]}}
    assert websocket.inflight_table(old) == []
    text = websocket.report(results(dict(old, **{
        "100x8": {"jvm-ring": [run(30000, 3.0)]}})))
    assert "## Echo, 100 connections, 1 message in flight each" in text
    assert "## Echo, 100 connections, 8 messages in flight each" in text
    assert "## Echo by messages in flight" in text
    assert "## Echo by messages in flight" not in websocket.report(
        results(old))
