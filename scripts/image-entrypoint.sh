#!/bin/bash
# The image's entry point (scripts/build-image.sh installs it as
# /usr/local/bin/nginx-jvm-image): `nginx-jvm run`, or `nginx-jvm dev` when
# the first word says so, on port 8080 of all the container's addresses
# (which `podman run -p` publishes):
#
#   podman run ... localhost/nginx-jvm --handler ...        run
#   podman run ... localhost/nginx-jvm run --handler ...    run
#   podman run ... localhost/nginx-jvm dev --handler ...    dev
#
# dev's --repl PORT and --debug PORT listen on all the container's addresses
# too (the container's loopback is its own: a published port cannot reach
# it); ADDR:PORT names one.  The port is reached only where it is published:
# `-p 127.0.0.1:7000:7000` keeps it on the host's loopback.
set -euo pipefail

command=run
case ${1-} in
    run|dev) command=$1; shift ;;
esac

args=()
while [ $# -gt 0 ]; do
    if [ "$command" = dev ] && [ $# -ge 2 ] \
       && [[ $1 == --repl || $1 == --debug ]] && [[ $2 =~ ^[0-9]+$ ]]; then
        args+=("$1" "0.0.0.0:$2")
        shift 2
        continue
    fi
    args+=("$1")
    shift
done

exec /usr/bin/nginx-jvm "$command" --listen 0.0.0.0 --port 8080 \
    ${args[@]+"${args[@]}"}
