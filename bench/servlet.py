#!/usr/bin/env python3
"""make bench-servlet: a servlet web application (examples/servlet-war)
side by side in one run (issue 47, item 10):

  nginx-jvm   bin/nginx-jvm run --war, 2 workers (Tomcat 11 beneath nginx)
  direct      the same WAR on the same Tomcat's own HTTP connector
              (nginx.jvm.servlet.tomcat.Standalone)
  proxy       nginx (2 workers) proxy_pass to that Tomcat: the usual
              setup today

For each URL (the servlet hello, the JSP page) and each server, rounds
interleaved: wrk's closed-loop rate (-t1 -c16), the servers' CPU time per
request over that run (all their processes: /proc/PID/stat), and with oha
(scripts/install-deps.sh bench) the p99 latency at a fixed rate every
server sustains (-q, --latency-correction). Medians of the rounds, with
the range. Quote the ratios and CPU per request: the machine is shared.

Then the same for a Spring Boot application (examples/servlet-boot, the
jar unmodified): nginx-jvm `--jar`, 2 workers; direct, `java -jar
app.jar --server.port=N` (Boot's own Tomcat); proxy, nginx in front of
that. Its pages: /hello (a @RestController's string) and / (a Thymeleaf
page). And the cost of starting it: the wall time from the command to the
first 200 of every worker (nginx-jvm: with its class cache, AppCDS, and
with `--cache off`) against `java -jar` (and Boot's own CDS: the jar
extracted, a training run with -XX:ArchiveClassesAtExit and
-Dspring.context.exit=onRefresh), and the PSS of each process once it
has served (/proc/PID/smaps_rollup); `java -jar` also with the collector
and heap options nginx-jvm gives its workers (-XX:+UseSerialGC -Xms16m
...), for memory like for like.

  bench/servlet.py [--rounds 3] [--seconds 10] [--rate 2000]
                   [--spring-rate 1000] [--starts 2] [--warmup 20]
                   [--only war|spring]
                   [--out FILE]
"""

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from benchsuite import load  # noqa: E402
BUILD = ROOT / "build"
SERVLET = BUILD / "servlet"
WAR_DIR = BUILD / "servlet-war-bench"
URLS = {"hello": "/app/hello?name=bench", "jsp": "/app/?name=bench"}
BOOT_DIR = BUILD / "servlet-boot-bench"
BOOT_URLS = {"spring-hello": "/hello?name=bench", "spring-page": "/?name=bench"}
JAVA = os.environ.get("JAVA", "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java")
HZ = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=120):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("nothing listens on %d" % port)


def tree(pid):
    """pid and all its descendants."""
    out, i = [pid], 0
    while i < len(out):
        try:
            kids = Path("/proc/%d/task/%d/children" % (out[i], out[i])).read_text()
        except OSError:
            kids = ""
        out += [int(k) for k in kids.split()]
        i += 1
    return out


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            f = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(f[11]) + int(f[12])
    return total / HZ


def build_war():
    war = WAR_DIR / "target" / "servlet-war.war"
    shutil.rmtree(WAR_DIR, ignore_errors=True)
    shutil.copytree(ROOT / "examples" / "servlet-war", WAR_DIR,
                    ignore=shutil.ignore_patterns("target"))
    subprocess.run(["mvn", "-B", "-q", "package"], cwd=WAR_DIR, check=True)
    return war


def build_boot():
    """examples/servlet-boot's executable jar, as its users build it."""
    jar = BOOT_DIR / "target" / "servlet-boot.jar"
    shutil.rmtree(BOOT_DIR, ignore_errors=True)
    shutil.copytree(ROOT / "examples" / "servlet-boot", BOOT_DIR,
                    ignore=shutil.ignore_patterns("target"))
    subprocess.run(["mvn", "-B", "-q", "-Dmaven.repo.local=%s" % (BUILD / "projects" / "m2"),
                    "package"], cwd=BOOT_DIR, check=True)
    return jar


def pss_kb(pid):
    """The process's proportional set size (shared pages divided among
    the processes that map them), kB."""
    for line in Path("/proc/%d/smaps_rollup" % pid).read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    raise RuntimeError("no Pss for %d" % pid)


def nginx_workers(pids):
    return [p for p in pids
            if Path("/proc/%d/cmdline" % p).read_bytes().startswith(b"nginx: worker")]


class Server:
    def __init__(self, name, port, proc, pids):
        self.name, self.port, self.proc, self._pids = name, port, proc, pids

    def pids(self):
        return self._pids()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_direct(war, work):
    port = free_port()
    cp = ":".join([str(SERVLET / "nginx-jvm-servlet.jar"),
                   str(BUILD / "nginx-jvm.jar"), str(SERVLET / "tomcat-lib" / "*")])
    p = subprocess.Popen([JAVA, "-cp", cp, "nginx.jvm.servlet.tomcat.Standalone",
                          str(war), str(port), "/app"],
                         stdout=subprocess.PIPE,
                         stderr=open(work / "direct.log", "wb"))
    server = Server("direct", port, p, lambda: [p.pid])
    if p.stdout.readline().strip() != b"ready":
        server.stop()
        raise RuntimeError("the direct Tomcat did not start: %s" % (work / "direct.log"))
    return server


def start_proxy(direct, work):
    port = free_port()
    d = work / "proxy"
    (d / "logs").mkdir(parents=True)
    (d / "nginx.conf").write_text("""
worker_processes 2;
error_log %(d)s/logs/error.log warn;
pid %(d)s/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    upstream tomcat { server 127.0.0.1:%(up)d; keepalive 64; }
    server {
        listen 127.0.0.1:%(port)d;
        location / {
            proxy_pass http://tomcat;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
        }
    }
}
""" % {"d": d, "up": direct.port, "port": port})
    p = subprocess.Popen(["nginx", "-p", str(d), "-c", str(d / "nginx.conf"),
                          "-g", "daemon off;"])
    server = Server("proxy", port, p, lambda: tree(p.pid) + direct.pids())
    try:
        wait_port(port)
    except RuntimeError:
        server.stop()
        raise
    return server


def start_nginx_jvm(war, work):
    port = free_port()
    p = subprocess.Popen([str(ROOT / "bin" / "nginx-jvm"), "run", "--war", str(war),
                          "--context-path", "/app", "--workers", "2",
                          "--port", str(port), "--error-level", "notice",
                          "--cache", str(work / "cache")],
                         stdout=subprocess.DEVNULL,
                         stderr=open(work / "nginx-jvm.log", "wb"))
    server = Server("nginx-jvm", port, p, lambda: tree(p.pid))
    try:
        wait_port(port)
        # both workers' Tomcat up: each says "worker N ready" in the error log
        end = time.monotonic() + 300
        while len(re.findall(r": jvm: worker \d+ ready",
                             (work / "nginx-jvm.log").read_text())) < 2:
            if time.monotonic() > end or p.poll() is not None:
                raise RuntimeError((work / "nginx-jvm.log").read_text())
            time.sleep(0.1)
    except RuntimeError:
        server.stop()
        raise
    return server


def start_boot_direct(jar, work, *java_options):
    """`java -jar app.jar` on a port of its own: Boot's own Tomcat."""
    port = free_port()
    t0 = time.monotonic()
    p = subprocess.Popen([JAVA] + list(java_options) + ["-jar", str(jar),
                          "--server.port=%d" % port, "--server.address=127.0.0.1"],
                         stdout=open(work / "boot-direct.log", "ab"),
                         stderr=subprocess.STDOUT)
    server = Server("direct", port, p, lambda: [p.pid])
    try:
        end = time.monotonic() + 300
        while not get_ok(port, "/hello"):
            if time.monotonic() > end or p.poll() is not None:
                raise RuntimeError((work / "boot-direct.log").read_text()[-3000:])
            time.sleep(0.05)
    except RuntimeError:
        server.stop()
        raise
    server.started = time.monotonic() - t0
    return server


def start_boot_nginx_jvm(jar, work, cache):
    """`nginx-jvm run --jar app.jar`, 2 workers; started when both workers
    say they are ready and a page answers."""
    port = free_port()
    log = work / ("boot-nginx-jvm-%d.log" % port)
    t0 = time.monotonic()
    p = subprocess.Popen([str(ROOT / "bin" / "nginx-jvm"), "run", "--jar", str(jar),
                          "--workers", "2", "--port", str(port),
                          "--error-level", "notice", "--cache", str(cache)],
                         stdout=subprocess.DEVNULL, stderr=open(log, "wb"))
    server = Server("nginx-jvm", port, p, lambda: tree(p.pid))
    try:
        end = time.monotonic() + 600
        while len(re.findall(r": jvm: worker \d+ ready", log.read_text())) < 2 \
                or not get_ok(port, "/hello"):
            if time.monotonic() > end or p.poll() is not None:
                raise RuntimeError(log.read_text()[-3000:])
            time.sleep(0.05)
    except RuntimeError:
        server.stop()
        raise
    server.started = time.monotonic() - t0
    # the workers start one after the other (each its turn): each one's own
    server.each = [int(ms) / 1000 for ms in re.findall(
        r"jvm: worker \d+ ready (\d+) ms after its turn", log.read_text())]
    return server


def warm_pss(server, path):
    """PSS (MB) of each worker (nginx-jvm) or of the process (direct),
    and of the whole, after 2 s of requests."""
    wrk(server.port, path, 2)
    pids = server.pids()
    workers = nginx_workers(pids) if server.name == "nginx-jvm" else pids
    each = [pss_kb(p) / 1024 for p in workers]
    return statistics.mean(each), sum(pss_kb(p) for p in pids if Path("/proc/%d" % p).exists()) / 1024


def get_ok(port, path):
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                          "http://127.0.0.1:%d%s" % (port, path)],
                         stdout=subprocess.PIPE, text=True).stdout
    return out == "200"


def wrk(port, path, seconds):
    out = subprocess.run(["wrk", "-t1", "-c16", "-d%ds" % seconds,
                          "http://127.0.0.1:%d%s" % (port, path)],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rate, total, int(bad.group(1)) if bad else 0


def oha(port, path, rate, seconds):
    """p99 (ms) at a fixed rate, open model (benchsuite.load's oha), or
    None without oha; a run with failed requests is an error."""
    exe = load.find_oha()
    if not exe:
        return None
    out, _ = load.oha(exe, "http://127.0.0.1:%d%s" % (port, path), rate, seconds,
                      conns=64)
    if out["errors"] or not set(out["statuses"]) <= {"200"}:
        # said, and no p99 quoted: a loaded machine's timeouts end no run
        print("oha at %d req/s on %s: errors %s, statuses %s"
              % (rate, path, out["errors"], out["statuses"]), flush=True)
        return None
    return out["p99"]


def median_range(xs, fmt):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return "%s (%s-%s)" % (fmt % statistics.median(xs), fmt % min(xs), fmt % max(xs))


def speed(servers, urls, a, rate, res):
    """Rounds interleaved, each URL on each server: wrk's rate, CPU per
    request, oha's p99 at `rate`; into res[(url name, server name)]."""
    for s in servers:
        for u in urls.values():
            assert get_ok(s.port, u), (s.name, u)
            # the JIT's warm-up before any round: Spring's code is large
            # and each worker's JVM compiles its own
            wrk(s.port, u, a.warmup)
    for r in range(a.rounds):
        for uname, u in urls.items():
            for s in servers:
                wrk(s.port, u, 3)                       # warm
                c0 = cpu_seconds(s.pids())
                rate_, total, bad = wrk(s.port, u, a.seconds)
                c1 = cpu_seconds(s.pids())
                assert bad == 0, (s.name, u, bad)
                p99 = oha(s.port, u, rate, a.seconds)
                res.setdefault((uname, s.name), []).append(
                    (rate_, (c1 - c0) / total * 1e6, p99))
                print("round %d %-12s %-9s %8.0f req/s %6.1f us CPU/req p99 %s ms"
                      % (r + 1, uname, s.name, rate_, (c1 - c0) / total * 1e6,
                         "%.2f" % p99 if p99 is not None else "-"), flush=True)


def table(res, urls, rate):
    lines = ["| page | server | rate (req/s) | server CPU per request (µs) "
             "| p99 at %d req/s (ms) |" % rate,
             "|---|---|---|---|---|"]
    for (uname, sname), xs in res.items():
        if uname in urls:
            lines.append("| %s | %s | %s | %s | %s |" % (
                uname, sname, median_range([x[0] for x in xs], "%.0f"),
                median_range([x[1] for x in xs], "%.1f"),
                median_range([x[2] for x in xs], "%.2f")))
    for uname in urls:
        m = {k: statistics.median(x[0] for x in res[(uname, k)])
             for k in ("direct", "proxy", "nginx-jvm")}
        c = {k: statistics.median(x[1] for x in res[(uname, k)])
             for k in ("direct", "proxy", "nginx-jvm")}
        lines.append("")
        lines.append("%s: nginx-jvm's rate is %.2f of the proxy's and %.2f of "
                     "direct Tomcat's; its CPU per request %.2f of the proxy's "
                     "and %.2f of direct's." % (uname, m["nginx-jvm"] / m["proxy"],
                                                m["nginx-jvm"] / m["direct"],
                                                c["nginx-jvm"] / c["proxy"],
                                                c["nginx-jvm"] / c["direct"]))
    return lines


def war_bench(a, work, servers):
    war = build_war()
    # each kept as it starts, so that a failure stops those already up
    direct = start_direct(war, work)
    servers.append(direct)
    servers.insert(0, start_nginx_jvm(war, work))
    servers.append(start_proxy(direct, work))
    res = {}
    speed(servers, URLS, a, a.rate, res)
    for s in list(servers):
        s.stop()
        servers.remove(s)
    return ["## examples/servlet-war", "",
            "nginx-jvm and proxy with 2 nginx workers; "
            "wrk -t1 -c16 -d%ds; oha -q %d -c 64 --latency-correction -z %ds; "
            "%d rounds after %d s of warm-up each, medians (range)."
            % (a.seconds, a.rate, a.seconds, a.rounds, a.warmup), ""] \
        + table(res, URLS, a.rate)


def boot_cds(jar, work):
    """Boot's own CDS, as its documentation gives it: the jar extracted
    (CDS wants jars on a class path, not nested ones), a training run that
    stops once the context is refreshed and writes the archive: the
    extracted jar and its options."""
    d = work / "boot-extracted"
    subprocess.run([JAVA, "-Djarmode=tools", "-jar", str(jar), "extract",
                    "--destination", str(d)], check=True, stdout=subprocess.DEVNULL)
    app = d / jar.name
    jsa = d / "app.jsa"
    subprocess.run([JAVA, "-XX:ArchiveClassesAtExit=%s" % jsa,
                    "-Dspring.context.exit=onRefresh", "-jar", str(app),
                    "--server.port=0", "--server.address=127.0.0.1"],
                   check=True, stdout=open(work / "boot-training.log", "wb"),
                   stderr=subprocess.STDOUT, timeout=600)
    assert jsa.is_file(), (work / "boot-training.log").read_text()[-3000:]
    return app, ["-XX:SharedArchiveFile=%s" % jsa]


def spring_bench(a, work, servers):
    jar = build_boot()
    page = BOOT_URLS["spring-hello"]
    cache = work / "cache"
    out = ["## examples/servlet-boot (Spring Boot, Tomcat starter)", ""]

    # start time and memory: each way started --starts times, one at a time
    starts = {}
    def measure(name, start):
        for i in range(a.starts):
            s = start()
            servers.append(s)
            try:
                each, whole = warm_pss(s, page)
            finally:
                s.stop()
                servers.remove(s)
            own = statistics.mean(getattr(s, "each", None) or [s.started])
            starts.setdefault(name, []).append((s.started, each, whole, own))
            print("start %-44s %5.2f s (a JVM: %5.2f s)  PSS %6.1f MB each, %6.1f MB in all"
                  % (name, s.started, own, each, whole), flush=True)
    first = start_boot_nginx_jvm(jar, work, cache)      # builds the class cache
    first.stop()
    print("start nginx-jvm, first (builds the cache)      %5.2f s" % first.started,
          flush=True)
    measure("nginx-jvm --jar, class cache (AppCDS)",
            lambda: start_boot_nginx_jvm(jar, work, cache))
    measure("nginx-jvm --jar, --cache off",
            lambda: start_boot_nginx_jvm(jar, work, "off"))
    measure("java -jar", lambda: start_boot_direct(jar, work))
    # the options nginx-jvm gives each worker's JVM (ngx_http_jvm_vm_create.c,
    # for 2 workers): the same collector and heap, for memory like for like
    like = ["-XX:+UseSerialGC", "-Xms16m", "-XX:MaxRAMPercentage=12",
            "-XX:TrimNativeHeapInterval=5000"]
    measure("java -jar, the workers' GC and heap options",
            lambda: start_boot_direct(jar, work, *like))
    try:
        app, cds = boot_cds(jar, work)
        measure("java -jar, extracted, Boot's CDS",
                lambda: start_boot_direct(app, work, *cds))
        measure("java -jar, extracted, Boot's CDS, the workers' options",
                lambda: start_boot_direct(app, work, *(cds + like)))
    except (subprocess.SubprocessError, AssertionError) as e:
        print("Boot's CDS: not measured: %s" % e, flush=True)

    out += ["Start: from the command to the first 200 of every worker (nginx-jvm: "
            "both workers' \"ready\", then a page); PSS after 2 s of requests "
            "(/proc/PID/smaps_rollup): per process that serves (an nginx worker "
            "with its JVM; the JVM of `java -jar`), and all the server's "
            "processes (nginx-jvm: the launcher, master and 2 workers). "
            "One JVM's start: nginx-jvm's workers start one after the other, "
            "each when the one before is ready (its log's \"worker N ready M ms "
            "after its turn\"), the mean of the two; for `java -jar` its start. "
            "%d starts each, one at a time; the first nginx-jvm start, which "
            "builds the class cache, took %.1f s." % (a.starts, first.started), "",
            "| server | start (s) | one JVM's start (s) | PSS per serving process (MB) "
            "| PSS in all (MB) |",
            "|---|---|---|---|---|"]
    for name, xs in starts.items():
        out.append("| %s | %s | %s | %s | %s |" % (
            name, median_range([x[0] for x in xs], "%.2f"),
            median_range([x[3] for x in xs], "%.2f"),
            median_range([x[1] for x in xs], "%.0f"),
            median_range([x[2] for x in xs], "%.0f")))
    out.append("")

    # speed: the three servers side by side
    direct = start_boot_direct(jar, work)
    servers.append(direct)
    servers.insert(0, start_boot_nginx_jvm(jar, work, cache))
    servers.append(start_proxy(direct, work))
    res = {}
    speed(servers, BOOT_URLS, a, a.spring_rate, res)
    out += ["Speed: wrk -t1 -c16 -d%ds; oha -q %d -c 64 --latency-correction -z %ds; "
            "%d rounds after %d s of warm-up each, medians (range); direct is Boot's "
            "own Tomcat (`java -jar`, its defaults)."
            % (a.seconds, a.spring_rate, a.seconds, a.rounds, a.warmup), ""]
    out += table(res, BOOT_URLS, a.spring_rate)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--spring-rate", type=int, default=1000)
    ap.add_argument("--starts", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--only", choices=["war", "spring"])
    ap.add_argument("--out", default=str(BUILD / "bench-servlet.md"))
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nginx-jvm-bench-servlet-"))
    work.chmod(0o755)               # the workers (nobody) reach the cache
    servers = []
    lines = ["# make bench-servlet", "",
             "load before: %s" % os.getloadavg().__repr__(), ""]
    try:
        if a.only != "spring":
            lines += war_bench(a, work, servers) + [""]
        if a.only != "war":
            lines += spring_bench(a, work, servers)
        lines += ["", "load after: %s" % os.getloadavg().__repr__()]
        Path(a.out).write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
    finally:
        for s in reversed(servers):
            s.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
