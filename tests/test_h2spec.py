"""HTTP/2 conformance through nginx to a JVM handler, with h2spec (built
by scripts/h2spec.sh into build/h2spec; skipped without go): a part of
`make h2spec` (bench/h2spec.py, which has the whole suite and the
report). Flow control on a streamed body (6.9), CONTINUATION (6.10),
the generic request exchanges and HPACK: every case the JVM's streamed
body fails, nginx reading a body itself (proxy_pass) fails too."""

import shutil
import subprocess
import sys

import pytest

from harness import ROOT, Nginx, free_port

sys.path.insert(0, str(ROOT / "bench"))
import h2spec as bench                                  # noqa: E402

SECTIONS = ["http2/6.9", "http2/6.10", "generic/4", "hpack"]


@pytest.fixture(scope="module")
def h2spec():
    if not (ROOT / "build" / "h2spec" / "h2spec").exists() \
            and shutil.which("go") is None:
        pytest.skip("h2spec is not built and go is missing")
    return subprocess.run([str(ROOT / "scripts" / "h2spec.sh")], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()


def test_a_streamed_jvm_body_fails_no_case_nginx_passes(h2spec, mode):
    h2c = free_port()
    ng = Nginx(bench.LOCATIONS, http=bench.HTTP.replace("@H2C@", str(h2c)),
               classpath="java", mode=mode)
    bench.certificate(ng.prefix)
    with ng:
        runs = {}
        for path in ("/stream", "/headers", "/proxied"):
            runs[path] = [c for s in SECTIONS for c in bench.run_h2spec(
                h2spec, ng.port2, True, path, 2, s)]
    passed = {(p, n) for _, p, n, m, skip in runs["/proxied"]
              if not m and not skip}
    for path in ("/stream", "/headers"):
        assert len(runs[path]) == len(runs["/proxied"]) > 20, runs[path]
        jvm_only = [(p, n, m) for _, p, n, m, _ in runs[path]
                    if m and (p, n) in passed]
        assert not jvm_only, (path, jvm_only)
        assert sum(1 for c in runs[path] if not c[3]) >= 20, runs[path]
