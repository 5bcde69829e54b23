# What the shell benchmarks (quick.sh, launcher.sh, metrics.sh) share;
# sourced. They keep their servers' master PIDs in `pids` and their files
# in `work`.

# Stops the servers (graceful quit) and removes the work directory: the
# scripts' EXIT trap.
bench_cleanup() {
    for p in "${pids[@]}"; do kill -QUIT "$p" 2>/dev/null || true; done
    sleep 1
    rm -rf "$work"
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
