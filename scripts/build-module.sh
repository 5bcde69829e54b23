#!/usr/bin/env bash
# Builds ngx_http_jvm_module.so for the system nginx: Debian's nginx-dev ships
# nginx's configure, headers and the exact configure flags of its build.
#
# NGX_JVM_OUT (default build/) is where the module and its configured nginx
# tree go; NGX_JVM_CC_OPT and NGX_JVM_LD_OPT add compiler and linker flags
# (`make asan` builds an instrumented module into build/asan this way,
# leaving the normal build alone).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${NGX_JVM_OUT:-$top/build}
src=$out/nginx-src
java_home=${NGX_JVM_JAVA_HOME:?}
cc_opt=${NGX_JVM_CC_OPT:-}
ld_opt=${NGX_JVM_LD_OPT:-}

mkdir -p "$out"
stamp=$out/.configured
flags="$cc_opt|$ld_opt"
if [ ! -f "$stamp" ] || [ "$top/src/c/config" -nt "$stamp" ] \
   || [ /usr/share/nginx/src/conf_flags -nt "$stamp" ] \
   || [ "$(cat "$stamp")" != "$flags" ]; then
    rm -rf "$src"
    cp -r /usr/share/nginx/src "$src"
    # shellcheck disable=SC1091
    source "$src/conf_flags"
    extra=()
    [ -n "$cc_opt" ] && extra+=("--with-cc-opt=$cc_opt")
    [ -n "$ld_opt" ] && extra+=("--with-ld-opt=$ld_opt")
    (cd "$src" && NGX_JVM_JAVA_HOME=$java_home ./configure "${NGX_CONF_FLAGS[@]}" \
        "${extra[@]}" --add-dynamic-module="$top/src/c" > "$out/configure.log" 2>&1) || {
        tail -30 "$out/configure.log"; exit 1; }
    echo "$flags" > "$stamp"
fi

make -s -C "$src" -f objs/Makefile modules > "$out/make-module.log" 2>&1 || {
    cat "$out/make-module.log"; exit 1; }
grep -E "warning|error" "$out/make-module.log" || true
# a new file renamed into place: an nginx running the old one keeps it mapped
cp "$src/objs/ngx_http_jvm_module.so" "$out/ngx_http_jvm_module.so.new"
mv -f "$out/ngx_http_jvm_module.so.new" "$out/ngx_http_jvm_module.so"
