#!/usr/bin/env bash
# What jvm_status's counting costs: plain nginx, nginx-jvm of this tree,
# the same with a jvm_status location (workers publish every second), and
# optionally nginx-jvm built from another tree (BASE, e.g. the commit before
# the counting) side by side; wrk on /hello in interleaved rounds, medians
# and ratios to plain nginx.
#
#   bench/metrics.sh [-d SECONDS] [-r ROUNDS] [-c CONNECTIONS] [-b BASE_TREE]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/common.sh
. "$top/bench/common.sh"
duration=5 rounds=3 conns=50 base=
while getopts "d:r:c:b:" o; do
    case $o in
        d) duration=$OPTARG ;;
        r) rounds=$OPTARG ;;
        c) conns=$OPTARG ;;
        b) base=$(cd "$OPTARG" && pwd) ;;
        *) echo "usage: $0 [-d S] [-r N] [-c N] [-b BASE_TREE]" >&2; exit 2 ;;
    esac
done

work=$(mktemp -d /tmp/nginx-jvm-bench-metrics.XXXXXX)
pids=()
trap bench_cleanup EXIT


# The configs come from the one writer (common.sh's jvm_conf: bin/nginx-jvm
# config), 2 workers as root, no class cache; plain nginx is the same
# config without the JVM (plain_conf), so it keeps the same settings.
jvm_args=(--handler bench.core/handler --classpath "$top/bench/app" --workers 2
          --user root --cache off)

jvm() {  # name port tree [extra locations]
    jvm_conf "$work/$1" "${jvm_args[@]}" --port "$2" --module "$3/build/ngx_http_jvm_module.so" \
        ${4:+--server "$4"}
    # the base tree's runtime jar, in place of this tree's
    sed -i "s|\"$top/build/nginx-jvm.jar\"|\"$3/build/nginx-jvm.jar\"|" "$work/$1/nginx.conf"
    start_conf "$work/$1"
}

declare -A port
port[nginx]=$(free_port)
plain_conf "$work/nginx" /dev/null "${jvm_args[@]}" --port "${port[nginx]}"
start_conf "$work/nginx"
port[jvm]=$(free_port)
jvm jvm "${port[jvm]}" "$top"
port[status]=$(free_port)
jvm status "${port[status]}" "$top" "location = /status { jvm_status; }"
names=(nginx jvm status)
if [ -n "$base" ]; then
    port[base]=$(free_port)
    jvm base "${port[base]}" "$base"
    names+=(base)
fi

for n in "${names[@]}"; do
    for _ in $(seq 1 150); do
        curl -fs -o /dev/null "http://127.0.0.1:${port[$n]}/hello" && break
        sleep 0.2
    done
    [ "$n" = nginx ] || wrk -t1 -c"$conns" -d3s "http://127.0.0.1:${port[$n]}/hello" >/dev/null
done

rate() { wrk -t1 -c"$conns" -d"${duration}s" "$1" | awk '/^Requests\/sec/ {print $2}'; }
declare -A results cpus
hz=$(getconf CLK_TCK)
for r in $(seq 1 "$rounds"); do
    for n in "${names[@]}"; do
        master=$(cat "$work/$n/nginx.pid")
        before=$(workers_cpu "$master")
        rps=$(rate "http://127.0.0.1:${port[$n]}/hello")
        after=$(workers_cpu "$master")
        results[$n]+="$rps "
        # microseconds of worker CPU per request
        cpus[$n]+="$(echo "($after - $before) * 1000000 / $hz / ($rps * $duration)" | bc -l) "
    done
done

echo "bench/metrics.sh: wrk -t1 -c$conns -d${duration}s /hello, $rounds interleaved rounds, median"
printf '%-34s %12s %8s %14s\n' server "req/s" "ratio" "CPU us/req"
ref=$(echo "${results[nginx]}" | median)
for n in "${names[@]}"; do
    m=$(echo "${results[$n]}" | median)
    case $n in
        nginx) label="plain nginx (return 200)" ;;
        jvm) label="nginx-jvm (counting)" ;;
        status) label="nginx-jvm + jvm_status location" ;;
        base) label="nginx-jvm base ($base)" ;;
    esac
    c=$(echo "${cpus[$n]}" | median)
    printf '%-34s %12.0f %8.3f %14.1f\n' "$label" "$m" "$(echo "$m / $ref" | bc -l)" "$c"
done
[ -z "${port[status]}" ] || curl -fs "http://127.0.0.1:${port[status]}/status" | grep -E '^nginx_jvm_(requests_total\{mode="loop",status="2xx"\}|workers) '
