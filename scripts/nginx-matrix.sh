#!/usr/bin/env bash
# The core of the integration suite against Debian's nginx of each SUITE
# (bookworm 1.22, trixie 1.26, sid 1.30), each with the module built for it
# (scripts/nginx-version.sh): `make test-nginx-matrix`, and in `make test`
# the newest.
#
#   scripts/nginx-matrix.sh SUITE...
#
# MATRIX_TESTS: the test files (tests/NAME.py); NGINX_JVM_MODES as for the
# suite; PYTHON: the Python with pytest; PYTEST_ARGS: more of pytest's
# arguments (make test's two test processes: -n 2).  Each version's pytest output is
# in build/nginx-VERSION/matrix.log; one line per version says its counts,
# and the exit status is non-zero if any version failed.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
tests=${MATRIX_TESTS:?MATRIX_TESTS names the test files}
[ $# -gt 0 ] || { echo "usage: nginx-matrix.sh SUITE..." >&2; exit 2; }

summary=() status=0
for suite in "$@"; do
    dir=$("$top/scripts/nginx-version.sh" "$suite") || {
        summary+=("nginx ($suite): not built"); status=1; continue; }
    version=$(sed -n 's|^nginx version: nginx/||p' "$dir/nginx-V.txt")
    route=$(cut -d' ' -f1 "$dir/ROUTE")
    echo "== nginx $version (Debian $suite, $route; $dir): ${tests// /, }"
    start=$(date +%s)
    files=()
    for t in $tests; do files+=("$top/tests/$t.py"); done
    NGINX=$dir/sbin/nginx NGINX_JVM_MODULE=$dir/ngx_http_jvm_module.so \
        "$python" -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:-} "${files[@]}" 2>&1 \
        | tee "$dir/matrix.log"
    rc=${PIPESTATUS[0]}
    took=$(( $(date +%s) - start ))
    last=$(grep -E '[0-9]+ (passed|failed|error)' "$dir/matrix.log" | tail -1)
    count() { grep -oE "[0-9]+ $1" <<< "$last" | cut -d' ' -f1 || true; }
    passed=$(count passed) failed=$(count failed) skipped=$(count skipped)
    errors=$(count error)
    line="nginx-$version: ${passed:-0} passed, $(( ${failed:-0} + ${errors:-0} )) failed, ${skipped:-0} skipped"
    summary+=("nginx $version: Debian $suite's, $route package, ${took} s" "$line")
    [ "$rc" -eq 0 ] || status=1
done
echo "== nginx versions:"
printf '%s\n' "${summary[@]}"
exit $status
