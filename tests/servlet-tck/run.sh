#!/bin/sh
# The Jakarta Servlet TCK against nginx-jvm: `make test-servlet-tck
# TCK_DIR=DIR [TCK_TESTS=Classes] [TCK_WORKERS=N]` runs this (README.md
# beside it).  DIR is the TCK's tck/ directory, built outside this tree.
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/servlet-tck
TCK_DIR=${TCK_DIR:-}
TCK_TESTS=${TCK_TESTS:-}
TCK_WORKERS=${TCK_WORKERS:-1}
TCK_FORKS=${TCK_FORKS:-2}
VERSION=6.1.2
OUT=$ROOT/build/servlet-tck

if [ -z "$TCK_DIR" ]; then
    cat <<EOF
test-servlet-tck: no TCK_DIR, nothing run.  The Jakarta Servlet TCK is not
on Maven Central; build it from its source, outside this tree (about a
minute), then give its tck/ directory:

  git clone https://github.com/jakartaee/servlet.git /tmp/servlet-tck
  cd /tmp/servlet-tck && git checkout $VERSION-RELEASE-tck && cd tck
  # arquillian-bom 1.10.2.Final's arquillian-junit-core is not served by
  # Maven Central: take 1.10.0.Final
  sed -i 's|<version>1.10.2.Final</version>|<version>1.10.0.Final</version>|' pom.xml
  mvn package -DskipTests -pl tck-util,tck-runtime -am
  cd - && make test-servlet-tck TCK_DIR=/tmp/servlet-tck/tck [TCK_TESTS=ServletRequestTests,...]
EOF
    exit 0
fi

JAR=$TCK_DIR/tck-runtime/target/servlet-tck-runtime-$VERSION.jar
UTIL=$TCK_DIR/tck-util/target/servlet-tck-util-$VERSION.jar
for f in "$JAR" "$UTIL"; do
    [ -f "$f" ] || { echo "test-servlet-tck: no $f (make test-servlet-tck without TCK_DIR says how to build it)" >&2; exit 2; }
done

# the TCK's jars into the local Maven repository, for surefire's
# dependenciesToScan (its parent pom first)
cd "$TCK_DIR"
mvn -B -q install:install-file -Dfile=pom.xml -DpomFile=pom.xml -Dpackaging=pom
mvn -B -q install:install-file -Dfile="$UTIL" -DpomFile=tck-util/pom.xml
mvn -B -q install:install-file -Dfile="$JAR" -DpomFile=tck-runtime/pom.xml

rm -rf "$OUT" && mkdir -p "$OUT"
set -- mvn -B test -Dtck.launcher="$ROOT/bin/nginx-jvm" -Dtck.workers="$TCK_WORKERS" -Dtck.forks="$TCK_FORKS" \
    -Dtck.reports="$OUT/surefire-reports" -Dtck.logs="$OUT/logs"
[ -z "$TCK_TESTS" ] || set -- "$@" -Dtest="$TCK_TESTS"
echo "test-servlet-tck: $* (output in $OUT/mvn.log)"
cd "$HERE"
status=0
"$@" >"$OUT/mvn.log" 2>&1 || status=$?
python3 "$HERE/summary.py" "$OUT/surefire-reports" \
    "make test-servlet-tck TCK_DIR=$TCK_DIR${TCK_TESTS:+ TCK_TESTS=$TCK_TESTS} TCK_WORKERS=$TCK_WORKERS" \
    >"$OUT/summary.txt"
sed -n 1,3p "$OUT/summary.txt"
echo "test-servlet-tck: $OUT/summary.txt"
# failing TCK tests are the result, not an error; a run that could not
# complete (compilation, Maven) is
exit $status
