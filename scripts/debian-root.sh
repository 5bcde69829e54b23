#!/usr/bin/env bash
# Makes a Debian root with Debian's mmdebstrap, once, and prints its path:
#
#   scripts/debian-root.sh build    build/roots/trixie-build: Debian 13 with
#                                   its nginx-dev (1.26.3), OpenJDK 21 and a
#                                   compiler, where `make deb DIST=trixie`
#                                   builds the module and the package; with
#                                   the Ring libraries the package suggests,
#                                   tests/test_deb_trixie.py installs the
#                                   package into a copy of it
#   scripts/debian-root.sh run      build/roots/trixie: Debian 13 with its
#                                   nginx and a JRE 21, nothing else: the
#                                   image's base (scripts/build-image.sh)
#
# A root is made once and kept (build/roots is the cache `make test` shares
# between tests/test_deb_trixie.py and tests/test_image.py, and between
# runs); it is remade when what makes it changes: mmdebstrap's arguments,
# the package list among them, which ROOT.done holds.  mmdebstrap runs under
# the heavy lock (/tmp/nginx-jvm-heavy.lock): it downloads and unpacks some
# hundred packages; a second caller waits there, then finds the root made.
# It needs root.
#
# NGINX_JVM_DEBIAN_MIRROR: the archive (http://deb.debian.org/debian).
# ARCH=arm64: a root for that CPU (build/roots/trixie-arm64,
# trixie-build-arm64), its programs run by qemu-user through binfmt_misc
# (scripts/qemu-binfmt.sh registers it): `make image ARCH=arm64`.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:?usage: debian-root.sh build|run}
suite=trixie
mirror=${NGINX_JVM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
case $kind in
    build) name=$suite-build
           packages=nginx,nginx-dev,openjdk-21-jdk-headless,gcc,make,dpkg-dev,libpcre2-dev,libssl-dev,zlib1g-dev,unzip
           packages=$packages,libring-core-clojure,libcompojure-clojure,libdata-json-clojure ;;
    # ca-certificates: a handler calling out over TLS; openssl: the
    # launcher's --tls-self-signed; unzip: the launcher reads jars' manifests
    run)   name=$suite
           packages=nginx,openjdk-21-jre-headless,ca-certificates,openssl,unzip ;;
    *) echo "debian-root.sh: build or run" >&2; exit 2 ;;
esac
arch=${ARCH:-$(dpkg --print-architecture)}
if [ "$arch" != "$(dpkg --print-architecture)" ]; then
    "$top/scripts/qemu-binfmt.sh" "$arch" >&2
    name=$name-$arch
fi
root=$top/build/roots/$name
stamp=$root.done

[ "$(id -u)" = 0 ] || { echo "debian-root.sh: mmdebstrap needs root here" >&2; exit 1; }
command -v mmdebstrap >/dev/null || "$top/scripts/install-deps.sh" roots >&2

# --skip=cleanup/apt/lists: apt in the root can then install a local .deb
# (and resolve its Depends) without going to the network
args=(--variant=minbase --skip=cleanup/apt/lists --include="$packages" "$suite")
[ "$arch" = "$(dpkg --print-architecture)" ] || args=(--arch="$arch" "${args[@]}")
made() { [ "$(cat "$stamp" 2>/dev/null)" = "${args[*]}" ]; }

if ! made; then
    exec 9>/tmp/nginx-jvm-heavy.lock
    flock 9
    if ! made; then
        echo "debian-root: mmdebstrap $suite ($arch) into $root (about 2 minutes; emulated, much longer)" >&2
        rm -rf "$root" "$stamp"
        mkdir -p "$(dirname "$root")"
        mmdebstrap --quiet "${args[@]}" "$root" "$mirror" >&2
        echo "${args[*]}" > "$stamp"
    fi
    exec 9>&-
fi
echo "$root"
