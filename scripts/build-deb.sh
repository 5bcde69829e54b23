#!/usr/bin/env bash
# Builds build/libnginx-mod-http-jvm_VERSION_ARCH.deb from what "make" built,
# in the shape of Debian's own nginx module packages (libnginx-mod-http-*):
# the module in /usr/lib/nginx/modules, its load_module line in
# /usr/share/nginx/modules-available/mod-http-jvm.conf, enabled by a link in
# /etc/nginx/modules-enabled that the maintainer scripts make and remove,
# and a dependency on the nginx ABI the module was compiled for.  Beside
# it: the runtime jar and Clojure in /usr/share/nginx-jvm, the launcher as
# /usr/bin/nginx-jvm, the docs and examples in /usr/share/doc.
# Prints the package's path last.
#
# DIST=trixie (`make deb DIST=trixie`): the Debian 13 package, built in a
# Debian 13 root (scripts/debian-root.sh build: mmdebstrap, made once)
# against its nginx-dev (1.26.3) with its OpenJDK 21's headers, into
# build/trixie/.  The jars are this machine's (Java 17 bytecode, which
# Java 21 runs); the module and the package's Depends are the root's.
# ARCH=arm64 as well: in the arm64 root (its compiler run by qemu-user,
# scripts/qemu-binfmt.sh), into build/trixie-arm64/; the package's tree is
# made there as for amd64 and compressed here by this machine's dpkg-deb
# (DEB_PACK=no inside): its xz, emulated, had not finished the 100 MB of
# jars after 6 minutes.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
package=libnginx-mod-http-jvm

# the Debian this runs on (the root's, inside it)
here=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [ -n "${DIST:-}" ] && [ "$DIST" != "$here" ]; then
    case $DIST in
        trixie) ;;
        *) echo "build-deb: DIST is trixie (or this machine's, $here)" >&2; exit 2 ;;
    esac
    for f in "$build/nginx-jvm.jar" "$build/lib/.done" "$build/api/.done"; do
        [ -f "$f" ] || { echo "build-deb: $f is missing: run \"make\" first" >&2; exit 1; }
    done
    root=$("$top/scripts/debian-root.sh" build)
    arch=${ARCH:-$(dpkg --print-architecture)}
    outdir=$DIST
    [ "$arch" = "$(dpkg --print-architecture)" ] || outdir=$DIST-$arch
    mkdir -p "$root/src" "$build/$outdir"
    # one build at a time into build/DIST[-ARCH] (two would share its deb/:
    # one's rm -rf under the other's dpkg-deb); a second waits here
    exec 8>"$build/$outdir/.lock"
    flock 8
    epoch=${SOURCE_DATE_EPOCH:-$(git -C "$top" log -1 --format=%ct 2>/dev/null || date +%s)}
    commit=${DEB_COMMIT:-$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)}
    pack=yes
    [ "$arch" = "$(dpkg --print-architecture)" ] || pack=no
    # the checkout at /src, /proc and /dev bound, in a mount namespace of
    # its own: the mounts go when the build ends, however it ends
    deb=$(unshare --mount --propagation private -- /bin/sh -ec '
        root=$1; top=$2; shift 2
        mount --bind "$top" "$root/src"
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
            HOME=/root LC_ALL=C.UTF-8 "$@"' sh "$root" "$top" /bin/sh -ec '
        NGX_JVM_JAVA_HOME=/usr/lib/jvm/java-21-openjdk-'"$arch"' \
            NGX_JVM_OUT=/src/build/'"$outdir"' /src/scripts/build-module.sh >&2
        DEB_OUT=/src/build/'"$outdir"' DEB_COMMIT='"$commit"' DEB_PACK='"$pack"' \
            SOURCE_DATE_EPOCH='"$epoch"' /src/scripts/build-deb.sh' | tail -1)
    # its path here
    deb=$top${deb#/src}
    if [ "$pack" = no ]; then
        dpkg-deb --root-owner-group -Zxz --build "$build/$outdir/deb/root" "$deb" >/dev/null
    fi
    echo "$deb"
    exit
fi

# DEB_OUT: where the package goes (build/, or build/DIST in a root)
out=${DEB_OUT:-$build}
module=$out/ngx_http_jvm_module.so

for f in "$module" "$build/nginx-jvm.jar" "$build/lib/.done" "$build/api/.done"; do
    [ -f "$f" ] || { echo "build-deb: $f is missing: run \"make\" first" >&2; exit 1; }
done

# The module works only in the nginx it was compiled against: Debian's
# nginx provides a virtual package that names its module ABI.
abi=$(dpkg-query -W -f='${Provides}\n' nginx 2>/dev/null \
      | tr ',' '\n' | sed -n 's/^ *\(nginx-abi-[^ ]*\).*/\1/p' | head -1)
[ -n "$abi" ] || { echo "build-deb: the installed nginx provides no nginx-abi-*" >&2; exit 1; }

# the JRE: the Debian's own OpenJDK (Debian 12's 17, Debian 13's 21)
case $here in
    bookworm) jre=17 ;;
    trixie)   jre=21 ;;
    *) echo "build-deb: Debian 12 (bookworm) or 13 (trixie), not \"$here\"" >&2; exit 1 ;;
esac

upstream=$(sed -n 's|^  <version>\(.*\)</version>|\1|p' "$top/runtime/pom.xml" | head -1)
[ -n "$upstream" ] || { echo "build-deb: no <version> in runtime/pom.xml" >&2; exit 1; }
# the project's version, and the package's revision of it
version=$upstream-${DEB_REVISION:-1}
arch=$(dpkg --print-architecture)
# the commit's time, so that two builds of one commit give the same files
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$top" log -1 --format=%ct 2>/dev/null || date +%s)}
maintainer="${DEBFULLNAME:-nginx-jvm} <${DEBEMAIL:-nginx-jvm@localhost}>"

root=$out/deb/root
# one package in build/, for "apt-get install ./build/libnginx-mod-http-jvm_*.deb"
rm -rf "$out/deb" "$out/${package}"_*.deb
mkdir -p "$root/DEBIAN"

# -- files --
doc=$root/usr/share/doc/$package
install -d "$root/usr/lib/nginx/modules" "$root/usr/share/nginx/modules-available" \
    "$root/usr/share/nginx-jvm/lib" "$root/usr/bin" "$doc/examples"
install -m 644 "$module" "$root/usr/lib/nginx/modules/"
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
    "$root/usr/lib/nginx/modules/ngx_http_jvm_module.so"
# relative to nginx's prefix, /usr/share/nginx, whose modules/ is a link
# to /usr/lib/nginx/modules: Debian's module packages write it so
echo "load_module modules/ngx_http_jvm_module.so;" \
    > "$root/usr/share/nginx/modules-available/mod-http-jvm.conf"
install -m 644 "$build/nginx-jvm.jar" "$root/usr/share/nginx-jvm/"
install -m 644 "$build"/lib/*.jar "$root/usr/share/nginx-jvm/lib/"
# the servlet engine, for nginx-jvm run --war, and the seam of a Spring
# Boot jar's own engine, for --jar (docs/servlet.md): each seam jar is
# looked for beside nginx-jvm-servlet-boot.jar
install -d "$root/usr/share/nginx-jvm/servlet/tomcat-lib"
install -m 644 "$build/servlet/nginx-jvm-servlet.jar" "$build"/servlet/nginx-jvm-servlet-boot*.jar \
    "$root/usr/share/nginx-jvm/servlet/"
install -m 644 "$build"/servlet/tomcat-lib/*.jar "$root/usr/share/nginx-jvm/servlet/tomcat-lib/"
# the OpenTelemetry SDK, for tracing (docs/operations.md): on a server's
# class path only when it traces
install -d "$root/usr/share/nginx-jvm/otel-lib"
install -m 644 "$build"/otel-lib/*.jar "$root/usr/share/nginx-jvm/otel-lib/"
install -m 755 "$top/bin/nginx-jvm" "$root/usr/bin/"
# man nginx-jvm: its --help, as a manual page
install -d "$root/usr/share/man/man1"
{
    echo ".TH NGINX-JVM 1 \"\" \"nginx-jvm $upstream\" \"User Commands\""
    echo ".SH NAME"
    echo "nginx-jvm \\- serve a Ring or Java handler from nginx workers"
    echo ".SH DESCRIPTION"
    echo ".nf"
    "$top/bin/nginx-jvm" --help | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
    echo ".fi"
    echo ".SH SEE ALSO"
    echo "/usr/share/doc/$package/README.md"
} | gzip -9n > "$root/usr/share/man/man1/nginx-jvm.1.gz"
# The artifacts projects build against (docs/projects.md), as Debian's Java
# libraries are installed (maven-repo-helper's layout): the jar in
# /usr/share/java with an unversioned link, and in /usr/share/maven-repo
# under its version and under "debian", links to it beside a pom each;
# the sources and javadoc jars beside the versioned pom.
for a in nginx-jvm-api nginx-jvm-test; do
    repo=usr/share/maven-repo/org/nginx-jvm/$a
    install -d "$root/usr/share/java" "$root/$repo/$upstream" "$root/$repo/debian"
    install -m 644 "$build/api/$a-$upstream.jar" "$root/usr/share/java/"
    ln -s "$a-$upstream.jar" "$root/usr/share/java/$a.jar"
    install -m 644 "$build/api/$a-$upstream.pom" "$root/$repo/$upstream/"
    install -m 644 "$build/api/$a-$upstream-sources.jar" "$build/api/$a-$upstream-javadoc.jar" \
        "$root/$repo/$upstream/"
    ln -s "../../../../../java/$a-$upstream.jar" "$root/$repo/$upstream/$a-$upstream.jar"
    ln -s "../../../../../java/$a-$upstream.jar" "$root/$repo/debian/$a-debian.jar"
    sed "0,/<version>$upstream<\/version>/s//<version>debian<\/version>/" \
        "$build/api/$a-$upstream.pom" > "$root/$repo/debian/$a-debian.pom"
done
install -m 644 "$top/README.md" "$doc/"
cp -r "$top/docs" "$doc/docs"
for e in "$top"/examples/*/; do
    cp -r "$e" "$doc/examples/"
done
cat > "$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: nginx-jvm

Files: *
Copyright: the nginx-jvm authors
License: unpublished
 nginx-jvm has not published a license yet.

Files: usr/share/nginx-jvm/lib/*
Copyright: Rich Hickey and contributors
License: EPL-1.0
 Clojure, clojure.spec.alpha and clojure.core.specs.alpha, from Maven
 Central, under the Eclipse Public License 1.0:
 https://www.eclipse.org/legal/epl-v10.html

Files: usr/share/nginx-jvm/servlet/tomcat-lib/tomcat-*
Copyright: The Apache Software Foundation
License: Apache-2.0
 Apache Tomcat's embedded jars, from Maven Central, under the Apache
 License 2.0: https://www.apache.org/licenses/LICENSE-2.0

Files: usr/share/nginx-jvm/otel-lib/*
Copyright: The OpenTelemetry Authors
License: Apache-2.0
 The OpenTelemetry Java API, SDK, autoconfiguration and OTLP exporter,
 from Maven Central, under the Apache License 2.0:
 https://www.apache.org/licenses/LICENSE-2.0

Files: usr/share/nginx-jvm/servlet/tomcat-lib/ecj-*
Copyright: Eclipse contributors
License: EPL-2.0
 The Eclipse Compiler for Java, which Jasper compiles JSPs with, from
 Maven Central: https://www.eclipse.org/legal/epl-2.0/
EOF
commit=${DEB_COMMIT:-$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)}
{
    echo "$package ($version) unstable; urgency=medium"
    echo
    echo "  * Built from commit $commit for $abi."
    echo
    echo " -- $maintainer  $(date -R -u -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n > "$doc/changelog.Debian.gz"
find "$root" -type d -exec chmod 755 {} +
find "$root/usr/share" -type f -exec chmod 644 {} +
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

# -- control --
# libc6 and the other shared libraries the module links against
mkdir -p "$out/deb/shlibs/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$package" "$package" \
    > "$out/deb/shlibs/debian/control"
shlibs=$(cd "$out/deb/shlibs" && dpkg-shlibdeps -O \
         "$root/usr/lib/nginx/modules/ngx_http_jvm_module.so" 2>/dev/null \
         | sed -n 's/^shlibs:Depends=//p')
cat > "$root/DEBIAN/control" <<EOF
Package: $package
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $abi, ${shlibs:+$shlibs, }unzip, openjdk-$jre-jre-headless | java$jre-runtime-headless
Recommends: nginx
Suggests: libring-core-clojure, libcompojure-clojure, libdata-json-clojure
Section: httpd
Priority: optional
Description: JVM module for Nginx: Clojure Ring and Java handlers
 Runs Clojure Ring handlers and plain Java handlers inside nginx: each
 worker process starts its own JVM and calls the handler of a location
 (jvm_content) with no proxy hop. Includes the nginx-jvm launcher, which
 serves a handler with this nginx without writing an nginx.conf, the Java
 runtime and Clojure 1.12.
EOF

# -- maintainer scripts: the modules-enabled link, as Debian's module
# packages keep it.  A removed package leaves its link renamed to
# ".removed", so that a reinstall puts back only a link the admin had not
# deleted; purge removes both.
link=/etc/nginx/modules-enabled/50-mod-http-jvm.conf
cat > "$root/DEBIAN/postinst" <<EOF
#!/bin/sh
set -e
if [ "\$1" = configure ]; then
    readded=false
    if [ -L $link.removed ]; then
        rm -f $link.removed
        readded=true
    fi
    # a first install, or a reinstall after a remove: enable the module
    if [ -z "\$2" ] || [ \$readded = true ]; then
        mkdir -p /etc/nginx/modules-enabled
        ln -sf /usr/share/nginx/modules-available/mod-http-jvm.conf $link
    fi
    # a running nginx reloads (nginx's own trigger)
    if command -v dpkg-trigger >/dev/null 2>&1; then
        dpkg-trigger --no-await nginx-reload
    fi
fi
EOF
cat > "$root/DEBIAN/prerm" <<EOF
#!/bin/sh
set -e
if [ "\$1" = remove ] || [ "\$1" = deconfigure ]; then
    if [ -L $link ]; then
        mv -f $link $link.removed
    fi
fi
EOF
cat > "$root/DEBIAN/postrm" <<EOF
#!/bin/sh
set -e
case "\$1" in
    remove)
        if command -v dpkg-trigger >/dev/null 2>&1; then
            dpkg-trigger --no-await nginx-reload
        fi
        ;;
    purge)
        rm -f $link $link.removed
        # the launcher's class cache when run as root
        rm -rf /var/cache/nginx-jvm
        ;;
esac
EOF
chmod 755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' \
    | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

deb=$out/${package}_${version}_$arch.deb
# DEB_PACK=no: the tree only, $out/deb/root, its package made by the caller
[ "${DEB_PACK:-yes}" = no ] || dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
