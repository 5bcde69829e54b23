"""The development loop (issue 36): `nginx-jvm run` fails fast when the
handler cannot load, `nginx -t` refuses it when the class cache's build
finds it, `nginx-jvm dev` reloads a saved namespace in every worker before
its next request and answers a handler's exception with its stack trace,
jvm_options' %w gives each worker its own file or port, and jdb stops a
worker at a breakpoint through `--debug`."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from harness import (JAVA_HOME, LAUNCHER, Launcher, Nginx, free_port,
                     free_port_range, java_classes, request, ring_classpath,
                     wait_for)

UTIL = """(ns devtest.util)
(defn version [] "%s")
"""

APP = """(ns devtest.app
  (:require [devtest.util :as u]))
(defn handler [req]
  {:status 200 :headers {"content-type" "text/plain"}
   :body (str (u/version) " " (.pid (java.lang.ProcessHandle/current)))})
(defn boom [req]
  (throw (ex-info "dev-boom-marker <b>" {})))
"""


@pytest.fixture
def project():
    """A project's source directory, readable by the workers' user
    (nobody when the tests run as root), with devtest.app and
    devtest.util; removed afterwards."""
    top = Path(tempfile.mkdtemp(prefix="nginx-jvm-dev-"))
    os.chmod(top, 0o755)
    src = top / "src"
    (src / "devtest").mkdir(parents=True)
    for d in (src, src / "devtest"):
        os.chmod(d, 0o755)
    write(src / "devtest" / "util.clj", UTIL % "v1")
    write(src / "devtest" / "app.clj", APP)
    yield src
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture
def cache(monkeypatch):
    """The launcher's class cache in a directory of the test's own."""
    top = tempfile.mkdtemp(prefix="nginx-jvm-dev-cache-")
    os.chmod(top, 0o755)
    monkeypatch.setenv("NGINX_JVM_CACHE", os.path.join(top, "cache"))
    yield
    shutil.rmtree(top, ignore_errors=True)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)


# --- fail fast ----------------------------------------------------------------

def launch_broken(args, timeout=240):
    """`nginx-jvm run ARGS`: (its exit status, stderr, seconds taken). A
    launcher still running after timeout is a failure (killed)."""
    started = time.monotonic()
    proc = subprocess.Popen([LAUNCHER, "run", "--port", str(free_port()),
                             "--workers", "2"] + args,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail("the launcher still runs after %d s" % timeout)
    return proc.returncode, err.decode("utf-8", "replace"), \
        time.monotonic() - started


BROKEN = {
    # name: (handler, source of devtest.app or None, the cause said)
    "missing var": ("devtest.app/nope", None,
                    r"the var devtest.app/nope is not defined"),
    "missing class": ("com.nope.Missing", None,
                      r"ClassNotFoundException: com.nope.Missing"),
    "syntax error": ("devtest.app/handler",
                     "(ns devtest.app)\n(defn handler [req]\n  {:status 200\n",
                     r"EOF while reading"),
    "missing dependency": ("devtest.app/handler",
                           "(ns devtest.app (:require [no.such.lib]))\n"
                           "(defn handler [req] {:status 200})\n",
                           r"Could not locate no/such/lib"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_run_exits_when_the_handler_cannot_load(project, cache, case):
    """The default start (with the class cache): nginx-jvm run exits with
    status 1, the cause on its stderr, nginx gone."""
    handler, source, cause = BROKEN[case]
    if source:
        write(project / "devtest" / "app.clj", source)
    cp = java_classes() if handler.startswith("com.") else str(project)
    status, err, took = launch_broken(["--handler", handler,
                                       "--classpath", cp])
    assert status == 1, err
    assert re.search(cause, err), err
    # either the master's cache build refused the configuration, or a
    # worker could not load it and the launcher stopped nginx
    assert re.search(r'nginx-jvm: stopped: jvm: cannot load handler "%s"'
                     % re.escape(handler), err) \
        or re.search(r"\[emerg\] .*jvm: a handler cannot be loaded", err), err
    print("%s: exit %d after %.1f s" % (case, status, took))


def test_run_exits_without_a_cache_too(project):
    """--cache off: no master's JVM loads the handler; a worker's failure
    stops it."""
    status, err, _ = launch_broken(["--handler", "devtest.app/nope",
                                    "--classpath", str(project),
                                    "--cache", "off"])
    assert status == 1, err
    assert "the var devtest.app/nope is not defined" in err, err
    assert "nginx-jvm: stopped:" in err


def test_nginx_t_refuses_a_handler_the_cache_build_cannot_load(project):
    """With jvm_cache, the master's JVM loads the handlers as a worker
    would: `nginx -t` fails with an [emerg], for plain nginx users too."""
    top = tempfile.mkdtemp(prefix="nginx-jvm-dev-cache-")
    os.chmod(top, 0o755)
    n = Nginx("        location / { jvm_content devtest.app/nope; }\n",
              http="    jvm_cache %s;" % os.path.join(top, "c"),
              classpath=ring_classpath() + [str(project)])
    try:
        t = n.test_config()
    finally:
        n.cleanup()
        shutil.rmtree(top, ignore_errors=True)
    assert t.returncode != 0, t.stderr
    assert "the var devtest.app/nope is not defined" in t.stderr, t.stderr
    assert re.search(r"\[emerg\] .*jvm: a handler cannot be loaded", t.stderr)


# --- dev ----------------------------------------------------------------------

def dev(project, *args, workers=2, mode="loop"):
    """`nginx-jvm dev` on the project (its workers ready once entered)."""
    n = Launcher(["--handler", "devtest.app/handler", "--classpath",
                  str(project), "--reuseport"] + list(args), workers=workers,
                 mode=mode)
    n.args[1] = "dev"
    n.args += ["--workers", str(workers)]
    return n


def answers(port, want, timeout):
    """GETs / on new connections from 4 threads until every worker pid in
    want has answered its version; {pid: seconds since the call}."""
    started = time.monotonic()
    seen = {}
    lock = threading.Lock()

    def hit():
        while time.monotonic() - started < timeout:
            with lock:
                if set(seen) >= set(want):
                    return
            try:
                r = request(port, "GET", "/", timeout=5)
            except OSError:
                continue
            version, _, pid = r.text.partition(" ")
            if r.status == 200 and want.get(int(pid)) == version:
                with lock:
                    seen.setdefault(int(pid), time.monotonic() - started)
    threads = [threading.Thread(target=hit) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return seen


def test_a_save_is_served_by_every_worker_within_a_second(project, mode):
    with dev(project, mode=mode) as n:
        pids = n.worker_pids()
        assert len(pids) == 2
        before = answers(n.port, {p: "v1" for p in pids}, 60)
        assert set(before) == set(pids), before
        saved = time.monotonic()
        write(project / "devtest" / "util.clj", UTIL % "v2")
        after = answers(n.port, {p: "v2" for p in pids}, 10)
        assert set(after) == set(pids), (after, n.log_text())
        slowest = max(after.values())
        print("the save served by both workers after %.3f s (%s)"
              % (slowest, after))
        assert slowest < 1.0, after
        # util changed: the namespace that requires it is reloaded after it
        assert n.wait_log(r"nginx.jvm.dev: reloaded \[devtest.util "
                          r"devtest.app\]")
        # the same workers: nothing restarted
        assert sorted(n.worker_pids()) == sorted(pids)


def mapped(pid, path):
    """Whether the process maps the file (the JVM maps a Class Data Sharing
    archive's regions from it)."""
    with open("/proc/%d/maps" % pid) as f:
        return any(line.rstrip().endswith(" " + path) for line in f)


def test_dev_maps_an_archive_of_the_jars_and_still_serves_a_save(project, cache):
    """dev's class cache: the first start archives the jars' classes into
    CACHE/dev, the next maps that archive in every worker, reading the
    sources from their directory, after the jars on the class path: a save
    is served by both workers within 1 s as without it."""
    root = os.environ["NGINX_JVM_CACHE"]
    with dev(project) as n:
        assert n.wait_log(r"nginx-jvm: dev: archiving the jars' classes into "
                          + re.escape(root) + r"/dev/[0-9a-f]{16}\.jsa")
    archives = os.listdir(os.path.join(root, "dev"))
    assert len(archives) == 1 and archives[0].endswith(".jsa"), archives
    archive = os.path.join(root, "dev", archives[0])
    conf = launcher("dev", "--handler", "devtest.app/handler", "--classpath",
                    str(project), "--print-config").stdout
    assert '"-XX:SharedArchiveFile=%s"' % archive in conf, conf
    # the jars, then the source directory
    cp = re.search(r"jvm_classpath\n(.*?);", conf, re.S).group(1).split()
    assert cp[-1] == '"%s"' % project and all(e.endswith('.jar"') for e in cp[:-1]), cp
    with dev(project) as n:
        pids = n.worker_pids()
        assert all(mapped(p, archive) for p in pids), archive
        assert set(answers(n.port, {p: "v1" for p in pids}, 60)) == set(pids)
        write(project / "devtest" / "util.clj", UTIL % "v2")
        after = answers(n.port, {p: "v2" for p in pids}, 10)
        assert set(after) == set(pids), (after, n.log_text())
        assert max(after.values()) < 1.0, after
        log = n.log_text()
        assert "archiving" not in log and "[cds" not in log, log
    assert os.listdir(os.path.join(root, "dev")) == archives


@pytest.mark.log_allows(r"nginx.jvm.dev: reloading devtest.app failed",
                        r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: )")
def test_a_broken_save_answers_its_error_until_fixed(project):
    with dev(project, workers=1) as n:
        assert n.get("/").text.startswith("v1 ")
        good = (project / "devtest" / "app.clj").read_text()
        write(project / "devtest" / "app.clj", good + "(defn oops [\n")

        def broken():
            r = n.get("/")
            return r if r.status == 500 else None
        r = wait_for(broken, 60)
        assert r, n.log_text()
        assert r.header("content-type").startswith("text/html")
        assert "reloading devtest.app failed" in r.text
        assert "EOF while reading" in r.text
        write(project / "devtest" / "app.clj", good.replace(
            "(u/version)", "(str (u/version) \"-fixed\")"))
        assert wait_for(lambda: n.get("/").text.startswith("v1-fixed "), 60)


@pytest.mark.log_allows(r"nginx.jvm.dev: the handler threw",
                        r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: )")
def test_an_exception_answers_its_stack_trace(project, mode):
    with dev(project, "--server", "location /boom "
             "{ jvm_content devtest.app/boom; }", workers=1, mode=mode) as n:
        since = n.log_size()
        r = n.get("/boom")
        assert r.status == 500
        assert r.header("content-type") == "text/html; charset=utf-8"
        # the message, escaped, and the handler's own frame
        assert "dev-boom-marker &lt;b&gt;" in r.text
        assert "<b>" not in r.text.split("<pre>")[1]
        assert "at devtest.app$boom" in r.text
        # logged as without dev
        assert n.wait_log(r"\[error\] .*nginx.jvm.dev: the handler threw: "
                          r"clojure.lang.ExceptionInfo: dev-boom-marker", since)
        assert n.get("/").status == 200


@pytest.mark.log_allows(r'jvm: cannot load handler "devtest.app/handler"',
                        r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: )")
def test_dev_serves_a_handler_that_cannot_load_until_a_save_fixes_it(project):
    good = (project / "devtest" / "app.clj").read_text()
    write(project / "devtest" / "app.clj",
          "(ns devtest.app (:require [no.such.lib]))\n")
    with dev(project, workers=1) as n:
        r = n.get("/")
        assert r.status == 500
        assert 'cannot load handler &quot;devtest.app/handler&quot;' in r.text
        assert "Could not locate no/such/lib" in r.text
        write(project / "devtest" / "app.clj", good)
        assert wait_for(lambda: n.get("/").text.startswith("v1 "), 60)


# --- %w and --debug -----------------------------------------------------------

def test_each_worker_gets_its_own_file():
    out = tempfile.mkdtemp(prefix="nginx-jvm-dev-w-")
    os.chmod(out, 0o777)
    try:
        http = ('    jvm_options "-Xlog:gc:file=%s/gc-%%w.log" '
                '"-Xlog:gc:file=%s/gc-%%{100+w}.log";' % (out, out))
        with Nginx("        location / { jvm_content testapp.ring/pid; }\n",
                   http=http, workers=2):
            files = sorted(os.listdir(out))
        # the master's trial start wrote none: only the workers' own
        assert files == ["gc-0.log", "gc-1.log", "gc-100.log",
                         "gc-101.log"], files
    finally:
        shutil.rmtree(out, ignore_errors=True)


@pytest.mark.parametrize("bad", ["-Dx=%{w}", "-Dx=%{7000+x}", "-Dx=%{7000"])
def test_a_bad_worker_placeholder_is_refused(bad):
    n = Nginx("", http='    jvm_options "%s";' % bad)
    try:
        t = n.test_config()
    finally:
        n.cleanup()
    assert t.returncode != 0
    assert 'jvm_options: "%s" has a "%%{" that is not "%%{N+w}"' % bad \
        in t.stderr, t.stderr


class Jdb:
    """The JDK's jdb, attached to a port, driven through pipes."""

    def __init__(self, port):
        self.proc = subprocess.Popen(
            [os.path.join(JAVA_HOME, "bin", "jdb"), "-attach",
             "127.0.0.1:%d" % port], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.out = b""
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while True:
            b = self.proc.stdout.read1(4096)
            if not b:
                return
            with self.lock:
                self.out += b

    def text(self):
        with self.lock:
            return self.out.decode("utf-8", "replace")

    def send(self, line):
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def expect(self, pattern, timeout=30):
        assert wait_for(lambda: re.search(pattern, self.text()), timeout), \
            self.text()

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def test_jdb_stops_a_worker_at_a_breakpoint():
    """--debug PORT: worker 1 of 2 on PORT+1; jdb sets a breakpoint in the
    handler, a request to that worker stops there (still unanswered), and
    `cont` lets it answer."""
    base = free_port_range(2)
    n = Launcher(["--handler", "testapp.Echo", "--classpath",
                  java_classes(), "--reuseport", "--cache", "off",
                  "--debug", str(base), "--workers", "2"], workers=2)
    with n:
        jdb = Jdb(base + 1)
        try:
            jdb.expect(r"Initializing jdb")
            jdb.send("stop in testapp.Echo.handle")
            jdb.expect(r"Set breakpoint testapp.Echo.handle")
            hit = False
            for _ in range(40):
                result = {}

                def get():
                    result["r"] = request(n.port, "GET", "/bp", timeout=60)
                t = threading.Thread(target=get)
                t.start()
                stopped = wait_for(lambda: "Breakpoint hit" in jdb.text()
                                   or not t.is_alive(), 60)
                assert stopped
                if "Breakpoint hit" not in jdb.text():
                    # worker 0 answered: try another connection
                    t.join()
                    assert result["r"].status == 200
                    continue
                hit = True
                jdb.expect(r"Breakpoint hit: .*testapp\.Echo\.handle\(\)")
                # the worker is stopped: its request waits
                time.sleep(0.5)
                assert t.is_alive() and "r" not in result
                jdb.send("clear testapp.Echo.handle")
                jdb.send("cont")
                t.join(30)
                assert not t.is_alive()
                assert result["r"].status == 200
                assert '"uri":"/bp"' in result["r"].text
                break
            assert hit, "no request reached worker 1"
        finally:
            jdb.close()
        # the worker goes on serving
        assert n.get("/after").status == 200


# --- the launcher's arguments -------------------------------------------------

def launcher(*args):
    return subprocess.run([LAUNCHER] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)


def test_dev_config(project):
    r = launcher("dev", "--handler", "devtest.app/handler", "--classpath",
                 "%s:%s" % (project, java_classes()), "--repl", "7000",
                 "--debug", "5005", "--print-config")
    assert r.returncode == 0, r.stderr
    conf = r.stdout
    # both directories watched, one worker, no cache, the REPL, JDWP per worker
    assert '"-Dnginx.jvm.dev=%s:%s"' % (project, java_classes()) in conf
    assert "worker_processes 1;" in conf
    assert 'jvm_cache "off";' in conf
    assert "jvm_repl 7000;" in conf
    assert ("-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,"
            "address=127.0.0.1:%{5005+w}") in conf
    r = launcher("dev", "--handler", "devtest.app/handler", "--classpath",
                 str(project), "--workers", "3", "--watch", str(project.parent),
                 "--print-config")
    assert "worker_processes 3;" in r.stdout
    assert '"-Dnginx.jvm.dev=%s"' % project.parent in r.stdout
    # an address for each (the image's dev: all the container's addresses)
    for repl, debug in (("0.0.0.0:7000", "0.0.0.0:5005"),
                        ("[::]:7000", "[::1]:5005")):
        r = launcher("dev", "--handler", "devtest.app/handler", "--classpath",
                     str(project), "--repl", repl, "--debug", debug,
                     "--print-config")
        assert r.returncode == 0, r.stderr
        assert "jvm_repl %s;" % repl in r.stdout
        assert "server=y,suspend=n,address=%s:%%{%s+w}" % tuple(
            debug.rsplit(":", 1)) in r.stdout


@pytest.mark.parametrize("args, message", [
    (["run", "--debug", "0"], "--debug must be a port number"),
    (["run", "--repl", "x"], "--repl must be a port number"),
    (["run", "--repl", "0.0.0.0:"], '--repl must be a port number from 1 to '
     '65535, optionally after an IP address (ADDR:PORT), not "0.0.0.0:"'),
    (["dev", "--debug", "0.0.0.0:70000"], "--debug must be a port number"),
    (["dev", "--repl", "localhost:7000"],
     '--repl localhost:7000: "localhost" is not an IP address'),
    (["dev", "--debug", "256.0.0.1:5005"],
     '--debug 256.0.0.1:5005: "256.0.0.1" is not an IP address'),
    (["dev", "--debug", "::1:5005"], '--debug ::1:5005: "::1" is not an IP'),
    (["run", "--watch", "/tmp"], "--watch is for dev"),
    (["dev", "--watch", "/nonexistent"], "--watch /nonexistent: not a directory"),
    (["dev", "--classpath", "/usr/share/java/ring-core.jar"],
     "dev watches the source directories of --classpath"),
])
def test_bad_dev_arguments_are_refused(args, message):
    cp = [] if "--classpath" in args else ["--classpath", "/tmp"]
    r = launcher(*(args[:1] + ["--handler", "a.b/c"] + cp + args[1:]))
    assert r.returncode == 2 and message in r.stderr, r.stderr
