#!/usr/bin/env bash
# Runs the fuzzing harnesses built in DIR, each for SECONDS, one after the
# other, from the seed corpus in fuzz/corpus/NAME plus what earlier runs
# found (DIR/corpus/NAME, outside the tree), and fails on the first crash,
# leak, sanitizer report or hang.  Prints per harness: the runs, runs per
# second, and libFuzzer's final coverage (cov: edges, ft: features).
#
#   fuzz/run.sh DIR SECONDS NAME...
set -euo pipefail

dir=$1
seconds=$2
shift 2
top=$(cd "$(dirname "$0")/.." && pwd)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
for name in "$@"; do
    work=$dir/corpus/$name
    log=$dir/$name.log
    mkdir -p "$work"
    dict=()
    [ -f "$top/fuzz/$name.dict" ] && dict=(-dict="$top/fuzz/$name.dict")

    # -timeout: an input that takes 20 s is a hang, and fails the run
    if "$dir/$name" -max_total_time="$seconds" -timeout=20 -max_len=8192 \
           -print_final_stats=1 -artifact_prefix="$dir/$name-" "${dict[@]}" \
           "$work" "$top/fuzz/corpus/$name" > "$log" 2>&1; then
        result=ok
    else
        result=FAILED
        status=1
    fi

    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    final=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1 \
            | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' || true)
    printf '%-18s %s  %s s, %s runs, %s runs/s, %s\n' "$name" "$result" \
        "$seconds" "${runs:-?}" "${rate:-?}" "${final:-?}"

    if [ "$result" = FAILED ]; then
        echo "--- $log (its end):"
        grep -v '^#' "$log" | tail -40
        ls "$dir/$name"-* 2>/dev/null | sed 's/^/reproducer: /' || true
    fi
done

exit $status
