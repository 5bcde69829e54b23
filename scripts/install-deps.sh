#!/usr/bin/env bash
# Installs what building and testing nginx-jvm needs on Debian 12, with apt
# when run as root; otherwise prints the command to run.
set -euo pipefail

packages=(nginx nginx-dev openjdk-17-jdk-headless maven gcc make dpkg-dev
          libring-core-clojure libcompojure-clojure libdata-json-clojure curl wrk python3 python3-pytest)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "install-deps: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "install-deps: missing packages; run as root:" >&2
        echo "  sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
fi

# Python test clients: websockets (WebSocket tests) and kosoku (Autobahn's
# RFC 6455 cases on Python 3), from PyPI, for the Python that has pytest.
for py in python3 /usr/bin/python3; do
    if "$py" -c 'import pytest' 2>/dev/null; then
        if ! "$py" -c 'import websockets, kosoku' 2>/dev/null; then
            echo "install-deps: pip install websockets kosoku for $py"
            "$py" -m pip install -q "websockets==17.4" "kosoku==0.1.0" 2>/dev/null \
                || "$py" -m pip install -q --break-system-packages \
                       "websockets==17.4" "kosoku==0.1.0"
        fi
        break
    fi
done

# redis-server: the tests of the Redis session store and the topic bridge
# (tests/test_sessions.py, tests/test_redis_bridge.py) and bench/shared.py
# start their own on a loopback port, so the package's service is not
# started: a policy-rc.d refuses it while apt installs. ("install-deps.sh
# bench", which the benchmarks call, installs the same.)
if ! [ -x /usr/sbin/redis-server ] && ! [ -x /usr/bin/redis-server ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "install-deps: run as root: sudo apt-get install -y redis-server" >&2
        exit 1
    fi
    echo "install-deps: installing redis-server (its service not started)"
    policy=/usr/sbin/policy-rc.d
    if ! [ -e "$policy" ]; then        # containers often have one already
        printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy"
        trap 'rm -f "$policy"' EXIT
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends redis-server >/dev/null
fi
