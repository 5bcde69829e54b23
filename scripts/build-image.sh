#!/usr/bin/env bash
# Builds the OCI image nginx-jvm (`make image`), with podman
# (scripts/podman.sh: the project's configuration, its storage in
# build/podman), from nothing pulled from a registry:
#
# - the base: build/roots/trixie (scripts/debian-root.sh run: Debian 13
#   made with mmdebstrap, its nginx 1.26.3 and OpenJDK 21's JRE), imported
#   as localhost/nginx-jvm-base:trixie;
# - on it, the Debian 13 package (`make deb DIST=trixie`: the module, the
#   runtime, Clojure, the launcher), installed by dpkg;
# - the launcher as the entry point (scripts/image-entrypoint.sh: run, or
#   dev when the first word says so), run as www-data (so nginx's master
#   and its workers are not root), listening on 0.0.0.0:8080, the
#   application mounted at /app:
#
#     podman run -p 8080:8080 -v ./app:/app localhost/nginx-jvm \
#         --handler my.app/handler --classpath /app/src
#     podman run -p 127.0.0.1:8080:8080 -p 127.0.0.1:7000:7000 \
#         -v ./app:/app -v nginx-jvm-cache:/var/cache/nginx-jvm \
#         localhost/nginx-jvm dev --handler my.app/handler \
#         --classpath /app/src --repl 7000
#
# Prints the image's name and size last.  IMAGE names it (default
# localhost/nginx-jvm:latest).  ARCH=arm64 (`make image ARCH=arm64`): the
# image for arm64 (localhost/nginx-jvm:arm64), from arm64 roots, its
# programs run here by qemu-user (scripts/qemu-binfmt.sh).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
arch=${ARCH:-$(dpkg --print-architecture)}
image=${IMAGE:-localhost/nginx-jvm:latest}
base=localhost/nginx-jvm-base:trixie
podman=$top/scripts/podman.sh
dir=$top/build/image
if [ "$arch" != "$(dpkg --print-architecture)" ]; then
    image=${IMAGE:-localhost/nginx-jvm:$arch}
    base=$base-$arch
    dir=$dir-$arch
fi
export ARCH=$arch
# one build at a time of this image (two would share $dir); a second waits
mkdir -p "$dir"
exec 7>"$dir/.lock"
flock 7

root=$("$top/scripts/debian-root.sh" run)
deb=$(DIST=trixie "$top/scripts/build-deb.sh" | tail -1)
[ -f "$deb" ] || { echo "build-image: no package: $deb" >&2; exit 1; }

# the base, imported again when the root was remade
mkdir -p "$dir"
if ! "$podman" image exists "$base" || [ "$root.done" -nt "$dir/base.done" ] \
   || [ "$0" -nt "$dir/base.done" ]; then
    echo "build-image: importing $root as $base" >&2
    # less what a server needs not: apt's lists (the root keeps them for
    # the package's test), manual pages and message catalogues
    tar -C "$root" --numeric-owner --exclude='./var/lib/apt/lists/*' \
        --exclude='./usr/share/man/*' --exclude='./usr/share/locale/*' -c . \
        | "$podman" import -q --arch "$arch" - "$base" >/dev/null
    touch "$dir/base.done"
fi

rm -f "$dir"/*.deb
cp "$deb" "$dir/"
cp "$top/scripts/image-entrypoint.sh" "$dir/entrypoint"
cat > "$dir/Containerfile" <<EOF
FROM $base
COPY $(basename "$deb") /tmp/
COPY entrypoint /usr/local/bin/nginx-jvm-image
# the package (its Depends are in the base: dpkg says if one is not);
# the class cache www-data's
RUN dpkg -i /tmp/$(basename "$deb") \\
 && rm -f /tmp/*.deb \\
 && mkdir -p /app /var/cache/nginx-jvm \\
 && chown www-data:www-data /var/cache/nginx-jvm
ENV NGINX_JVM_CACHE=/var/cache/nginx-jvm
USER www-data
WORKDIR /app
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/nginx-jvm-image"]
EOF
"$podman" build -q --network=none --pull=never --platform "linux/$arch" \
    -t "$image" -f "$dir/Containerfile" "$dir" >&2
# the images this one replaced
"$podman" image prune -f >/dev/null
size=$("$podman" image inspect --format '{{.Size}}' "$image")
echo "$image $((size / 1000000)) MB"
