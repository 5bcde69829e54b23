"""Unit tests of the realapp driver (bench/realapp/driver.py): the bounds
that make a step hold, the wall of a ladder, and the report, on made-up
measurements.  No servers, no tools run."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "realapp"))

import driver  # noqa: E402


def step(rate, p99=3.0, p999=5.0, rps=None, errors=0, non200=0):
    return {"rate": rate, "rps": rate if rps is None else rps,
            "p50": 1.0, "p90": 2.0, "p99": p99, "p99.9": p999,
            "p99.99": p999 * 2, "max": p999 * 3, "errors": errors,
            "non200": non200, "server_cores": 0.7, "db_cores": 0.2}


def test_a_step_holds_within_every_bound():
    assert driver.holds(step(1000), 1000)
    assert not driver.holds(step(1000, p99=driver.P99_MS), 1000)
    assert not driver.holds(step(1000, p999=driver.P999_MS), 1000)
    assert not driver.holds(step(1000, errors=1), 1000)
    assert not driver.holds(step(1000, non200=1), 1000)
    # a server that serves less than it is asked does not hold the rate
    assert not driver.holds(step(1000, rps=900), 1000)
    assert driver.holds(step(1000, rps=960), 1000)


def test_queries_and_updates_ask_for_twenty():
    assert driver.path_of("queries") == "/queries?queries=20"
    assert driver.path_of("updates") == "/updates?queries=20"
    assert driver.path_of("json") == "/json"
    assert all(r == sorted(r) for r in driver.LADDERS.values())


def meta(types):
    return {"date": "2026-01-02 03:04", "machine": "2 cores", "note": "n",
            "command": "bench/realapp/driver.py --quick", "oha": "-q RATE",
            "warmup": 2, "sweep_step": 3, "postgres": "postgres 15",
            "types": types, "settings": "2 workers"}


def test_the_report_ranks_the_walls_and_names_failures():
    lad = lambda wall, rates: {"wall": wall, "steps": [
        dict(step(r), ok=r <= (wall or 0)) for r in rates]}
    results = [
        {"server": "jvm-pool", "description": "pool",
         "verify": {"json": [], "fortunes": []},
         "ladders": {"json": lad(2000, [1000, 2000, 4000]),
                     "fortunes": lad(None, [500])},
         "sweeps": {"plaintext": [dict(step(0), conns=16)]}},
        {"server": "http-kit", "description": "hk",
         "verify": {"json": [], "fortunes": ["the HTML differs at token 9"]},
         "ladders": {"json": lad(4000, [1000, 2000, 4000, 8000])},
         "sweeps": {}},
        {"server": "nginx-clojure", "description": "nc",
         "skipped": "not built: make bench-peers"},
    ]
    text = driver.render(results, meta(["json", "fortunes"]),
                         {"json": "x-json.png"})
    json_part = text.split("### json")[1].split("###")[0]
    # the highest wall first
    assert json_part.index("| http-kit | 4000 |") \
        < json_part.index("| jvm-pool | 2000 |")
    assert "![json](x-json.png)" in json_part
    assert "Highest: http-kit at 4000 req/s, 2.00\u00d7 the next " \
        "(jvm-pool, 2000 req/s)." in json_part
    assert "Only" not in json_part
    # what the server did past its wall: where the CPU went
    assert "| 4000/s: 4000, 3.00 ms, 0.70 / 0.20 |" in json_part
    assert "| jvm-pool | below 500 |" in text
    assert "FAIL: the HTML differs at token 9" in text
    assert "not run: not built: make bench-peers" in text
    assert "| plaintext | jvm-pool | 16 |" in text
    assert "bench/realapp/driver.py --quick" in text
