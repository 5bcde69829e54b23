#!/usr/bin/env bash
# Installs what building and testing nginx-jvm needs on Debian 12, with apt
# when run as root; otherwise prints the command to run.
set -euo pipefail

packages=(nginx nginx-dev openjdk-17-jdk-headless maven gcc make dpkg-dev
          libring-core-clojure libcompojure-clojure libdata-json-clojure curl wrk python3 python3-pytest
          python3-pip
          libhiccup-clojure leiningen patchelf
          clang-14 libclang-rt-14-dev)
# clang 14 with its libFuzzer and sanitizer runtimes: the fuzzing harnesses
# (`make fuzz`, and a short run in `make test`; fuzz/README.md).
# PostgreSQL (Debian's), for bench/realapp and the tests of its verifier,
# which start a private cluster of their own; redis-server, for the tests of
# the Redis session store and the topic bridge (tests/test_sessions.py,
# tests/test_redis_bridge.py) and bench/shared.py, which start their own on a
# loopback port: the packages' services are not started (quiet_install,
# below).
quiet_packages=(postgresql redis-server)

# not_installed PACKAGE...: prints those of the packages dpkg has not
# installed, one a line
not_installed() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" \
            || echo "$p"
    done
}

# apt_update: apt-get update as root, once, before the first install
updated=
apt_update() {
    [ -n "$updated" ] || [ "$(id -u)" -ne 0 ] || apt-get update -qq
    updated=1
}

# quiet_install PACKAGE...: apt-get install as root, a policy-rc.d refusing
# the packages' services while apt installs them
quiet_install() {
    local policy=/usr/sbin/policy-rc.d made=
    if [ "$(id -u)" -ne 0 ]; then
        echo "install-deps: run as root: sudo apt-get install -y $*" >&2
        exit 1
    fi
    if ! [ -e "$policy" ]; then        # containers often have one already
        printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy"
        made=1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null || {
        [ -z "$made" ] || rm -f "$policy"
        return 1
    }
    [ -z "$made" ] || rm -f "$policy"
}

# quiet_group PACKAGE...: quiet_install of those not installed yet
quiet_group() {
    local need
    mapfile -t need < <(not_installed "$@")
    [ ${#need[@]} -gt 0 ] || return 0
    echo "install-deps: installing ${need[*]} (their services not started)"
    apt_update
    quiet_install "${need[@]}"
}

mapfile -t missing < <(not_installed "${packages[@]}")
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "install-deps: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt_update
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "install-deps: missing packages; run as root:" >&2
        echo "  sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
fi
quiet_group "${quiet_packages[@]}"

# Python test clients: websockets (WebSocket tests), kosoku (Autobahn's
# RFC 6455 cases on Python 3), aioquic (the HTTP/3 client of
# tests/h3client.py) and opentelemetry-proto (the OTLP messages the
# tracing tests' receiver decodes, tests/otlp.py) and pytest-xdist (make
# test's two test processes, tests/conftest.py), from PyPI, for the Python
# that has pytest.
for py in python3 /usr/bin/python3; do
    if "$py" -c 'import pytest' 2>/dev/null; then
        if ! "$py" -c 'import websockets, kosoku, aioquic, opentelemetry.proto, xdist' 2>/dev/null; then
            echo "install-deps: pip install websockets kosoku aioquic opentelemetry-proto pytest-xdist for $py"
            pins=("websockets==17.4" "kosoku==0.1.0" "aioquic==1.7.2"
                  "opentelemetry-proto==1.45.2" "pytest-xdist==3.8.0")
            "$py" -m pip install -q "${pins[@]}" 2>/dev/null \
                || "$py" -m pip install -q --break-system-packages "${pins[@]}"
        fi
        break
    fi
done

# "install-deps.sh cluster", for `make cluster` and `make cluster-test`
# (scripts/cluster.sh): ip (iproute2) for the network namespaces, and
# Debian's chromium for the browser test (headless, driven over its
# DevTools protocol).
if [ "${1:-}" = cluster ]; then
    quiet_group iproute2 chromium
fi

# "install-deps.sh roots", for `make deb DIST=trixie`, `make image` and their
# tests (scripts/debian-root.sh, scripts/build-image.sh): Debian's mmdebstrap
# makes the Debian 13 roots, podman (with runc as its runtime: crun refuses
# hybrid cgroups; scripts/podman.sh gives it its configuration) builds and
# runs the image; uidmap and slirp4netns are what podman needs rootless.
if [ "${1:-}" = roots ]; then
    quiet_group mmdebstrap podman runc uidmap slirp4netns
fi

# "install-deps.sh bench", for `make bench-realapp`: Ring's Jetty adapter, h2load
# (nghttp2-client, for make bench-protocols), matplotlib for
# Debian's python3 (the report's plots), and oha (crates.io, built by cargo; pinned), the
# fixed-rate load generator (-q RATE --latency-correction: wrk2's open
# model, HDR percentiles in its JSON).
OHA_VERSION=1.16.0
if [ "${1:-}" = bench ]; then
    # Ring's Jetty adapter (Jetty 9.4), one of the servers compared
    quiet_group libring-jetty-adapter-clojure
    # h2load, HTTP/2's load generator (bench/protocols.py, make bench-protocols)
    quiet_group nghttp2-client
    if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
        echo "install-deps: installing python3-matplotlib"
        quiet_install python3-matplotlib
    fi
    cargo=$(command -v cargo || echo "$HOME/.cargo/bin/cargo")
    oha=$(command -v oha || echo "$HOME/.cargo/bin/oha")
    if ! "$oha" --version 2>/dev/null | grep -q " $OHA_VERSION\$"; then
        [ -x "$cargo" ] || { echo "install-deps: oha needs cargo (rustup)" >&2; exit 1; }
        echo "install-deps: cargo install oha $OHA_VERSION (a few minutes)"
        "$cargo" install --locked --quiet oha --version "$OHA_VERSION"
    fi
fi
