#!/usr/bin/env bash
# Builds the artifacts a project compiles and tests against, in build/api:
#   nginx-jvm-api-VERSION{.jar,-sources.jar,-javadoc.jar,.pom}
#     the documented API: the classes runtime/api/classes.txt names (and
#     their nested classes), taken from build/nginx-jvm.jar, and the
#     nginx.jvm.* Clojure namespaces; nothing internal
#   nginx-jvm-test-VERSION{.jar,-sources.jar,-javadoc.jar,.pom}
#     the test fixtures (runtime/testing: clojure.test's with-server, the
#     JUnit 5 extension NginxJvmExtension), built by Maven
# VERSION is runtime/pom.xml's.  MVN_REPO: Maven's local repository for the
# JUnit API the extension compiles against (default Maven's own).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
out=$build/api
java_home=${JAVA_HOME:-/usr/lib/jvm/default-java}
jar=$java_home/bin/jar
version=$(sed -n 's|^  <version>\(.*\)</version>|\1|p' "$top/runtime/pom.xml" | head -1)
[ -n "$version" ] || { echo "build-api: no <version> in runtime/pom.xml" >&2; exit 1; }
[ -f "$build/nginx-jvm.jar" ] || { echo "build-api: build/nginx-jvm.jar is missing: make jar" >&2; exit 1; }
# the commit's time, so that two builds of one commit give the same jars
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$top" log -1 --format=%ct 2>/dev/null || date +%s)}
date=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/all" "$tmp/classes" "$tmp/sources" "$tmp/javadoc" "$out"
rm -f "$out"/nginx-jvm-api-* "$out"/nginx-jvm-test-*

classes=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$top/runtime/api/classes.txt")
(cd "$tmp/all" && "$jar" xf "$build/nginx-jvm.jar")
mkdir -p "$tmp/classes/nginx/jvm" "$tmp/sources/nginx/jvm"
for c in $classes; do
    [ -f "$tmp/all/nginx/jvm/$c.class" ] \
        || { echo "build-api: runtime/api/classes.txt names $c, which nginx-jvm.jar lacks" >&2; exit 1; }
    cp "$tmp/all/nginx/jvm/$c.class" "$tmp/all/nginx/jvm/$c"\$*.class "$tmp/classes/nginx/jvm/" 2>/dev/null \
        || cp "$tmp/all/nginx/jvm/$c.class" "$tmp/classes/nginx/jvm/"
    cp "$top/runtime/src/main/java/nginx/jvm/$c.java" "$tmp/sources/nginx/jvm/"
done
# the Clojure namespaces, as source (they compile when loaded)
(cd "$top/runtime/src/main/resources" && find nginx -name '*.clj' -print0 \
    | xargs -0 -I{} cp --parents {} "$tmp/classes/")
(cd "$top/runtime/src/main/resources" && find nginx -name '*.clj' -print0 \
    | xargs -0 -I{} cp --parents {} "$tmp/sources/")

pom=$out/nginx-jvm-api-$version.pom
sed "s|@VERSION@|$version|" "$top/runtime/api/pom.xml" > "$pom"
for d in classes sources; do
    mkdir -p "$tmp/$d/META-INF/maven/org.nginx-jvm/nginx-jvm-api"
    cp "$pom" "$tmp/$d/META-INF/maven/org.nginx-jvm/nginx-jvm-api/pom.xml"
    printf 'groupId=org.nginx-jvm\nartifactId=nginx-jvm-api\nversion=%s\n' "$version" \
        > "$tmp/$d/META-INF/maven/org.nginx-jvm/nginx-jvm-api/pom.properties"
done
printf 'Implementation-Title: nginx-jvm API\nImplementation-Version: %s\n' "$version" > "$tmp/manifest"

# the javadoc of the package's public classes (package-private ones are
# not documented; the sources beside them resolve the links)
cp_doc=$(find "$build/lib" "$build/test-lib" "$build/redis-lib" "$build/otel-lib" -name '*.jar' 2>/dev/null | paste -sd:)
"$java_home/bin/javadoc" -quiet -Xdoclint:none -notimestamp -d "$tmp/javadoc" \
    -sourcepath "$top/runtime/src/main/java" -classpath "$cp_doc" \
    -doctitle "nginx-jvm $version API" -windowtitle "nginx-jvm $version API" \
    nginx.jvm > "$tmp/javadoc.log" 2>&1 \
    || { cat "$tmp/javadoc.log" >&2; exit 1; }

"$jar" --create --date="$date" --file "$out/nginx-jvm-api-$version.jar" \
    --manifest "$tmp/manifest" -C "$tmp/classes" .
"$jar" --create --date="$date" --file "$out/nginx-jvm-api-$version-sources.jar" \
    --no-manifest -C "$tmp/sources" .
"$jar" --create --date="$date" --file "$out/nginx-jvm-api-$version-javadoc.jar" \
    --no-manifest -C "$tmp/javadoc" .

# the fixtures: Maven compiles the extension against junit-jupiter-api
testing=$top/runtime/testing
mvn_args=(-B -q -f "$testing/pom.xml" -Drevision="$version")
[ -z "${MVN_REPO:-}" ] || mvn_args+=(-Dmaven.repo.local="$MVN_REPO")
mvn "${mvn_args[@]}" package -Dproject.build.outputTimestamp="$date"
sed "s|\${revision}|$version|" "$testing/pom.xml" > "$out/nginx-jvm-test-$version.pom"
cp "$testing/target/nginx-jvm-test-$version.jar" "$out/"
mkdir -p "$tmp/tsources" "$tmp/tjavadoc"
cp -r "$testing/src/main/java/." "$testing/src/main/resources/." "$tmp/tsources/"
"$jar" --create --date="$date" --file "$out/nginx-jvm-test-$version-sources.jar" \
    --no-manifest -C "$tmp/tsources" .
mvn "${mvn_args[@]}" dependency:build-classpath -Dmdep.outputFile="$tmp/junit.cp"
junit=$(cat "$tmp/junit.cp")
"$java_home/bin/javadoc" -quiet -Xdoclint:none -notimestamp -d "$tmp/tjavadoc" \
    -sourcepath "$testing/src/main/java" -classpath "$junit" \
    -doctitle "nginx-jvm $version test fixtures" nginx.jvm.testing > "$tmp/javadoc.log" 2>&1 \
    || { cat "$tmp/javadoc.log" >&2; exit 1; }
"$jar" --create --date="$date" --file "$out/nginx-jvm-test-$version-javadoc.jar" \
    --no-manifest -C "$tmp/tjavadoc" .
ls "$out"
