#!/usr/bin/env bash
# A cluster on one machine (issue 20, docs/scale-out.md): three application
# hosts running nginx-jvm with examples/live and examples/notes, one front
# running plain nginx with an upstream of the three, one Redis host, and a
# client host for tests, each a Linux network namespace with its own
# address. The hosts' veth pairs meet on a bridge that lives in a namespace
# of its own (njc-net): every address is inside namespaces this script
# creates, none on any network of the machine.
#
#   scripts/cluster.sh up        start what is not running; prints the URLs
#   scripts/cluster.sh down      stop every process and remove everything
#   scripts/cluster.sh status    what runs
#   scripts/cluster.sh config    print the nginx.conf of every host
#   scripts/cluster.sh kill HOST    SIGKILL every process of HOST (a host lost)
#   scripts/cluster.sh stop HOST    stop HOST's server gracefully (SIGTERM)
#   scripts/cluster.sh start HOST   start HOST's server again
#   scripts/cluster.sh unplug HOST  cut HOST from the network (its link to
#                                   the bridge down: silence, no resets)
#   scripts/cluster.sh plug HOST    connect it again
#
# HOST is front, app1, app2, app3 or redis. Needs root (namespaces), the
# build (make all) and what `scripts/install-deps.sh cluster` installs.
# NJC_DIR (default /tmp/nginx-jvm-cluster) holds configurations, logs, the
# Redis append-only file and pid files; down removes it.
set -euo pipefail

top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
state=${NJC_DIR:-/tmp/nginx-jvm-cluster}
ns=njc                        # every namespace's name starts with "njc-"
net=10.77.0                   # a /24 that exists only on the bridge
hosts=(front app1 app2 app3 redis client)
apps=(app1 app2 app3)
declare -A addr=([front]=$net.10 [app1]=$net.11 [app2]=$net.12
                 [app3]=$net.13 [redis]=$net.20 [client]=$net.100)
live_port=8080                # examples/live on each application host
notes_port=8081               # examples/notes on each application host
redis_port=6379
nginx=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}

die() { echo "cluster: $*" >&2; exit 1; }
log() { echo "cluster: $*" >&2; }

# inside HOST COMMAND...: runs COMMAND in HOST's namespace
inside() { local h=$1; shift; ip netns exec "$ns-$h" "$@"; }

have_ns() { [ -e "/run/netns/$1" ]; }

# pids HOST: the processes in HOST's namespace: the servers this script
# started there and, in njc-client, whatever was run there (tests, your
# shell): down stops them all
pids() { have_ns "$ns-$1" && ip netns pids "$ns-$1" 2>/dev/null || true; }

running() { [ -n "$(pids "$1")" ]; }

# --- the network ---------------------------------------------------------------

network_up() {
    have_ns "$ns-net" || ip netns add "$ns-net"
    ip -n "$ns-net" link show br0 >/dev/null 2>&1 \
        || ip -n "$ns-net" link add br0 type bridge
    ip -n "$ns-net" link set br0 up
    local h
    for h in "${hosts[@]}"; do
        have_ns "$ns-$h" || ip netns add "$ns-$h"
        ip -n "$ns-$h" link set lo up
        if ! ip -n "$ns-$h" link show eth0 >/dev/null 2>&1; then
            ip -n "$ns-net" link del "v-$h" 2>/dev/null || true
            ip -n "$ns-net" link add "v-$h" type veth peer name eth0 netns "$ns-$h"
            ip -n "$ns-net" link set "v-$h" master br0 up
            ip -n "$ns-$h" addr add "${addr[$h]}/24" dev eth0
        fi
        ip -n "$ns-$h" link set eth0 up
    done
}

# --- configurations ----------------------------------------------------------

ring_jars() {
    sed -e '/^#/d' -e 's|.*|/usr/share/java/&.jar|' "$top/scripts/ring-jars.txt" | paste -sd:
}

# app_config HOST: the application host's nginx.conf, written by the
# launcher (the one writer of nginx-jvm's nginx.conf): the live example on
# $live_port, notes on $notes_port, sessions and the chat's bridge in Redis.
# One worker (one JVM) with a modest heap: the hosts share two cores.
app_config() {
    local h=$1 a=${addr[$1]}
    "$top/bin/nginx-jvm" config --prefix "$state/$h" --user nobody \
        --handler live.core/app --async --listen "$a" --port "$live_port" \
        --workers 1 --connections 4096 --pool-size 8 \
        --jvm-option -Xmx128m --jvm-option -XX:+UseSerialGC \
        --cache "$state/cache" --error-log "$state/$h/error.log" \
        --topic chat:1m --shared-dict chat:64k --shared-dict notes:1m \
        --classpath "$top/examples/live/src:$top/examples/notes/src:$top/build/redis-lib/*:$(ring_jars)" \
        --main "env NGINX_JVM_REDIS=redis://${addr[redis]}:$redis_port;" \
        --server "add_header X-Njc-Host $h always;" \
        --http "# examples/notes: its sessions in Redis, so jvm_mode pool (a Redis" \
        --http "# call blocks its thread); its notes in this host's dictionary" \
        --http "server {" \
        --http "    listen $a:$notes_port;" \
        --http "    add_header X-Njc-Host $h always;" \
        --http "    location /static/ {" \
        --http "        alias $top/examples/notes/public/;" \
        --http "    }" \
        --http "    location / {" \
        --http "        jvm_content notes.core/app;" \
        --http "        jvm_mode pool;" \
        --http "    }" \
        --http "}"
}

# the front: plain nginx (no module), an upstream of the three per example
front_config() {
    local h upstream port
    chmod 755 "$state/front"
    cat <<EOF
# Written by scripts/cluster.sh: the front, plain nginx.
worker_processes 1;
error_log "$state/front/error.log" notice;
pid "$state/front/nginx.pid";

events {
    worker_connections 4096;
}

http {
    # what served each request: \$upstream_addr lists every host tried
    log_format front '\$msec \$status \$request_method \$uri '
                     '"\$upstream_addr" "\$upstream_status" \$request_time';
    access_log "$state/front/access.log" front;

    client_body_temp_path "$state/front/tmp/client_body";
    proxy_temp_path "$state/front/tmp/proxy";
    fastcgi_temp_path "$state/front/tmp/fastcgi";
    uwsgi_temp_path "$state/front/tmp/uwsgi";
    scgi_temp_path "$state/front/tmp/scgi";

    # Connection: "upgrade" for a WebSocket's handshake, "" otherwise, so
    # that the connection to the host stays in the keepalive pool
    map \$http_upgrade \$connection_upgrade {
        default upgrade;
        ''      '';
    }

    # Sticky only for a client that asks: one with the cookie njc_route
    # stays on the host its value hashes to (the browser test puts two
    # pages on two hosts so); without it (an empty key) nginx falls back
    # to round robin. Sessions are in Redis: no host owns a user. A host
    # that fails twice is left out for 5 s, then tried again.
EOF
    for upstream in live notes; do
        [ $upstream = live ] && port=$live_port || port=$notes_port
        cat <<EOF
    upstream $upstream {
        hash \$cookie_njc_route consistent;
EOF
        for h in "${apps[@]}"; do
            printf '        server %s:%s max_fails=2 fail_timeout=5s;\n' "${addr[$h]}" "$port"
        done
        cat <<EOF
        keepalive 16;
    }

EOF
    done
    for upstream in live notes; do
        [ $upstream = live ] && port=80 || port=81
        [ $port = 80 ] || echo
        cat <<EOF
    server {
        listen ${addr[front]}:$port;

        proxy_http_version 1.1;
        proxy_set_header Host \$host;
        proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
        proxy_set_header Upgrade \$http_upgrade;
        proxy_set_header Connection \$connection_upgrade;
        # a host that is down refuses at once; one that is gone from the
        # network costs this long
        proxy_connect_timeout 1s;
        # an answer within 10 s, or the host counts as failed and the
        # request goes to the next (a host cut off from the network
        # answers nothing, not even a reset)
        proxy_read_timeout 10s;
        # idempotent requests only (nginx never retries a POST that
        # reached a host): a refused connection, a reset, a timeout. Not
        # http_503: a host answers 503 when Redis is away, and so does
        # every other; counted as failures (max_fails), those 503s would
        # take every host out for fail_timeout, after Redis came back
        proxy_next_upstream error timeout;
        # server-sent events as they come
        proxy_buffering off;

        location / {
            proxy_pass http://$upstream;
        }
EOF
        [ $upstream = notes ] || cat <<EOF

        # long-lived: the chat's WebSocket and the clock's event stream
        location ~ ^/(chat|clock)\$ {
            proxy_pass http://$upstream;
            proxy_read_timeout 1h;
        }
EOF
        echo "    }"
    done
    echo "}"
}

# Redis's command line: an append-only file, fsync'd every second, so
# that sessions survive a restart (a crash loses at most a second of them)
redis_argv=(redis-server --bind "${addr[redis]}" --port "$redis_port"
            --protected-mode no --dir "$state/redis"
            --appendonly yes --appendfsync everysec --save ""
            --daemonize yes --pidfile "$state/redis/redis.pid"
            --logfile "$state/redis/redis.log")

# write_config HOST FUNCTION: HOST's nginx.conf from FUNCTION; a running
# nginx whose configuration changed reloads it
write_config() {
    local h=$1 conf=$state/$1/nginx.conf
    mkdir -p "$state/$h/tmp"
    chmod 711 "$state/$h"
    "$2" "$h" > "$conf.new"
    if cmp -s "$conf.new" "$conf"; then
        rm "$conf.new"
    else
        mv "$conf.new" "$conf"
        if running "$h" && [ -f "$state/$h/nginx.pid" ]; then
            log "$h: its configuration changed: reloading"
            kill -HUP "$(cat "$state/$h/nginx.pid")"
        fi
    fi
}

write_configs() {
    local h
    mkdir -p "$state" "$state/cache" "$state/redis"
    chmod 755 "$state"
    for h in "${apps[@]}"; do
        write_config "$h" app_config
    done
    write_config front front_config
}

# --- servers -------------------------------------------------------------------

# http_ok HOST URL: an answer (any status below 500) from inside HOST
http_ok() {
    local code
    code=$(inside "$1" curl -s -o /dev/null -m 5 -w '%{http_code}' "$2" 2>/dev/null) || return 1
    [ "$code" -ge 200 ] && [ "$code" -lt 500 ]
}

# wait_until SECONDS HOST COMMAND...: until COMMAND succeeds; fails after
# SECONDS, or at once when HOST has no process left (its server exited)
wait_until() {
    local limit=$1 host=$2 t=0; shift 2
    until "$@"; do
        t=$((t + 1))
        [ $t -le $((limit * 5)) ] && running "$host" || return 1
        sleep 0.2
    done
}

redis_ok() {
    [ "$(inside client redis-cli -h "${addr[redis]}" -p "$redis_port" ping 2>/dev/null)" = PONG ]
}

app_ok() {
    http_ok client "http://${addr[$1]}:$live_port/" \
        && http_ok client "http://${addr[$1]}:$notes_port/"
}

start() {
    local h=$1
    if running "$h"; then
        return 0
    fi
    case $h in
        redis)
            inside redis "${redis_argv[@]}" >/dev/null
            ;;
        front)
            inside front "$nginx" -e "$state/front/error.log" -p "$state/front" \
                -c "$state/front/nginx.conf"
            ;;
        app*)
            inside "$h" "$nginx" -e "$state/$h/error.log" -p "$state/$h" \
                -c "$state/$h/nginx.conf"
            ;;
        *) die "no host \"$h\" (front, app1, app2, app3, redis)" ;;
    esac
}

# ready HOST: waits until HOST answers
ready() {
    case $1 in
        redis) wait_until 20 redis redis_ok ;;
        front) wait_until 20 front http_ok client "http://${addr[front]}/" ;;
        app*) wait_until 120 "$1" app_ok "$1" ;;
    esac || {
        log "$1 does not answer; the end of its log:"
        tail -20 "$state/$1/$([ "$1" = redis ] && echo redis || echo error).log" >&2 || true
        return 1
    }
}

# stop_host HOST SIGNAL: signals every process of HOST, waits for them
stop_host() {
    local h=$1 sig=$2 p t
    for p in $(pids "$h"); do
        kill "-$sig" "$p" 2>/dev/null || true
    done
    for t in $(seq 100); do
        running "$h" || return 0
        sleep 0.1
    done
    for p in $(pids "$h"); do
        kill -KILL "$p" 2>/dev/null || true
    done
    sleep 0.2
}

up() {
    [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces): sudo $0 up"
    command -v ip >/dev/null || die "ip is missing: scripts/install-deps.sh cluster"
    command -v redis-server >/dev/null || die "redis-server is missing: scripts/install-deps.sh"
    [ -x "$nginx" ] || die "nginx is missing: scripts/install-deps.sh"
    [ -f "$top/build/ngx_http_jvm_module.so" ] && [ -f "$top/build/redis-lib/.done" ] \
        || die "the build is missing: make all"
    # a failed up leaves nothing behind (NJC_KEEP=1 keeps it to look at)
    trap 'status=$?; if [ $status -ne 0 ] && [ -z "${NJC_KEEP:-}" ]; then
              log "up failed: removing what it made"; down; fi' EXIT
    network_up
    write_configs
    # (no "&&" between them: set -e stops at the first that fails)
    start redis
    ready redis
    # the first application host builds the class cache the others use
    start app1
    ready app1
    start app2
    start app3
    ready app2
    ready app3
    start front
    ready front
    trap - EXIT
    echo "live:  http://${addr[front]}/    (examples/live)"
    echo "notes: http://${addr[front]}:81/ (examples/notes)"
    echo "from inside the cluster: ip netns exec $ns-client curl http://${addr[front]}/"
}

down() {
    local h
    for h in "${hosts[@]}"; do
        stop_host "$h" TERM
    done
    for h in "${hosts[@]}" net; do
        ! have_ns "$ns-$h" || ip netns del "$ns-$h"
    done
    rm -rf "$state"
}

status() {
    local h p state_of
    have_ns "$ns-net" || { echo "cluster: down"; return 0; }
    for h in "${hosts[@]}"; do
        if ! have_ns "$ns-$h"; then
            state_of="no namespace"
        elif [ "$h" = client ]; then
            state_of="for clients"
        elif ! running "$h"; then
            state_of="stopped"
        else
            p=$(pids "$h" | paste -sd, -)
            case $h in
                redis) redis_ok && state_of="answers (pids $p)" || state_of="not answering (pids $p)" ;;
                front) http_ok client "http://${addr[front]}/" && state_of="answers (pids $p)" \
                           || state_of="not answering (pids $p)" ;;
                *) app_ok "$h" && state_of="answers (pids $p)" || state_of="not answering (pids $p)" ;;
            esac
        fi
        printf '%-7s %-15s %s\n' "$h" "${addr[$h]}" "$state_of"
    done
}

config() {
    local h
    write_configs
    for h in "${apps[@]}"; do
        echo "# ---- $h: $state/$h/nginx.conf"
        cat "$state/$h/nginx.conf"
        echo
    done
    echo "# ---- front: $state/front/nginx.conf"
    cat "$state/front/nginx.conf"
    echo "# ---- redis: the command line"
    h=$(printf '%q ' "${redis_argv[@]}")
    echo "${h% }"
}

# host NAME: NAME if it is a host with a server, else an error
host() {
    case ${1:-} in
        front|app1|app2|app3|redis) echo "$1" ;;
        *) die "no host \"${1:-}\" (front, app1, app2, app3, redis)" ;;
    esac
}

case ${1:-} in
    up) up ;;
    down) down ;;
    status) status ;;
    config)
        # written where up would write them, unless the cluster runs
        if have_ns "$ns-net"; then config; else
            trap 'rm -rf "$state"' EXIT; config; fi ;;
    kill) h=$(host "${2:-}"); stop_host "$h" KILL ;;
    stop) h=$(host "${2:-}"); stop_host "$h" TERM ;;
    start) h=$(host "${2:-}"); start "$h"; ready "$h" ;;
    unplug) h=$(host "${2:-}"); ip -n "$ns-net" link set "v-$h" down ;;
    plug) h=$(host "${2:-}"); ip -n "$ns-net" link set "v-$h" up ;;
    *) sed -n '2,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
