#!/usr/bin/env bash
# Builds Debian's nginx of one suite (bookworm 1.22, trixie 1.26, sid 1.30)
# and ngx_http_jvm_module against it, for `make test-nginx-matrix`:
#
#   scripts/nginx-version.sh SUITE      prints the directory it made,
#                                       build/nginx-VERSION (and the link
#                                       build/nginx-SUITE to it)
#
# The suite's packages come through a private apt configuration in
# build/apt (its own sources list, lists and cache): the machine's apt
# sources are never changed.
#
# Debian's source package first: `apt-get source nginx/SUITE` (Debian's
# patches applied by dpkg-source), configured with the flags of the
# package's debian/rules (the nginx binary package's, less the dynamic
# modules needing libraries of their own: geoip, image filter, perl, xslt)
# and built on this machine.  Where the archive does not serve the suite's
# current source package (a mirror holding binaries only), Debian's binary
# package of that version instead: nginx run by the suite's own dynamic
# loader with the suite's libc, OpenSSL, PCRE2 and zlib (patchelf names
# them in build/nginx-VERSION/sbin/nginx, a copy of Debian's binary).  Either way the module
# is built against the same version's tree with its configure flags
# (nginx-dev's conf_flags, as Debian builds its modules), so the nginx
# loads it (--with-compat, the same signature).  The file ROUTE says which.
#
# NGX_JVM_JAVA_HOME: the JDK whose JNI headers the module builds with.
set -euo pipefail

suite=${1:?usage: nginx-version.sh bookworm|trixie|sid}
top=$(cd "$(dirname "$0")/.." && pwd)
java_home=${NGX_JVM_JAVA_HOME:?}
apt_dir=$top/build/apt
arch=$(dpkg --print-architecture)
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
mirror=${NGINX_JVM_DEBIAN_MIRROR:-http://deb.debian.org/debian}

say() { echo "nginx-version ($suite): $*" >&2; }

case $suite in
    bookworm|trixie|sid) ;;
    *) echo "nginx-version.sh: SUITE is bookworm, trixie or sid" >&2; exit 2 ;;
esac

# The private apt configuration: deb and deb-src of the three suites.
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
{
    for s in bookworm trixie sid; do
        echo "deb [arch=$arch signed-by=$keyring] $mirror $s main"
        echo "deb-src [signed-by=$keyring] $mirror $s main"
    done
} > "$apt_dir/sources.list.new"
cmp -s "$apt_dir/sources.list.new" "$apt_dir/sources.list" \
    || { mv "$apt_dir/sources.list.new" "$apt_dir/sources.list"; rm -f "$apt_dir/.updated"; }
rm -f "$apt_dir/sources.list.new"
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list"
          -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$apt_dir/lists"
          -o "Dir::Cache=$apt_dir/cache"
          -o "Dir::State::Status=$apt_dir/status"
          -o APT::Sandbox::User=root
          -o Debug::NoLocking=1)
touch "$apt_dir/status"
# the indexes, once a day
if [ -z "$(find "$apt_dir/.updated" -mmin -1440 2>/dev/null)" ]; then
    say "apt-get update (private configuration $apt_dir)"
    apt-get "${apt_opts[@]}" update -qq >&2
    touch "$apt_dir/.updated"
fi

# the suite's version of the source package
version=$(apt-cache "${apt_opts[@]}" madison nginx \
          | awk -F'|' -v s=" $suite/main Sources" '$3 ~ s"$" { gsub(/ /, "", $2); print $2; exit }')
[ -n "$version" ] || { say "no nginx source package in $suite"; exit 1; }
upstream=${version%-*}
out=$top/build/nginx-$upstream
ln -sfn "nginx-$upstream" "$top/build/nginx-$suite"

# Already built, for this version and this module's sources?
stamp=$out/.built
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$version" ] \
   && [ -f "$out/ngx_http_jvm_module.so" ] \
   && [ -z "$(find "$top/src/c" -newer "$out/ngx_http_jvm_module.so" -print -quit)" ]; then
    echo "$out"
    exit 0
fi
# module TREE: builds ngx_http_jvm_module.so in the configured nginx tree
# TREE (objs/Makefile) and copies it to $out
module() {
    make -s -C "$1" -f objs/Makefile modules > "$out/make-module.log" 2>&1 || {
        cat "$out/make-module.log" >&2; exit 1; }
    grep -E "warning|error" "$out/make-module.log" >&2 || true
    cp "$1/objs/ngx_http_jvm_module.so" "$out/ngx_http_jvm_module.so.new"
    mv -f "$out/ngx_http_jvm_module.so.new" "$out/ngx_http_jvm_module.so"
}

mkdir -p "$out"
# Only the module changed: rebuilt in the configured tree, nginx kept
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$version" ] \
   && [ -f "$out/src/objs/Makefile" ] && [ -x "$out/sbin/nginx" ] \
   && [ ! "$top/src/c/config" -nt "$out/src/objs/Makefile" ]; then
    say "the module, for nginx $version"
    module "$out/src"
    echo "$out"
    exit 0
fi

# rules_flags DIR: the configure flags debian/rules gives the nginx binary
# (make evaluates the rules' own variables: dpkg-buildflags' CFLAGS too)
rules_flags() {
    local var
    for var in bin_configure_flags nginx_configure_flags full_configure_flags; do
        flags=$(cd "$1" && make -s -f debian/rules --no-print-directory \
                    --eval "njvm-print: ; @printf '%s\n' '\$($var)'" njvm-print 2>/dev/null) \
            && [ -n "$flags" ] && { printf '%s' "$flags"; return 0; }
    done
    return 1
}

src_dir=$out/src
if [ "$(cat "$out/ROUTE" 2>/dev/null | cut -d' ' -f1)" != binary ] \
   && { [ -d "$src_dir/debian" ] || {
        rm -rf "$src_dir" "$out/source" && mkdir -p "$out/source" &&
        say "apt-get source nginx=$version" &&
        (cd "$out/source" && apt-get "${apt_opts[@]}" source -qq "nginx=$version" >&2) &&
        mv "$out/source/nginx-$upstream" "$src_dir"; }; }; then
    flags=$(rules_flags "$src_dir") || { say "no configure flags in debian/rules"; exit 1; }
    # eval: the flags are quoted as in a shell (--with-cc-opt="...")
    eval "args=($flags)"
    keep=()
    for a in "${args[@]}"; do
        case $a in
            --with-http_geoip_module*|--with-stream_geoip_module*|\
            --with-http_image_filter_module*|--with-http_perl_module*|\
            --with-http_xslt_module*|--add-dynamic-module=*|--add-module=*) ;;
            *) keep+=("$a") ;;
        esac
    done
    say "configure (Debian's flags) and build nginx $version from source"
    (cd "$src_dir" && NGX_JVM_JAVA_HOME=$java_home ./configure "${keep[@]}" \
        --add-dynamic-module="$top/src/c" > "$out/configure.log" 2>&1) || {
        tail -30 "$out/configure.log" >&2; exit 1; }
    make -s -C "$src_dir" -f objs/Makefile -j"$(nproc)" > "$out/make.log" 2>&1 || {
        tail -40 "$out/make.log" >&2; exit 1; }
    module "$src_dir"
    mkdir -p "$out/sbin"
    ln -sfn ../src/objs/nginx "$out/sbin/nginx"
    echo "source nginx $version (apt-get source, configured with debian/rules' flags)" > "$out/ROUTE"
else
    say "the archive serves no source package nginx $version: Debian's binary package"
    rm -rf "$out/source" "$out/debs" "$out/root" "$src_dir"
    mkdir -p "$out/debs" "$out/root"
    (cd "$out/debs" && apt-get "${apt_opts[@]}" download -qq \
        "nginx=$version" "nginx-dev=$version" >&2)
    # the libraries it links, as the suite has them
    deps=$(dpkg-deb -f "$out"/debs/nginx_*.deb Depends | tr ',' '\n' \
           | sed -e 's/^ *//' -e 's/[ (].*//' | grep -E '^(lib|zlib)' || true)
    (cd "$out/debs" && apt-get "${apt_opts[@]}" download -qq \
        $(for d in libc6 $deps; do printf '%s/%s ' "$d" "$suite"; done) >&2)
    for d in "$out"/debs/*.deb; do
        dpkg-deb -x "$d" "$out/root"
    done
    loader=$(cd "$out/root" && find . -name 'ld-linux-x86-64.so.2' | head -1)
    [ -n "$loader" ] || { say "no dynamic loader in $suite's libc6"; exit 1; }
    multiarch=$(gcc -print-multiarch)
    # the suite's loader and libraries, named in the binary itself (its
    # interpreter, and an RPATH, which its libraries' look-ups follow too):
    # run as nginx, by the kernel, it keeps its usual process titles
    mkdir -p "$out/sbin"
    cp "$out/root/usr/sbin/nginx" "$out/sbin/nginx.new"
    patchelf --set-interpreter "$out/root/${loader#./}" --force-rpath \
        --set-rpath "$out/root/usr/lib/$multiarch:$out/root/lib/$multiarch" \
        "$out/sbin/nginx.new"
    mv -f "$out/sbin/nginx.new" "$out/sbin/nginx"
    cp -r "$out/root/usr/share/nginx/src" "$src_dir"
    # shellcheck disable=SC1091
    source "$src_dir/conf_flags"
    (cd "$src_dir" && NGX_JVM_JAVA_HOME=$java_home ./configure "${NGX_CONF_FLAGS[@]}" \
        --add-dynamic-module="$top/src/c" > "$out/configure.log" 2>&1) || {
        tail -30 "$out/configure.log" >&2; exit 1; }
    module "$src_dir"
    echo "binary nginx $version (apt-get download; the module built with nginx-dev's conf_flags)" > "$out/ROUTE"
fi
"$out/sbin/nginx" -V > "$out/nginx-V.txt" 2>&1 || { cat "$out/nginx-V.txt" >&2; exit 1; }
echo "$version" > "$stamp"
say "$(cat "$out/ROUTE"): $out"
echo "$out"
