"""RFC 6455 conformance: the Autobahn test suite's fuzzing client, cases 1
to 10 (there is no 8; kosoku runs Autobahn's cases on Python 3), against an echo listener,
in every mode: every case OK, NON-STRICT or INFORMATIONAL, none FAILED."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import Nginx

# scripts/install-deps.sh installs kosoku for the Python that runs the tests
pytest.importorskip("kosoku", reason="kosoku is not installed: scripts/install-deps.sh")
KOSOKU = [sys.executable, "-c", "import sys; from kosoku._cli import main; sys.exit(main())"]

LOCATIONS = """
        jvm_websocket_max_message 32m;
        location / { jvm_content testapp.ws/pure-echo; }
"""

PASSING = {"OK", "NON-STRICT", "INFORMATIONAL"}


def test_autobahn_cases_1_to_10(mode, tmp_path):
    with Nginx(LOCATIONS, mode=mode) as ng:
        out = tmp_path / "reports"
        run = subprocess.run(
            KOSOKU + ["127.0.0.1:%d" % ng.port, "-o", str(out), "-p", "4"]
            + [a for i in (1, 2, 3, 4, 5, 6, 7, 9, 10) for a in ("-i", "%d.*" % i)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=900)
        index = next(out.rglob("index.json"), None)
        assert index, "kosoku wrote no report:\n" + run.stdout[-3000:]
        results = json.loads(Path(index).read_text())
        cases = {}
        for agent in results.values():
            for case, r in agent.items():
                cases[case] = r.get("behavior")
        assert len(cases) > 200, "cases ran: %d\n%s" % (len(cases), run.stdout[-2000:])
        failed = {c: b for c, b in cases.items() if b not in PASSING}
        assert not failed, "not passing: %s" % sorted(failed.items())[:40]
