"""The realapp report's plots, run with Debian's python3 (its
python3-matplotlib): for each test type, latency by percentile per server at
the highest rate all of them held (else each one's wall), and p99 by rate
(the ladder).

    /usr/bin/python3 bench/realapp/plot.py DATA.json OUT_DIR STEM

Prints {type: png file name} as JSON.
"""

import json
import sys
from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import NullLocator, ScalarFormatter  # noqa: E402

PCTS = [("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9),
        ("p99.99", 99.99), ("max", 99.999)]


def nines(p):
    """x position: 1/(1-p): 50% -> 2, 99% -> 100, ..."""
    return 1.0 / (1.0 - p / 100.0)


def main(data_file, out_dir, stem):
    data = json.loads(Path(data_file).read_text())
    made = {}
    for t in data["meta"]["types"]:
        runs = [(r["server"], r["ladders"][t]) for r in data["results"]
                if t in r.get("ladders", {})]
        if not runs:
            continue
        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
        walls = [lad["wall"] for _, lad in runs]
        common = min(walls) if all(walls) else None
        for server, lad in runs:
            rate = common or lad["wall"] or lad["steps"][0]["rate"]
            # the long run at that rate where there is one
            step = [s for s in lad.get("held", []) + lad["steps"]
                    if s["rate"] == rate]
            if step:
                s = step[0]
                xs = [nines(p) for k, p in PCTS if s.get(k) is not None]
                ys = [s[k] for k, p in PCTS if s.get(k) is not None]
                left.plot(xs, ys, marker="o", label="%s (%d/s)"
                          % (server, rate))
            right.plot([s["rate"] for s in lad["steps"]],
                       [s["p99"] for s in lad["steps"]], marker="o",
                       label=server)
        left.set_xscale("log")
        left.set_yscale("log")
        left.set_xticks([nines(p) for _, p in PCTS])
        left.set_xticklabels([k for k, _ in PCTS])
        left.xaxis.set_minor_locator(NullLocator())
        for axis in (left.yaxis, right.yaxis):
            axis.set_major_formatter(ScalarFormatter())
        left.set_xlabel("percentile")
        left.set_ylabel("latency (ms)")
        left.set_title("%s: latency by percentile" % t)
        left.grid(True, which="both", alpha=0.3)
        left.legend(fontsize="small")
        right.axhline(10, color="grey", linestyle="--", linewidth=0.8)
        right.set_yscale("log")
        right.set_xlabel("rate (requests/s)")
        right.set_ylabel("p99 (ms)")
        right.set_title("%s: p99 by rate (bound: 10 ms)" % t)
        right.grid(True, which="both", alpha=0.3)
        right.legend(fontsize="small")
        fig.tight_layout()
        name = "%s-%s.png" % (stem, t)
        fig.savefig(str(Path(out_dir) / name), dpi=90)
        plt.close(fig)
        made[t] = name
    print(json.dumps(made))


if __name__ == "__main__":
    main(*sys.argv[1:4])
