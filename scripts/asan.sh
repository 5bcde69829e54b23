#!/usr/bin/env bash
# `make asan`: the integration suite against build/asan/ngx_http_jvm_module.so
# (AddressSanitizer + UBSan).  Debian's nginx is not instrumented, so the ASan
# runtime is preloaded into the nginx processes the harness starts; the
# settings below let the JVM in each worker keep its own signal handlers.
# Any sanitizer report fails the run.  Arguments go to pytest (default: the
# whole tests/ directory); NGINX_JVM_MODES picks the modes as for make test.
# docs/sanitizers.md explains each setting.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
reports=$top/build/asan/reports

rm -rf "$reports"
mkdir -p "$reports"
chmod 1777 "$reports"       # processes that dropped to another user write too

export NGINX_JVM_MODULE=$top/build/asan/ngx_http_jvm_module.so
NGINX_JVM_PRELOAD=$(gcc -print-file-name=libasan.so)
export NGINX_JVM_PRELOAD
export ASAN_OPTIONS="handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:allow_user_segv_handler=1:detect_leaks=0:fast_unwind_on_fatal=0:log_path=$reports/asan:suppressions=$top/scripts/asan.supp"
# UBSan reads its options late, from /proc/self/environ, which nginx has
# overwritten with the process title by then: they have no effect in a
# worker.  Its reports go to stderr, the error log, where the harness counts
# every "runtime error:" line as a problem (a failed test).
export UBSAN_OPTIONS="print_stacktrace=1"

cd "$top"
if [ $# -eq 0 ]; then
    set -- tests
fi
"$python" -m pytest -q "$@"
status=$?

if [ -n "$(ls -A "$reports")" ]; then
    for f in "$reports"/*; do
        echo "=== $f"
        cat "$f"
    done
    echo "asan: sanitizer reports in $reports" >&2
    exit 1
fi
echo "asan: no sanitizer report"
exit $status
