#!/usr/bin/env bash
# Builds h2spec (github.com/summerwind/h2spec, the HTTP/2 conformance tool)
# into build/h2spec/h2spec with the Go toolchain, from the Go module proxy,
# at the version and with the dependencies scripts/h2spec/go.mod pins;
# prints its path. Does nothing when it is there and newer than go.mod.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/h2spec
bin=$out/h2spec

if [ -x "$bin" ] && [ "$bin" -nt "$top/scripts/h2spec/go.mod" ]; then
    echo "$bin"
    exit 0
fi
command -v go > /dev/null || {
    echo "h2spec.sh: the go command is missing (Go 1.26 or newer)" >&2; exit 1; }
mkdir -p "$out"
echo "h2spec.sh: building h2spec into $out (a few minutes the first time)" >&2
(cd "$top/scripts/h2spec" \
    && GOFLAGS=-mod=readonly go build -o "$bin.new" \
        github.com/summerwind/h2spec/cmd/h2spec)
mv -f "$bin.new" "$bin"
echo "$bin"
