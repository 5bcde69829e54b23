#!/usr/bin/env bash
# A quick side-by-side benchmark: plain nginx and nginx-jvm started together,
# wrk run against them in turn (A B, A B, ...), the median of each printed
# with its ratio to plain nginx.  Absolute numbers drift on a shared machine;
# the ratios, taken in one run, are what to compare.
#
#   bench/quick.sh [-d SECONDS] [-r ROUNDS] [-c CONNECTIONS]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/common.sh
. "$top/bench/common.sh"
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
trap bench_cleanup EXIT

bench_file "$work/index.html"


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

jvm_server() {  # name port libjvm [extra locations]
    start "$1" "load_module $top/build/ngx_http_jvm_module.so;
$common
http { $http_common
  jvm_path $3;
  jvm_classpath $top/build/nginx-jvm.jar $top/build/lib/* $top/bench/app;
  jvm_options -Dbench.file=$work/index.html ${BENCH_JVM_OPTIONS:-};
  server { listen 127.0.0.1:$2;
    location / { jvm_content bench.core/handler; }
    location /pool/ { jvm_mode pool; jvm_content bench.core/handler; }
    ${4:-} } }"
}

# the JDK users get from Debian (17), and one with virtual threads if present
jdk_home=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
jvm_port=$(free_port)
jvm_server jvm "$jvm_port" "$jdk_home/lib/server/libjvm.so"
vt_port=
for home in /usr/lib/jvm/*; do
    v=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$home/release" 2>/dev/null || true)
    if [ -n "$v" ] && [ "$v" -ge 21 ] && [ -f "$home/lib/server/libjvm.so" ]; then
        vt_port=$(free_port)
        jvm_server jvm21 "$vt_port" "$home/lib/server/libjvm.so" \
            "location /virtual/ { jvm_mode virtual; jvm_content bench.core/handler; }"
        vt_jdk=$home
        break
    fi
done

# wait for both, and warm the JVMs up
for port in $nginx_port $jvm_port $vt_port; do
    for _ in $(seq 1 100); do
        curl -fs -o /dev/null "http://127.0.0.1:$port/hello" && break
        sleep 0.2
    done
done
warm=("http://127.0.0.1:$jvm_port/hello" "http://127.0.0.1:$jvm_port/file"
      "http://127.0.0.1:$jvm_port/pool/hello")
[ -n "$vt_port" ] && warm+=("http://127.0.0.1:$vt_port/virtual/hello")
for url in "${warm[@]}"; do
    wrk -t1 -c"$conns" -d3s "$url" >/dev/null
done

rate() {  # url -> requests/s
    wrk -t1 -c"$conns" -d"${duration}s" "$1" | awk '/^Requests\/sec/ {print $2}'
}

# case name, plain nginx's route, nginx-jvm's url, target ratio
cases=("hello|hello|http://127.0.0.1:$jvm_port/hello|0.92"
       "file|file|http://127.0.0.1:$jvm_port/file|0.98"
       "pool-hello|hello|http://127.0.0.1:$jvm_port/pool/hello|0.75")
[ -n "$vt_port" ] && cases+=("virtual-hello|hello|http://127.0.0.1:$vt_port/virtual/hello|0.75")

declare -A results
for c in "${cases[@]}"; do
    IFS='|' read -r name route url target <<<"$c"
    for r in $(seq 1 "$rounds"); do
        results[nginx,$name]+="$(rate "http://127.0.0.1:$nginx_port/$route") "
        results[jvm,$name]+="$(rate "$url") "
    done
done


echo "nginx-jvm bench-quick: wrk -t1 -c$conns -d${duration}s, $rounds interleaved rounds, median"
echo "JDK: $jdk_home${vt_port:+ (virtual threads: $vt_jdk)}"
printf '%-14s %12s %12s %8s %8s\n' case "nginx req/s" "nginx-jvm" ratio target
for c in "${cases[@]}"; do
    IFS='|' read -r name route url target <<<"$c"
    n=$(echo "${results[nginx,$name]}" | median)
    j=$(echo "${results[jvm,$name]}" | median)
    printf '%-14s %12.0f %12.0f %8.3f %8s\n' "$name" "$n" "$j" \
        "$(echo "$j / $n" | bc -l)" "$target"
done
if grep -E '\[(alert|crit|error|emerg)\]' "$work"/*/logs/error.log; then
    echo "bench-quick: errors in the servers' logs (above)" >&2
    exit 1
fi
