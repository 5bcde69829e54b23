#!/usr/bin/env bash
# The launcher's own nginx.conf against plain nginx, side by side: what
# bin/nginx-jvm writes for the bench app (bench/app, 2 workers) in each
# execution mode, and plain nginx with the same settings (`return 200` for
# /hello, the same file as a static file for /file). wrk in turn (A B C, A B
# C, ...); per server the median req/s, the median of its per-round ratio to
# plain nginx (each round's ratio is taken a few seconds apart, so it varies
# less than the medians on a noisy machine), the workers' CPU time per
# request (utime + stime from /proc), and for pool and virtual the ratio to
# the loop's rate in the same round (issue 37's targets), its median and
# each round's.
#
#   bench/launcher.sh [-d SECONDS] [-r ROUNDS] [-c CONNECTIONS]
#                     [-m MODES] [-u ROUTES]
#
# MODES: comma-separated of loop, pool, virtual (default loop; virtual runs
# on the Temurin 25 JDK). ROUTES: hello,file (default both).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/common.sh
. "$top/bench/common.sh"
duration=5 rounds=3 conns=50 modes=loop routes=hello,file
while getopts "d:r:c:m:u:" o; do
    case $o in
        d) duration=$OPTARG ;;
        r) rounds=$OPTARG ;;
        c) conns=$OPTARG ;;
        m) modes=$OPTARG ;;
        u) routes=$OPTARG ;;
        *) echo "usage: $0 [-d S] [-r N] [-c N] [-m MODES] [-u ROUTES]" >&2; exit 2 ;;
    esac
done
jdk25=/usr/lib/jvm/temurin-25-jdk-amd64

work=$(mktemp -d /tmp/nginx-jvm-launcher.XXXXXX)
# started as root, the launcher's workers run as nobody: they must read the file
chmod 755 "$work"
pids=()
trap bench_cleanup EXIT

bench_file "$work/index.html"


# The launcher's own options for the bench app (its user: nobody when root,
# its class cache); plain nginx is the same config without the JVM
# (common.sh's plain_conf), so it keeps the launcher's settings.
launcher_args=(--handler bench.core/handler --classpath "$top/bench/app" --workers 2
               --jvm-option "-Dbench.file=$work/index.html")
declare -A port
names=(plain)
port[plain]=$(free_port)
plain_conf "$work/plain" "$work/index.html" "${launcher_args[@]}" --port "${port[plain]}"
IFS=, read -ra mode_list <<<"$modes"
for m in "${mode_list[@]}"; do
    port[$m]=$(free_port)
    jvm_conf "$work/$m" "${launcher_args[@]}" --port "${port[$m]}" --mode "$m"
    names+=("$m")
done
# the module finds the JVM through JAVA_HOME, at nginx's start
for n in "${names[@]}"; do
    if [ "$n" = virtual ]; then
        JAVA_HOME=$jdk25 start_conf "$work/$n"
    else
        start_conf "$work/$n"
    fi
done

IFS=, read -ra route_list <<<"$routes"
for n in "${names[@]}"; do
    for _ in $(seq 1 150); do
        curl -fs -o /dev/null "http://127.0.0.1:${port[$n]}/hello" && break
        sleep 0.2
    done
    for route in "${route_list[@]}"; do
        wrk -t1 -c"$conns" -d3s "http://127.0.0.1:${port[$n]}/$route" > /dev/null
    done
done

hz=$(getconf CLK_TCK)
rate() {  # a run with any error answer is no measurement
    local out
    out=$(wrk -t1 -c"$conns" -d"${duration}s" "$1")
    if grep -q 'Non-2xx' <<<"$out"; then echo "$1: error answers" >&2; echo "$out" >&2; exit 1; fi
    awk '/^Requests\/sec/ {print $2}' <<<"$out"
}

declare -A rps ratio cpus over
for route in "${route_list[@]}"; do
    for _ in $(seq 1 "$rounds"); do
        loop_base=
        for n in "${names[@]}"; do
            master=$(cat "$work/$n/nginx.pid")
            before=$(workers_cpu "$master")
            r=$(rate "http://127.0.0.1:${port[$n]}/$route")
            after=$(workers_cpu "$master")
            rps[$n,$route]+="$r "
            [ "$n" = plain ] && base=$r
            ratio[$n,$route]+="$(echo "$r / $base" | bc -l) "
            # pool and virtual against the loop, in the same round (issue 37's targets)
            [ "$n" = loop ] && loop_base=$r
            [ -n "${loop_base:-}" ] && over[$n,$route]+="$(echo "$r / $loop_base" | bc -l) "
            cpus[$n,$route]+="$(echo "($after - $before) * 1000000 / $hz / ($r * $duration)" | bc -l) "
        done
    done
done

echo "bench/launcher.sh: the launcher's config (2 workers) vs plain nginx; wrk -t1 -c$conns -d${duration}s, $rounds interleaved rounds"
printf '%-6s %-8s %12s %14s %14s  %s\n' route server "req/s" "paired ratio" "CPU us/req" \
    "over the loop: median (each round)"
for route in "${route_list[@]}"; do
    for n in "${names[@]}"; do
        rounds_over=
        if [ -n "${over[$n,$route]:-}" ] && [ "$n" != loop ]; then
            rounds_over="$(printf '%.3f' "$(echo "${over[$n,$route]}" | median)") ($(for x in ${over[$n,$route]}; do printf '%.2f ' "$x"; done | sed 's/ $//'))"
        fi
        printf '%-6s %-8s %12.0f %14.3f %14.1f  %s\n' "$route" "$n" \
            "$(echo "${rps[$n,$route]}" | median)" "$(echo "${ratio[$n,$route]}" | median)" \
            "$(echo "${cpus[$n,$route]}" | median)" "$rounds_over"
    done
done
for n in "${names[@]}"; do
    if grep -E '\[(alert|crit|error|emerg)\]' "$work/$n/error.log"; then
        echo "$n: errors in its log (above)" >&2
        exit 1
    fi
done
