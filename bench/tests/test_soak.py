"""Unit tests of the soak's verdict (bench/soak.py) on made-up samples:
what it calls flat, and each way of not being flat.  No servers run."""

import argparse
import copy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import soak  # noqa: E402

ARGS = argparse.Namespace(aborts=10000, rss_growth=32)


def flat_result():
    samples = [{"t": 0, "label": "start", "rss": 120 * 1024, "fds": 42, "tasks": 0},
               {"t": 20, "label": "warm", "rss": 110 * 1024, "fds": 42, "tasks": 0}]
    samples += [{"t": 20 + 10 * i, "label": "load", "rss": 112 * 1024,
                 "fds": 42, "tasks": 0} for i in range(1, 18)]
    samples.append({"t": 200, "label": "end", "rss": 112 * 1024, "fds": 42,
                    "tasks": 0})
    return {"mode": "loop", "pid": 7, "workers": [7], "requests": 6000000,
            "errors": 0, "bad": 0, "aborts": 10000, "abort_failures": [],
            "problems": [], "samples": samples}


def test_flat_run_passes():
    assert soak.verdict(flat_result(), ARGS) == []


def test_rss_growth_after_warm_up_fails():
    res = flat_result()
    res["samples"][-1]["rss"] = 150 * 1024
    why = soak.verdict(res, ARGS)
    assert any("RSS grew 40.0 MB after warm-up" in w for w in why)


def test_steady_climb_in_the_second_half_fails():
    res = flat_result()
    # 1 MB per sample from the middle on: under the total bound, over half
    for i, s in enumerate(res["samples"][10:]):
        s["rss"] = 112 * 1024 + (i + 1) * 2 * 1024
    why = soak.verdict(res, ARGS)
    assert any("second half" in w for w in why), why


def test_leftovers_fail():
    res = flat_result()
    res["samples"][-1]["tasks"] = 3
    res["samples"][-1]["fds"] = 45
    why = soak.verdict(res, ARGS)
    assert "3 live tasks at the end" in why
    assert "45 descriptors open at the end, 42 after warm-up" in why


def test_crash_errors_and_log_fail():
    res = copy.deepcopy(flat_result())
    res["workers"] = [9]
    res["bad"] = 2
    res["aborts"] = 9990
    res["problems"] = ["[alert] worker process 7 exited on signal 11"]
    why = soak.verdict(res, ARGS)
    assert len(why) == 4, why


def test_spark_scales_to_range():
    assert soak.spark([1, 1, 1]) == "   "
    line = soak.spark([0, 5, 10])
    assert line[0] == " " and line[-1] == "@"
