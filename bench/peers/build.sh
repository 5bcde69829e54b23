#!/usr/bin/env bash
# Builds the peers that `make bench` measures beside nginx-jvm, each in a
# scratch directory of its own (default build/peers/PEER), from its public
# source; nothing of theirs enters this repository.
#
#   bench/peers/build.sh [nginx-clojure] [http-kit] [enso] [ring-jetty]
#                                                       (default: all four)
#
# nginx-clojure: its C module (src/c) built as a dynamic module against
#   Debian's nginx source (nginx-dev's /usr/share/nginx/src, the system
#   nginx's own configure flags, --with-compat), loaded by /usr/sbin/nginx;
#   its Java and Clojure (src/java, src/clojure) compiled with javac into
#   nginx-clojure.jar against build/lib's Clojure.
# http-kit: its Java (src/java) compiled with javac into classes/; its
#   Clojure (src/org/httpkit) is loaded as source at run time.
# enso: its Java (src/java) compiled with a JDK 21+ javac (ENSO_JAVA_HOME,
#   Temurin 25 by default: it runs on virtual threads) against build/lib's
#   Clojure into classes/; its Clojure (src/clj) is loaded as source.
# ring-jetty: Ring's current ring-jetty-adapter and what it needs of Ring
#   (ring-core, ring-jakarta-servlet, the protocols), loaded as source from
#   Ring's repository; the Jetty 12 jars its project.clj names, from Maven
#   Central (bench/peers/jetty12/pom.xml) into lib/.
#
# Where the sources come from, per peer, the first that is set:
#   NGINX_CLOJURE_SRC, HTTP_KIT_SRC,  one peer's source
#   ENSO_SRC, RING_SRC
#   PEERS_SRC                         a directory with nginx-clojure,
#                                     http-kit, enso and ring in it (or
#                                     nginx-clojure.tar.gz, http-kit.zip, ...)
#   the GitHub archive of the pinned revision (below), fetched with curl
# A source is a source tree, a git repository (bare or not: the revision
# NGINX_CLOJURE_REV / HTTP_KIT_REV / ENSO_REV / RING_REV is taken out of
# it, the pinned one by default), a .tar.gz/.tgz/.zip archive, or an
# http(s) URL of one.
#
# Each peer's directory gets `built` (one line: version, revision, source)
# or `failed` (one line: why); bench/bench.py reads them and skips a peer
# that was not built, quoting that line.  A source that cannot be had
# leaves an earlier build in place.  Exits 1 if a peer failed.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
out_root=${PEERS_OUT:-$top/build/peers}
java_home=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
nginx_src=${NGINX_SOURCE:-/usr/share/nginx/src}
clojure_jar=$(ls "$top"/build/lib/clojure-1*.jar 2>/dev/null | head -1)

# The revisions measured in BASELINES.md: nginx-clojure 0.6.1 (master,
# 2024-05-31), http-kit 2.9.0-beta4.
NGINX_CLOJURE_PIN=ca1cf84e25b8b572fc31a2cc91d1d110a53959b0
HTTP_KIT_PIN=v2.9.0-beta4
# The 2026 peers (issue 37): enso's master of 2026-11 and Ring 1.15.5, whose
# ring-jetty-adapter runs on Jetty 12.1.
ENSO_PIN=cfe657b5a383be5489ab5a57ebdf9509ab62e23f
RING_PIN=75914ca942330ae6f8499b0ab9adda4664ad5f1b
enso_java_home=${ENSO_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}

log() { echo "bench-peers: $*" >&2; }

# fail PEER WHY...: records why PEER was not built; returns 1
fail() {
    local peer=$1
    shift
    mkdir -p "$out_root/$peer"
    rm -f "$out_root/$peer/built"
    echo "$*" > "$out_root/$peer/failed"
    log "$peer not built: $*"
    return 1
}

# extract ARCHIVE DEST: unpacks a .tar.gz or .zip, stripping a single
# top-level directory (GitHub's NAME-REV/)
extract() {
    local archive=$1 dest=$2 tmp=$2.unpack
    rm -rf "$tmp" && mkdir -p "$tmp"
    case $archive in
        *.zip) unzip -q "$archive" -d "$tmp" ;;
        *) tar -xzf "$archive" -C "$tmp" ;;
    esac || return 1
    local entries=("$tmp"/*)
    if [ ${#entries[@]} -eq 1 ] && [ -d "${entries[0]}" ]; then
        mv "${entries[0]}" "$dest"
    else
        mv "$tmp" "$dest"
    fi
    rm -rf "$tmp"
}

# git_dir DIR: prints DIR's git directory if DIR is a repository's top
# (DIR/.git) or a bare repository; a plain tree inside some repository is
# not one
git_dir() {
    if [ -e "$1/.git" ]; then
        git -C "$1" rev-parse --absolute-git-dir 2>/dev/null
    elif [ -f "$1/HEAD" ] && [ -d "$1/objects" ] && [ -d "$1/refs" ]; then
        (cd "$1" && pwd)
    else
        return 1
    fi
}

# new_source PEER SPEC REV [PATH...]: puts PEER's source into
# build/peers/PEER/src and prints where it came from; if it cannot, records
# why (`failed`) unless an earlier build is there, which is then kept as it
# is.  PATHs: only those of a git repository's revision (a mirror may lack
# a large file the build does not need, enso's bench binaries)
new_source() {
    local peer=$1 dir=$out_root/$1 from
    mkdir -p "$dir"
    if from=$(source_tree "$@" 2>"$dir/source.log"); then
        rm -rf "$dir/src" && mv "$dir/src.new" "$dir/src"
        echo "$from"
        return 0
    fi
    rm -rf "$dir/src.new"
    if [ -f "$dir/built" ]; then
        log "$peer: $(tail -1 "$dir/source.log"); the earlier build stays: $(cat "$dir/built")"
        return 1
    fi
    fail "$peer" "$(tail -1 "$dir/source.log")"
}

# source_tree PEER SPEC REV [PATH...]: puts PEER's source tree into
# build/peers/PEER/src.new; prints where it came from (for `built`)
source_tree() {
    local peer=$1 spec=$2 rev=$3 dest=$out_root/$1/src.new gitdir
    shift 3
    rm -rf "$dest"
    case $spec in
        http://*|https://*)
            local file=$dest.download
            case $spec in *.zip) file=$file.zip ;; *) file=$file.tar.gz ;; esac
            curl -fsSL --connect-timeout 15 -m 300 -o "$file" "$spec" || {
                rm -f "$file"
                echo "cannot download $spec (give a source in PEERS_SRC: bench/README.md)" >&2
                return 1; }
            extract "$file" "$dest" || { echo "cannot unpack $spec" >&2; return 1; }
            rm -f "$file"
            echo "$spec"
            return 0 ;;
    esac
    if [ -f "$spec" ]; then
        extract "$spec" "$dest" || { echo "cannot unpack $spec" >&2; return 1; }
        echo "$spec"
    elif gitdir=$(git_dir "$spec"); then
        local commit
        commit=$(git --git-dir="$gitdir" rev-parse --verify -q "$rev^{commit}") || {
            echo "no revision $rev in $spec" >&2; return 1; }
        mkdir -p "$dest"
        git --git-dir="$gitdir" archive "$commit" -- "$@" | tar -x -C "$dest" || return 1
        if [ "$rev" = "$commit" ]; then
            echo "$spec at $commit"
        else
            echo "$spec at $rev ($commit)"
        fi
    elif [ -d "$spec" ]; then
        cp -r "$spec" "$dest" || return 1
        echo "$spec"
    else
        echo "no source at $spec" >&2
        return 1
    fi
}

# version TREE: the version of its Leiningen project.clj
version() {
    sed -n 's/^(defproject [^ ]* "\([^"]*\)".*/\1/p' "$1/project.clj" 2>/dev/null | head -1
}

build_nginx_clojure() {
    local dir=$out_root/nginx-clojure src from
    src=$dir/src
    mkdir -p "$dir"
    log "nginx-clojure: source $NGINX_CLOJURE_SRC"
    from=$(new_source nginx-clojure "$NGINX_CLOJURE_SRC" \
        "${NGINX_CLOJURE_REV:-$NGINX_CLOJURE_PIN}") || return 1
    [ -f "$src/src/c/config" ] || fail nginx-clojure "no src/c/config in $from" || return 1
    [ -f "$nginx_src/conf_flags" ] || fail nginx-clojure \
        "no nginx source at $nginx_src: apt-get install nginx-dev" || return 1

    log "nginx-clojure: configuring nginx with its module"
    rm -rf "$dir/nginx-src"
    cp -r "$nginx_src" "$dir/nginx-src"
    local NGX_CONF_FLAGS
    # shellcheck disable=SC1091
    source "$dir/nginx-src/conf_flags"
    # JNI_INCS spares its config a javac/java run to find jni.h
    (cd "$dir/nginx-src" && PATH=$java_home/bin:$PATH \
        JNI_INCS="-I$java_home/include -I$java_home/include/linux" \
        ./configure "${NGX_CONF_FLAGS[@]}" --add-dynamic-module="$src/src/c") \
        > "$dir/configure.log" 2>&1 \
        || fail nginx-clojure "nginx's configure failed: see $dir/configure.log" || return 1
    log "nginx-clojure: compiling the module"
    make -C "$dir/nginx-src" -f objs/Makefile modules > "$dir/make.log" 2>&1 \
        || fail nginx-clojure "its C module does not compile against nginx" \
            "$(nginx_version): $(grep -m1 'error' "$dir/make.log")" \
        || return 1
    # renamed into place: an nginx running the old one keeps it mapped
    cp "$dir/nginx-src/objs/ngx_http_clojure_module.so" "$dir/ngx_http_clojure_module.so.new"
    mv -f "$dir/ngx_http_clojure_module.so.new" "$dir/ngx_http_clojure_module.so"

    log "nginx-clojure: compiling its Java"
    [ -n "$clojure_jar" ] || fail nginx-clojure "no build/lib/clojure-*.jar: run \`make libs\`" || return 1
    rm -rf "$dir/classes" && mkdir -p "$dir/classes"
    find "$src/src/java" -name '*.java' > "$dir/java-sources"
    # its sources are Java 8 and use sun.misc.Unsafe and sun.nio.*, which
    # --release would hide
    "$java_home/bin/javac" -nowarn -encoding UTF-8 -source 8 -target 8 \
        -cp "$clojure_jar" -d "$dir/classes" @"$dir/java-sources" \
        > "$dir/javac.log" 2>&1 \
        || fail nginx-clojure "javac failed: see $dir/javac.log" || return 1
    # resources beside the Java sources, and the Clojure namespaces
    (cd "$src/src/java" && find . -type f ! -name '*.java' -exec cp --parents {} "$dir/classes/" \;)
    cp -r "$src/src/clojure/." "$dir/classes/"
    "$java_home/bin/jar" cf "$dir/nginx-clojure.jar.new" -C "$dir/classes" . \
        && mv -f "$dir/nginx-clojure.jar.new" "$dir/nginx-clojure.jar" \
        || fail nginx-clojure "jar failed" || return 1
    rm -f "$dir/failed"
    echo "nginx-clojure $(version "$src") from $from, against nginx $(nginx_version)" > "$dir/built"
    log "$(cat "$dir/built")"
}

build_http_kit() {
    local dir=$out_root/http-kit src from
    src=$dir/src
    mkdir -p "$dir"
    log "http-kit: source $HTTP_KIT_SRC"
    from=$(new_source http-kit "$HTTP_KIT_SRC" \
        "${HTTP_KIT_REV:-$HTTP_KIT_PIN}") || return 1
    [ -f "$src/src/org/httpkit/server.clj" ] && [ -d "$src/src/java" ] \
        || fail http-kit "no src/java and src/org/httpkit/server.clj in $from" || return 1
    [ -n "$clojure_jar" ] || fail http-kit "no build/lib/clojure-*.jar: run \`make libs\`" || return 1
    log "http-kit: compiling its Java"
    rm -rf "$dir/classes" && mkdir -p "$dir/classes"
    find "$src/src/java" -name '*.java' > "$dir/java-sources"
    "$java_home/bin/javac" -nowarn -encoding UTF-8 --release 8 \
        -cp "$clojure_jar" -d "$dir/classes" @"$dir/java-sources" \
        > "$dir/javac.log" 2>&1 \
        || fail http-kit "javac failed: see $dir/javac.log" || return 1
    rm -f "$dir/failed"
    echo "http-kit $(version "$src") from $from" > "$dir/built"
    log "$(cat "$dir/built")"
}

build_enso() {
    local dir=$out_root/enso src from rev
    src=$dir/src
    mkdir -p "$dir"
    rev=${ENSO_REV:-$ENSO_PIN}
    log "enso: source $ENSO_SRC"
    from=$(new_source enso "$ENSO_SRC" "$rev" src deps.edn LICENSE NOTICE) || return 1
    [ -f "$src/src/clj/s_exp/enso.clj" ] && [ -d "$src/src/java" ] \
        || fail enso "no src/java and src/clj/s_exp/enso.clj in $from" || return 1
    [ -x "$enso_java_home/bin/javac" ] \
        || fail enso "no JDK 21+ at $enso_java_home (ENSO_JAVA_HOME): its core runs on virtual threads" \
        || return 1
    [ -n "$clojure_jar" ] || fail enso "no build/lib/clojure-*.jar: run \`make libs\`" || return 1
    log "enso: compiling its Java"
    rm -rf "$dir/classes" && mkdir -p "$dir/classes"
    find "$src/src/java" -name '*.java' > "$dir/java-sources"
    # its own build's javac options (build.clj)
    "$enso_java_home/bin/javac" -nowarn -encoding UTF-8 --release 21 \
        -cp "$clojure_jar" -d "$dir/classes" @"$dir/java-sources" > "$dir/javac.log" 2>&1 \
        || fail enso "javac failed: see $dir/javac.log" || return 1
    rm -f "$dir/failed"
    echo "enso $rev from $from, javac of $("$enso_java_home/bin/java" -version 2>&1 | head -1)" \
        > "$dir/built"
    log "$(cat "$dir/built")"
}

build_ring_jetty() {
    local dir=$out_root/ring-jetty src from jetty version m
    src=$dir/src
    mkdir -p "$dir"
    log "ring-jetty: source $RING_SRC"
    from=$(new_source ring-jetty "$RING_SRC" "${RING_REV:-$RING_PIN}") || return 1
    for m in ring-jetty-adapter ring-jakarta-servlet ring-core ring-core-protocols \
             ring-websocket-protocols; do
        [ -d "$src/$m/src" ] || fail ring-jetty "no $m/src in $from: not Ring's repository" || return 1
    done
    jetty=$(sed -n 's|.*org.eclipse.jetty/jetty-server "\([^"]*\)".*|\1|p' \
        "$src/ring-jetty-adapter/project.clj" | head -1)
    version=$(version "$src/ring-jetty-adapter")
    [ -n "$jetty" ] || fail ring-jetty "no Jetty version in its ring-jetty-adapter/project.clj" || return 1
    log "ring-jetty: Jetty $jetty's jars from Maven Central"
    rm -rf "$dir/lib.new"
    (cd "$top/bench/peers/jetty12" && ${MVN:-mvn} -B -q dependency:copy-dependencies \
        -Djetty.version="$jetty" -DoutputDirectory="$dir/lib.new") > "$dir/mvn.log" 2>&1 \
        || fail ring-jetty "Jetty $jetty's jars: mvn failed, see $dir/mvn.log" || return 1
    rm -rf "$dir/lib" && mv "$dir/lib.new" "$dir/lib"
    # the source directories its run puts on the class path
    printf '%s\n' ring-jetty-adapter ring-jakarta-servlet ring-core ring-core-protocols \
        ring-websocket-protocols | sed "s|.*|$src/&/src|" > "$dir/source-path"
    rm -f "$dir/failed"
    echo "ring-jetty-adapter $version from $from, Jetty $jetty (Maven Central)" > "$dir/built"
    log "$(cat "$dir/built")"
}

nginx_version() {
    sed -n 's/^#define NGINX_VERSION *"\(.*\)"/\1/p' "$nginx_src/src/core/nginx.h"
}

# in_peers_src PEER: PEERS_SRC/PEER, or PEERS_SRC/PEER.tar.gz (.tgz, .zip)
in_peers_src() {
    local f
    for f in "$PEERS_SRC/$1" "$PEERS_SRC/$1.tar.gz" "$PEERS_SRC/$1.tgz" "$PEERS_SRC/$1.zip"; do
        [ -e "$f" ] && { echo "$f"; return; }
    done
    echo "$PEERS_SRC/$1"
}

# Without a source given, the pinned revisions' archives on GitHub.
if [ -n "${PEERS_SRC:-}" ]; then
    : "${NGINX_CLOJURE_SRC:=$(in_peers_src nginx-clojure)}"
    : "${HTTP_KIT_SRC:=$(in_peers_src http-kit)}"
    : "${ENSO_SRC:=$(in_peers_src enso)}"
    : "${RING_SRC:=$(in_peers_src ring)}"
fi
: "${NGINX_CLOJURE_SRC:=https://codeload.github.com/nginx-clojure/nginx-clojure/tar.gz/${NGINX_CLOJURE_REV:-$NGINX_CLOJURE_PIN}}"
: "${HTTP_KIT_SRC:=https://codeload.github.com/http-kit/http-kit/tar.gz/${HTTP_KIT_REV:-$HTTP_KIT_PIN}}"
: "${ENSO_SRC:=https://codeload.github.com/mpenet/enso/tar.gz/${ENSO_REV:-$ENSO_PIN}}"
: "${RING_SRC:=https://codeload.github.com/ring-clojure/ring/tar.gz/${RING_REV:-$RING_PIN}}"

peers=("$@")
[ ${#peers[@]} -gt 0 ] || peers=(nginx-clojure http-kit enso ring-jetty)
status=0
for peer in "${peers[@]}"; do
    case $peer in
        nginx-clojure) build_nginx_clojure || status=1 ;;
        http-kit) build_http_kit || status=1 ;;
        enso) build_enso || status=1 ;;
        ring-jetty) build_ring_jetty || status=1 ;;
        *) log "unknown peer $peer (nginx-clojure, http-kit, enso, ring-jetty)"; status=2 ;;
    esac
done
exit $status
