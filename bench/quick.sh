#!/usr/bin/env bash
# A quick side-by-side benchmark: plain nginx and nginx-jvm started together,
# wrk run against them in turn (A B, A B, ...), the median of each printed
# with its ratio to plain nginx.  Absolute numbers drift on a shared machine;
# the ratios, taken in one run, are what to compare.
#
# nginx-jvm is measured with the nginx.conf the launcher writes, and again
# started by nginx.jvm.server/run-server (hello and file): its config is
# the launcher's, so its ratio should match.
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
pids=() jpids=()
trap bench_cleanup EXIT

bench_file "$work/index.html"


# Every server's nginx.conf comes from the one writer, bin/nginx-jvm config
# (bench/common.sh's jvm_conf): 2 workers, as root (the work directory is
# private to this user), no class cache (as before; run-server has none).
# Plain nginx is the same config without the JVM (plain_conf), so it keeps
# the launcher's settings, whatever they become.
jdk_home=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
jvm_args=(--handler bench.core/handler --classpath "$top/bench/app" --workers 2
          --user root --cache off --jvm-option "-Dbench.file=$work/index.html")
for o in ${BENCH_JVM_OPTIONS:-}; do jvm_args+=(--jvm-option "$o"); done

nginx_port=$(free_port)
plain_conf "$work/nginx" "$work/index.html" "${jvm_args[@]}" --port "$nginx_port"
start_conf "$work/nginx"

jvm_server() {  # name port libjvm [extra locations]
    jvm_conf "$work/$1" "${jvm_args[@]}" --port "$2" --jvm-path "$3" \
        --server "location /pool/ { jvm_mode pool; jvm_content bench.core/handler; }" \
        ${4:+--server "$4"}
    start_conf "$work/$1"
}

# the JDK users get from Debian (17), and one with virtual threads if present
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

# nginx.jvm.server/run-server from a clojure.main process, with the same
# options: its nginx.conf is the launcher's too, and this measures it
rs_port=$(free_port)
mkdir -p "$work/run-server"
"$jdk_home/bin/java" -cp "$top/build/nginx-jvm.jar:$top/build/lib/*:$top/bench/app" \
    clojure.main -e "(require 'nginx.jvm.server 'bench.core)
(nginx.jvm.server/run-server #'bench.core/handler
  {:port $rs_port :workers 2 :jvm-path \"$jdk_home/lib/server/libjvm.so\"
   :jvm-options [\"-Dbench.file=$work/index.html\" $(for o in ${BENCH_JVM_OPTIONS:-}; do printf '"%s" ' "$o"; done)]
   :error-log \"$work/run-server/error.log\" :error-level \"warn\"})
@(promise)" > "$work/run-server/stdout.log" 2>&1 &
jpids+=($!)

# wait for both, and warm the JVMs up
for port in $nginx_port $jvm_port $vt_port $rs_port; do
    for _ in $(seq 1 150); do
        curl -fs -o /dev/null "http://127.0.0.1:$port/hello" && break
        sleep 0.2
    done
done
warm=("http://127.0.0.1:$jvm_port/hello" "http://127.0.0.1:$jvm_port/file"
      "http://127.0.0.1:$jvm_port/pool/hello" "http://127.0.0.1:$rs_port/hello"
      "http://127.0.0.1:$rs_port/file")
[ -n "$vt_port" ] && warm+=("http://127.0.0.1:$vt_port/virtual/hello")
for url in "${warm[@]}"; do
    wrk -t1 -c"$conns" -d3s "$url" >/dev/null
done

rate() {  # url [master] -> requests/s; a run with any error answer is no
    # measurement. With a master PID, also its workers' CPU time per request
    # in microseconds ("rps:us"): on a busy machine it varies less than
    # requests per second
    local out t0 t1
    [ -z "${2:-}" ] || t0=$(workers_cpu "$2")
    out=$(wrk -t1 -c"$conns" -d"${duration}s" "$1")
    if grep -q 'Non-2xx' <<<"$out"; then echo "$1: error answers" >&2; echo "$out" >&2; exit 1; fi
    if [ -n "${2:-}" ]; then
        t1=$(workers_cpu "$2")
        awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" \
            '/requests in/ {n = $1} /^Requests\/sec/ {r = $2}
             END {printf "%s:%.2f\n", r, t * 1e6 / hz / n}' <<<"$out"
    else
        awk '/^Requests\/sec/ {print $2}' <<<"$out"
    fi
}

# case name, plain nginx's route, nginx-jvm's url, run-server's url (if
# measured), target ratio
cases=("hello|hello|http://127.0.0.1:$jvm_port/hello|http://127.0.0.1:$rs_port/hello|0.92"
       "file|file|http://127.0.0.1:$jvm_port/file|http://127.0.0.1:$rs_port/file|0.98"
       "pool-hello|hello|http://127.0.0.1:$jvm_port/pool/hello||0.75")
[ -n "$vt_port" ] && cases+=("virtual-hello|hello|http://127.0.0.1:$vt_port/virtual/hello||0.75")

# the masters whose workers' CPU is measured: the launcher's server on
# JDK 17 (pool and virtual run on other servers) and run-server's
jvm_master=${pids[1]}
rs_master=$(pgrep -P "${jpids[0]}" nginx)
declare -A results cpu
add() {  # server case "rps:us"
    results[$1,$2]+="${3%%:*} "
    cpu[$1,$2]+="${3#*:} "
}
for c in "${cases[@]}"; do
    IFS='|' read -r name route url rs_url target <<<"$c"
    for r in $(seq 1 "$rounds"); do
        results[nginx,$name]+="$(rate "http://127.0.0.1:$nginx_port/$route") "
        # the launcher's server and run-server's take turns at going first,
        # so that neither always runs right after plain nginx
        if [ $((r % 2)) -eq 1 ] || [ -z "$rs_url" ]; then
            add jvm "$name" "$(rate "$url" "$jvm_master")"
            [ -z "$rs_url" ] || add rs "$name" "$(rate "$rs_url" "$rs_master")"
        else
            add rs "$name" "$(rate "$rs_url" "$rs_master")"
            add jvm "$name" "$(rate "$url" "$jvm_master")"
        fi
    done
done


echo "nginx-jvm bench-quick: wrk -t1 -c$conns -d${duration}s, $rounds interleaved rounds, median"
echo "JDK: $jdk_home${vt_port:+ (virtual threads: $vt_jdk)}"
echo "nginx-jvm: the launcher's nginx.conf; run-server: nginx.jvm.server/run-server (the same writer)"
printf '%-14s %12s %12s %8s %8s %12s %8s %18s\n' case "nginx req/s" "nginx-jvm" ratio target \
    run-server ratio "CPU us/req jvm/rs"
for c in "${cases[@]}"; do
    IFS='|' read -r name route url rs_url target <<<"$c"
    n=$(echo "${results[nginx,$name]}" | median)
    j=$(echo "${results[jvm,$name]}" | median)
    printf '%-14s %12.0f %12.0f %8.3f %8s' "$name" "$n" "$j" \
        "$(echo "$j / $n" | bc -l)" "$target"
    if [ -n "$rs_url" ]; then
        s=$(echo "${results[rs,$name]}" | median)
        printf ' %12.0f %8.3f %8.2f/%-8.2f' "$s" "$(echo "$s / $n" | bc -l)" \
            "$(echo "${cpu[jvm,$name]}" | median)" "$(echo "${cpu[rs,$name]}" | median)"
    fi
    printf '\n'
done
if grep -E '\[(alert|crit|error|emerg)\]' "$work"/*/error.log; then
    echo "bench-quick: errors in the servers' logs (above)" >&2
    exit 1
fi
