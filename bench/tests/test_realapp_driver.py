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


class NoCpu:
    def __init__(self, server, db):
        self.server_cores = self.db_cores = 0.5

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def test_the_wall_is_a_rate_that_holds_for_the_long_run(monkeypatch):
    """The short steps pass 1000 and 2000 and break at 4000; 2000 then
    breaks in the 60 s run, so the wall is 1000, held at length."""
    runs = []

    def fake_oha(oha, url, duration, conns, rate=None):
        runs.append((duration, rate))
        if rate is None:
            return step(0)
        long_ = duration == 60
        return step(rate, p99=50.0 if rate >= 4000 or (long_ and rate == 2000)
                    else 3.0)

    monkeypatch.setattr(driver, "run_oha", fake_oha)
    monkeypatch.setattr(driver, "CpuMeter", NoCpu)

    class Server:
        name, port = "s", 1

    class Args:
        rates, max_steps, step, warmup, conns, hold, retries = (
            [1000, 2000, 4000, 8000], 10, 10, 10, 256, 60, 0)

    lad = driver.ladder("oha", Server, None, "json", Args)
    assert lad["wall"] == 1000
    assert [s["rate"] for s in lad["steps"]] == [1000, 2000, 4000]
    assert [(s["rate"], s["ok"]) for s in lad["held"]] == [(2000, False),
                                                           (1000, True)]
    assert runs == [(10, None), (10, 1000), (10, 2000), (10, 4000),
                    (60, 2000), (60, 1000)]
    # the report's figures at the wall are the long run's
    text = driver.render([{"server": "s", "description": "d",
                           "verify": {"json": []},
                           "ladders": {"json": lad}, "sweeps": {}}],
                         meta(["json"]), {})
    assert "| s | 1000 (held 60 s) |" in text
    Args.hold = 0
    runs.clear()
    assert driver.ladder("oha", Server, None, "json", Args)["wall"] == 2000


def test_a_broken_step_is_run_again_before_the_ladder_stops(monkeypatch):
    """2000 breaks once (a pause) and holds when run again: the ladder
    goes on; 4000 breaks twice: it stops there."""
    runs = []

    def fake_oha(oha, url, duration, conns, rate=None):
        runs.append(rate)
        if rate is None:
            return step(0)
        first_2000 = rate == 2000 and runs.count(2000) == 1
        return step(rate, p99=50.0 if rate >= 4000 or first_2000 else 3.0)

    monkeypatch.setattr(driver, "run_oha", fake_oha)
    monkeypatch.setattr(driver, "CpuMeter", NoCpu)

    class Server:
        name, port = "s", 1

    class Args:
        rates, max_steps, step, warmup, conns, hold, retries = (
            [1000, 2000, 4000, 8000], 10, 10, 10, 256, 0, 1)

    lad = driver.ladder("oha", Server, None, "json", Args)
    assert lad["wall"] == 2000
    assert runs == [None, 1000, 2000, 2000, 4000, 4000]
    assert [(s["rate"], s["ok"], s["attempt"]) for s in lad["steps"]] == [
        (1000, True, 0), (2000, False, 0), (2000, True, 1),
        (4000, False, 0), (4000, False, 1)]
    text = driver.render([{"server": "s", "description": "d",
                           "verify": {"json": []},
                           "ladders": {"json": lad}, "sweeps": {}}],
                         meta(["json"]), {})
    assert "| s | 2000 (again) |" in text


WRK_PIPELINED = """Running 3s test @ http://127.0.0.1:1/plaintext
  1 threads and 256 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    12.31ms    3.20ms  48.10ms   81.00%
    Req/Sec    80.00k     5.00k   90.00k    70.00%
  Latency Distribution
     50%   11.90ms
     75%   13.00ms
     90%   15.50ms
     99%  620.00us
  240000 requests in 3.00s, 30.00MB read
Requests/sec:  80000.00
Transfer/sec:     10.00MB
"""


def test_wrk_latency_distribution_in_ms():
    got = driver.parse_wrk_latency(WRK_PIPELINED)
    assert got == {"p50": 11.9, "p75": 13.0, "p90": 15.5, "p99": 0.62,
                   "max": 48.1}
    assert driver.parse_wrk_latency("no latency")["p99"] is None


def test_the_pipelined_run_sends_sixteen_per_write(monkeypatch):
    """wrk with pipeline.lua and `-- 16` after the URL; the parsed run."""
    seen = {}

    class Done:
        stdout, stderr = WRK_PIPELINED, ""

    def fake_run(cmd, **kw):
        seen["cmd"] = cmd
        return Done

    monkeypatch.setattr(driver.subprocess, "run", fake_run)
    r = driver.run_wrk_pipelined("http://h:1/plaintext", 3, 256)
    cmd = seen["cmd"]
    assert cmd[0] == "wrk" and "-c256" in cmd and "--latency" in cmd
    assert cmd[cmd.index("-s") + 1].endswith("pipeline.lua")
    assert cmd[-3:] == ["http://h:1/plaintext", "--", "16"]
    assert (r["rps"], r["p99"], r["errors"], r["non200"], r["depth"]) == (
        80000.0, 0.62, 0, 0, 16)
    script = driver.PIPELINE_SCRIPT.read_text()
    assert "string.rep(wrk.format(), depth)" in script


def test_the_report_has_the_pipelined_plaintext_beside_the_unpipelined():
    piped = dict(step(0), conns=256, rps=80000.0, depth=16)
    results = [
        {"server": "jvm-loop", "description": "loop",
         "verify": {"plaintext": []}, "ladders": {},
         "sweeps": {"plaintext": [dict(step(0), conns=256, rps=30000.0)]},
         "pipelined": [piped]},
        {"server": "enso", "description": "enso", "verify": {}, "ladders": {},
         "sweeps": {}, "pipelined": [dict(piped, rps=50000.0)]},
        {"server": "jetty", "description": "j", "verify": {}, "ladders": {},
         "sweeps": {}, "pipelined_skipped": "no wrk"},
    ]
    text = driver.render(results, meta(["plaintext"]), {})
    part = text.split("## plaintext pipelined 16 deep")[1]
    assert "| jvm-loop | 256 | 80000 | 30000 | 1.00 | 2.00 | 3.00 | 15.00 " \
        "| 0 | 0.70 |" in part
    assert "| enso | 256 | 50000 | - |" in part
    assert "| jetty | not run: no wrk |" in part
    # no section when nothing was pipelined
    assert "pipelined" not in driver.render(results[:0], meta([]), {})


def test_quick_runs_one_pipelined_level_and_the_default_two():
    assert driver.QUICK["pipeline"] == "256"
    assert driver.DEFAULTS["pipeline"] == "256,1024"


def test_jetty_is_jetty_12_and_enso_is_a_server():
    import servers
    assert "Jetty 12" in servers.SERVERS["jetty"]
    assert "enso" in servers.SERVERS
    # no Debian Ring jar on the handler's class path: Jetty's brings Ring's
    assert not any("ring-core" in p for p in servers.classpath())


def test_a_peer_not_built_is_skipped_with_why(monkeypatch):
    import servers
    monkeypatch.setattr(servers, "HICCUP", __file__)
    monkeypatch.setattr(servers, "DATA_JSON", __file__)
    monkeypatch.setattr(servers, "LIBS", Path(__file__).parent)
    monkeypatch.setattr(servers.Path, "exists", lambda self: True)
    asked = []

    def status(name):
        asked.append(name)
        return (None, "not built: %s" % name) if name in ("enso", "jetty") \
            else ("built", None)

    monkeypatch.setattr(servers.suite, "peer_status", status)
    assert servers.unavailable("jetty") == "not built: jetty"
    assert servers.unavailable("enso") == "not built: enso"
    assert servers.unavailable("http-kit") is None
    assert servers.unavailable("jvm-pool") is None
    assert asked == ["jetty", "enso", "http-kit"]
