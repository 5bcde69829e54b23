# What the shell benchmarks (quick.sh, launcher.sh, metrics.sh) share;
# sourced. They keep their servers' master PIDs in `pids` and their files
# in `work`.

# Stops the servers (graceful quit; run-server's JVMs, in `jpids`, by
# SIGTERM, whose shutdown hook stops their nginx) and removes the work
# directory: the scripts' EXIT trap.
bench_cleanup() {
    for p in ${pids[@]+"${pids[@]}"}; do kill -QUIT "$p" 2>/dev/null || true; done
    for p in ${jpids[@]+"${jpids[@]}"}; do kill -TERM "$p" 2>/dev/null || true; done
    sleep 1
    rm -rf "$work"
}

# jvm_conf DIR ARGS...: DIR/nginx.conf of an nginx-jvm server whose prefix
# is DIR, written by the one writer, `bin/nginx-jvm config` (ARGS: its
# options, --handler and --classpath at least); its error log DIR/error.log
# (warn), its pid DIR/nginx.pid.
jvm_conf() {
    local dir=$1
    shift
    mkdir -p "$dir/tmp"
    "$top/bin/nginx-jvm" config --prefix "$dir" --error-log "$dir/error.log" \
        --error-level warn "$@" > "$dir/nginx.conf"
}

# plain_conf DIR FILE ARGS...: plain nginx with the writer's very settings
# (sendfile, tcp_nopush, keepalive_requests, backlog, worker_connections,
# ...), so that a ratio to it measures the JVM and nothing else: what
# jvm_conf DIR ARGS writes, without the module and the jvm_* directives;
# /file is FILE (a static file), any other URL `return 200` of /hello's
# bytes. ARGS must not add locations (--server).
plain_conf() {
    local dir=$1 file=$2
    shift 2
    jvm_conf "$dir" "$@"
    sed -i -e '/^load_module/d' -e '/^    jvm_classpath/,/;/d' -e '/^    jvm_/d' \
        -e '/^            jvm_\(mode\|async\)/d' \
        -e "s|jvm_content .*|return 200 'Hello, Clojure!';|" \
        -e "s|^        location / {|        location = /file { default_type text/html; alias $file; }\n        location / { default_type text/plain;|" \
        "$dir/nginx.conf"
    ! grep -n 'jvm_' "$dir/nginx.conf" >&2 || { echo "plain_conf: jvm_ left" >&2; return 1; }
}

# start_conf DIR: nginx -p DIR on DIR/nginx.conf (daemon); its master's PID
# into `pids`.
start_conf() {
    nginx -p "$1" -c "$1/nginx.conf"
    pids+=("$(cat "$1/nginx.pid")")
}

# bench_file PATH: the 29,686-byte HTML file of BASELINES.md, the same
# bytes every server sends for /file.
bench_file() {
    python3 - "$1" <<'PY'
import sys
line = "<p>nginx-jvm benchmark file: the same bytes from every server.</p>\n"
body = "<!doctype html>\n<html><body>\n"
while len(body) + len(line) + 15 <= 29686:
    body += line
body += "</body></html>\n"
body += " " * (29686 - len(body))
open(sys.argv[1], "w").write(body)
PY
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The median of the numbers on stdin (space- or line-separated).
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# workers_cpu MASTER: the CPU time of a server's workers (utime + stime,
# clock ticks) from /proc. On a shared machine, CPU per request varies less
# than requests per second.
workers_cpu() {
    local t=0 p
    for p in $(pgrep -P "$1"); do
        t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
    done
    echo "$t"
}
