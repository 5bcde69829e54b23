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


common="user root;
worker_processes 2;
error_log logs/error.log warn;
pid logs/nginx.pid;
events { worker_connections 4096; }"
http_common="access_log off; keepalive_requests 1000000;
    client_body_temp_path tmp/body; proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi; uwsgi_temp_path tmp/uwsgi; scgi_temp_path tmp/scgi;"

start() {  # name conf
    local dir=$work/$1
    mkdir -p "$dir/logs" "$dir/tmp"
    printf '%s\n' "$2" > "$dir/nginx.conf"
    nginx -p "$dir" -c "$dir/nginx.conf"
    pids+=("$(cat "$dir/logs/nginx.pid")")
}

jvm() {  # name port tree [extra locations]
    start "$1" "load_module $3/build/ngx_http_jvm_module.so;
$common
http { $http_common
  jvm_classpath $3/build/nginx-jvm.jar $3/build/lib/* $top/bench/app;
  server { listen 127.0.0.1:$2;
    location / { jvm_content bench.core/handler; }
    ${4:-} } }"
}

declare -A port
port[nginx]=$(free_port)
start nginx "$common
http { $http_common
  server { listen 127.0.0.1:${port[nginx]};
    location = /hello { default_type text/plain; return 200 'Hello, Clojure!'; } } }"
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
        master=$(cat "$work/$n/logs/nginx.pid")
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
