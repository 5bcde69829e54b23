#!/usr/bin/env bash
# A quick side-by-side benchmark: plain nginx and nginx-jvm started together,
# wrk run against them in turn (A B, A B, ...), the median of each printed
# with its ratio to plain nginx.  Absolute numbers drift on a shared machine;
# the ratios, taken in one run, are what to compare.
#
#   bench/quick.sh [-d SECONDS] [-r ROUNDS] [-c CONNECTIONS]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
duration=5 rounds=3 conns=50
while getopts "d:r:c:" o; do
    case $o in
        d) duration=$OPTARG ;;
        r) rounds=$OPTARG ;;
        c) conns=$OPTARG ;;
        *) echo "usage: $0 [-d SECONDS] [-r ROUNDS] [-c CONNECTIONS]" >&2; exit 2 ;;
    esac
done
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }

work=$(mktemp -d /tmp/nginx-jvm-bench.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -QUIT "$p" 2>/dev/null || true; done
    sleep 1
    rm -rf "$work"
}
trap cleanup EXIT

# a 29,686-byte HTML file, as in BASELINES.md
python3 - "$work/index.html" <<'PY'
import sys
line = "<p>nginx-jvm benchmark file: the same bytes from every server.</p>\n"
body = "<!doctype html>\n<html><body>\n"
while len(body) + len(line) + 15 <= 29686:
    body += line
body += "</body></html>\n"
body += " " * (29686 - len(body))
open(sys.argv[1], "w").write(body)
PY

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# workers as root: the work directory is private to this user
common="user root;
worker_processes 2;
error_log logs/error.log warn;
pid logs/nginx.pid;
events { worker_connections 4096; }"
http_common="access_log off; keepalive_requests 1000000; sendfile on;
    client_body_temp_path tmp/body; proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi; uwsgi_temp_path tmp/uwsgi; scgi_temp_path tmp/scgi;"

start() {  # name conf
    local dir=$work/$1
    mkdir -p "$dir/logs" "$dir/tmp"
    printf '%s\n' "$2" > "$dir/nginx.conf"
    nginx -p "$dir" -c "$dir/nginx.conf"
    pids+=("$(cat "$dir/logs/nginx.pid")")
}

nginx_port=$(free_port)
start nginx "$common
http { $http_common
  server { listen 127.0.0.1:$nginx_port;
    location = /hello { default_type text/plain; return 200 'Hello, Clojure!'; }
    location = /file { default_type text/html; alias $work/index.html; } } }"

jvm_port=$(free_port)
start jvm "load_module $top/build/ngx_http_jvm_module.so;
$common
http { $http_common
  jvm_classpath $top/build/nginx-jvm.jar $top/build/lib/* $top/bench/app;
  jvm_options -Dbench.file=$work/index.html;
  server { listen 127.0.0.1:$jvm_port;
    location / { jvm_content bench.core/handler; } } }"

# wait for both, and warm the JVMs up
for port in $nginx_port $jvm_port; do
    for _ in $(seq 1 100); do
        curl -fs -o /dev/null "http://127.0.0.1:$port/hello" && break
        sleep 0.2
    done
done
for route in hello file; do
    wrk -t1 -c"$conns" -d3s "http://127.0.0.1:$jvm_port/$route" >/dev/null
done

rate() {  # url -> requests/s
    wrk -t1 -c"$conns" -d"${duration}s" "$1" | awk '/^Requests\/sec/ {print $2}'
}

declare -A results
for route in hello file; do
    for r in $(seq 1 "$rounds"); do
        results[nginx,$route]+="$(rate "http://127.0.0.1:$nginx_port/$route") "
        results[jvm,$route]+="$(rate "http://127.0.0.1:$jvm_port/$route") "
    done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "nginx-jvm bench-quick: wrk -t1 -c$conns -d${duration}s, $rounds interleaved rounds, median"
printf '%-8s %14s %14s %8s %8s\n' route "nginx req/s" "nginx-jvm" ratio target
for route in hello file; do
    n=$(echo "${results[nginx,$route]}" | median)
    j=$(echo "${results[jvm,$route]}" | median)
    target=0.92; [ "$route" = file ] && target=0.98
    printf '%-8s %14.0f %14.0f %8.3f %8s\n' "/$route" "$n" "$j" \
        "$(echo "$j / $n" | bc -l)" "$target"
done
if grep -E '\[(alert|crit|error|emerg)\]' "$work"/*/logs/error.log; then
    echo "bench-quick: errors in the servers' logs (above)" >&2
    exit 1
fi
