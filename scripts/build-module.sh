#!/usr/bin/env bash
# Builds ngx_http_jvm_module.so for the system nginx: Debian's nginx-dev ships
# nginx's configure, headers and the exact configure flags of its build.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build
src=$out/nginx-src
java_home=${NGX_JVM_JAVA_HOME:?}

mkdir -p "$out"
stamp=$out/.configured
if [ ! -f "$stamp" ] || [ "$top/src/c/config" -nt "$stamp" ] \
   || [ /usr/share/nginx/src/conf_flags -nt "$stamp" ]; then
    rm -rf "$src"
    cp -r /usr/share/nginx/src "$src"
    # shellcheck disable=SC1091
    source "$src/conf_flags"
    (cd "$src" && NGX_JVM_JAVA_HOME=$java_home ./configure "${NGX_CONF_FLAGS[@]}" \
        --add-dynamic-module="$top/src/c" > "$out/configure.log" 2>&1) || {
        tail -30 "$out/configure.log"; exit 1; }
    touch "$stamp"
fi

make -s -C "$src" -f objs/Makefile modules > "$out/make-module.log" 2>&1 || {
    cat "$out/make-module.log"; exit 1; }
grep -E "warning|error" "$out/make-module.log" || true
# a new file renamed into place: an nginx running the old one keeps it mapped
cp "$src/objs/ngx_http_jvm_module.so" "$out/ngx_http_jvm_module.so.new"
mv -f "$out/ngx_http_jvm_module.so.new" "$out/ngx_http_jvm_module.so"
