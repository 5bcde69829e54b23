#!/usr/bin/env bash
# The servlet spike's measurements (runtime/servlet/README.md, "Choosing the engine"),
# one engine per run:
#   runtime/servlet/spike.sh tomcat|jetty|plain [PORT] [launcher options...]
# Serves HelloServlet (or PlainHello) through bin/nginx-jvm in pool mode
# with one worker, then: milliseconds from the launcher's start to the first
# 200 of GET /, the checks (GET, a POST body, query and form parameters),
# a 3 s wrk warm-up, one `wrk -t1 -c16 -d10s`, the worker's RSS and PSS, and
# stops it.  Needs `make jar` and `mvn -f runtime/servlet/pom.xml package`.
# WRK_SECONDS (default 10) shortens or lengthens the measured run; SKIP_WRK=1
# skips it; SPIKE_EXTRA=CMD runs CMD PORT after the checks.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
engine=${1:?tomcat, jetty or plain}
port=${2:-18480}
shift; [ $# -gt 0 ] && shift
t=$here/target
case $engine in
    tomcat) handler=nginx.jvm.servlet.TomcatHandler; cp="$t/nginx-jvm-servlet.jar:$t/tomcat-lib/*" ;;
    jetty)  handler=nginx.jvm.servlet.JettyHandler;  cp="$t/nginx-jvm-servlet.jar:$t/jetty-lib/*" ;;
    plain)  handler=nginx.jvm.servlet.PlainHello;    cp="$t/nginx-jvm-servlet.jar" ;;
    *) echo "spike.sh: tomcat, jetty or plain, not $engine" >&2; exit 2 ;;
esac
log=$(mktemp /tmp/servlet-spike-$engine.XXXXXX)
start=$(date +%s%N)
setsid "$root/bin/nginx-jvm" run --handler "$handler" --classpath "$cp" --mode pool --workers 1 \
    --port "$port" "$@" >"$log" 2>&1 &
launcher=$!
stop() { kill -INT "$launcher" 2>/dev/null; wait "$launcher" 2>/dev/null; }
trap stop EXIT
for _ in $(seq 1 600); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/" 2>/dev/null)
    [ "$code" = 200 ] && break
    if ! kill -0 "$launcher" 2>/dev/null; then cat "$log"; exit 1; fi
    sleep 0.05
done
echo "== $engine: first 200 after $(( ($(date +%s%N) - start) / 1000000 )) ms (launcher start to answer)"
grep -h "nginx-jvm-servlet:\|ready" "$log" | sed 's/^/   /'
echo "== GET /"
curl -si "http://127.0.0.1:$port/" | tr -d '\r' | grep -v '^Date:'
echo; echo "== GET with a query"
curl -s "http://127.0.0.1:$port/a/b?x=1&name=%C3%A9t%C3%A9&x=2"
echo "== POST text/plain"
curl -s -H 'Content-Type: text/plain' --data-binary 'a body, été' "http://127.0.0.1:$port/post?q=1"
echo "== POST a form"
curl -s --data 'a=1&b=%E2%82%AC' "http://127.0.0.1:$port/form"
echo "== HEAD /, an exception, sendError(404), a body past the engine's buffer"
curl -sI "http://127.0.0.1:$port/" | tr -d '\r' | grep -E "^HTTP|Content-Length"
curl -s -o /dev/null -w 'throw: %{http_code} %{content_type} %{size_download} bytes\n' "http://127.0.0.1:$port/?throw=1"
curl -s -o /dev/null -w 'sendError: %{http_code} %{content_type} %{size_download} bytes\n' "http://127.0.0.1:$port/?status=404"
curl -s -o /dev/null -w 'big: %{http_code} %{size_download} bytes\n' "http://127.0.0.1:$port/?big=300000"
curl -s -o /dev/null -w 'stream (5 lines, 100 ms apart): %{http_code} first byte %{time_starttransfer} s, all %{time_total} s\n' "http://127.0.0.1:$port/?stream=5"
curl -s -w ' (async servlet: %{http_code})\n' "http://127.0.0.1:$port/?async=1"
curl -s -o /dev/null -w 'async timeout (500 ms): %{http_code} after %{time_total} s\n' "http://127.0.0.1:$port/?asynctimeout=1"
# SPIKE_EXTRA: a command run with the port (tests of URI shapes, ...)
[ -n "${SPIKE_EXTRA:-}" ] && $SPIKE_EXTRA "$port"
[ -n "${SKIP_WRK:-}" ] && exit 0
descendants() { local c; for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done; }
worker=
for w in $(descendants "$launcher"); do
    case $(ps -o args= -p "$w") in "nginx: worker"*) worker=$w ;; esac
done
cpu() { awk '{print $14 + $15}' "/proc/$worker/stat"; }
wrk -t1 -c16 -d3s "http://127.0.0.1:$port/" >/dev/null
echo "== wrk -t1 -c16 -d${WRK_SECONDS:-10}s"
c0=$(cpu)
res=$(wrk -t1 -c16 -d"${WRK_SECONDS:-10}"s "http://127.0.0.1:$port/")
c1=$(cpu)
echo "$res" | grep -E "Requests/sec|Latency|requests in|Non-2xx"
n=$(echo "$res" | grep -o "[0-9]* requests in" | grep -o "^[0-9]*")
hz=$(getconf CLK_TCK)
echo "== worker $worker: CPU $(( (c1 - c0) * 1000000 / hz / n )) us a request ($(( (c1 - c0) * 1000 / hz )) ms for $n)"
echo "== worker $worker: $(grep -E '^(Rss|Pss):' /proc/$worker/smaps_rollup | tr -s ' ' | tr '\n' ' ')" \
     "threads $(grep Threads /proc/$worker/status | cut -f2)"
