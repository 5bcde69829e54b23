#!/usr/bin/env bash
# The launcher's own nginx.conf against plain nginx, side by side: the
# config bin/nginx-jvm writes now, and the one it wrote before (without
# sendfile, keepalive_requests and the listen backlog), serving the bench
# app's /hello and /file; wrk in turn (A B C, A B C, ...), medians, ratios.
#
#   bench/launcher.sh [-d SECONDS] [-r ROUNDS] [-c CONNECTIONS]
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

work=$(mktemp -d /tmp/nginx-jvm-launcher.XXXXXX)
# started as root, the launcher's workers run as nobody: they must read the file
chmod 755 "$work"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -QUIT "$p" 2>/dev/null || true; done
    sleep 1
    rm -rf "$work"
}
trap cleanup EXIT

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

start() {  # name conf-file
    local dir=$work/$1
    mkdir -p "$dir/tmp"
    sed "s|/tmp/nginx-jvm.XXXXXX|$dir|g; s|error_log stderr notice;|error_log $dir/error.log warn;|" "$2" > "$dir/nginx.conf"
    nginx -p "$dir" -c "$dir/nginx.conf"
    pids+=("$(cat "$dir/nginx.pid")")
}

launcher_conf() {  # port
    "$top/bin/nginx-jvm" run --handler bench.core/handler --classpath "$top/bench/app" \
        --port "$1" --workers 2 --jvm-option "-Dbench.file=$work/index.html" --print-config
}

after=$(free_port) before=$(free_port) plain=$(free_port)
launcher_conf "$after" > "$work/after.conf"
# the launcher's config before this change
launcher_conf "$before" | sed -e '/sendfile on;/d' -e '/tcp_nopush on;/d' \
    -e '/keepalive_requests 100000;/d' -e 's/ backlog=4096;/;/' > "$work/before.conf"
# plain nginx with the launcher's (new) settings
sed -e '/load_module/d' -e '/jvm_classpath/,/;/d' -e '/jvm_options/d' -e '/jvm_cache/d' \
    -e "s|jvm_content .*|return 200 'Hello, Clojure!';|" \
    -e "s|listen 127.0.0.1:$after|listen 127.0.0.1:$plain|" \
    -e "s|        location / {|        location = /file { default_type text/html; alias $work/index.html; }\n        location / { default_type text/plain;|" \
    "$work/after.conf" > "$work/plain.conf"
start after "$work/after.conf"
start before "$work/before.conf"
start plain "$work/plain.conf"

for port in $after $before $plain; do
    for _ in $(seq 1 150); do
        curl -fs -o /dev/null "http://127.0.0.1:$port/hello" && break
        sleep 0.2
    done
    wrk -t1 -c"$conns" -d3s "http://127.0.0.1:$port/hello" > /dev/null
    wrk -t1 -c"$conns" -d2s "http://127.0.0.1:$port/file" > /dev/null
done

rate() {  # a run with any error answer is no measurement
    local out
    out=$(wrk -t1 -c"$conns" -d"${duration}s" "$1")
    if grep -q 'Non-2xx' <<<"$out"; then echo "$1: error answers" >&2; echo "$out" >&2; exit 1; fi
    awk '/^Requests\/sec/ {print $2}' <<<"$out"
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A r
for route in hello file; do
    for _ in $(seq 1 "$rounds"); do
        for s in plain:$plain before:$before after:$after; do
            r[${s%%:*},$route]+="$(rate "http://127.0.0.1:${s##*:}/$route") "
        done
    done
done

echo "launcher config vs plain nginx: wrk -t1 -c$conns -d${duration}s, $rounds interleaved rounds, median"
printf '%-6s %12s %12s %8s %12s %8s\n' route "nginx" "before" ratio "after" ratio
for route in hello file; do
    n=$(echo "${r[plain,$route]}" | median)
    b=$(echo "${r[before,$route]}" | median)
    a=$(echo "${r[after,$route]}" | median)
    printf '%-6s %12s %12s %8.3f %12s %8.3f\n' "$route" "$n" "$b" "$(echo "$b / $n" | bc -l)" "$a" "$(echo "$a / $n" | bc -l)"
done
