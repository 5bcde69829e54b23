"""bin/nginx-jvm: the generated config, serving, and a clean stop on
SIGINT and SIGTERM (no nginx left behind, the temporary prefix removed)."""

import contextlib
import os
import pwd
import re
import resource
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from harness import (CLJ_APPS, RING_JARS, ROOT, alive, children,
                     fake_clojure_jar, free_port, java_classes, request,
                     wait_for)

LAUNCHER = str(ROOT / "bin" / "nginx-jvm")


@contextlib.contextmanager
def launched(args, path="/", timeout=60):
    """`bin/nginx-jvm run ARGS` on a free port, once it answers GET PATH:
    (process, port, that first response). Stopped with SIGTERM on the way
    out unless the test stopped it."""
    port = free_port()
    proc = subprocess.Popen(
        [LAUNCHER, "run", "--port", str(port)] + args,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        # not a background job of a shell: SIGINT is not ignored
        start_new_session=True)
    try:
        def serving():
            try:
                return request(port, "GET", path, timeout=2)
            except OSError:
                return None
        r = wait_for(serving, timeout)
        assert r is not None, proc.stderr.read1().decode()
        yield proc, port, r
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def stopped(proc, timeout=20):
    """Waits for the launcher to end; if it has not after `timeout` s,
    fails with its session's processes and what it wrote to stderr so far
    (once seen, 2026-11-28: still running 20 s after SIGINT, then ended 0)."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        ps = subprocess.run(["ps", "-o", "pid,ppid,stat,wchan:24,etime,args",
                             "-s", str(proc.pid)],
                            stdout=subprocess.PIPE, text=True).stdout
        os.set_blocking(proc.stderr.fileno(), False)
        err = proc.stderr.read() or b""
        raise AssertionError("the launcher runs %d s after its signal:\n%s\n"
                             "its stderr since:\n%s"
                             % (timeout, ps, err.decode(errors="replace")))


def stderr_until(proc, pattern, count, timeout=120):
    """What the launcher has written to stderr once `count` lines match
    `pattern` (or `timeout` seconds have passed)."""
    seen = b""
    end = time.monotonic() + timeout
    fd = proc.stderr.fileno()
    while (len(re.findall(pattern.encode(), seen)) < count
           and time.monotonic() < end):
        if select.select([fd], [], [], 0.5)[0]:
            data = os.read(fd, 65536)
            if not data:
                break
            seen += data
    assert len(re.findall(pattern.encode(), seen)) >= count, seen.decode()
    return seen.decode()


@pytest.fixture(autouse=True)
def cache(monkeypatch):
    """The launcher's class cache in the test's own directory, which the
    workers (nobody, started as root) can read."""
    top = tempfile.mkdtemp(prefix="nginx-jvm-test-cache-")
    os.chmod(top, 0o755)
    monkeypatch.setenv("NGINX_JVM_CACHE", os.path.join(top, "cache"))
    yield Path(top) / "cache"
    shutil.rmtree(top, ignore_errors=True)


def test_cache_option(cache, monkeypatch):
    args = ("run", "--handler", "testapp.offloop/fast", "--classpath",
            str(CLJ_APPS), "--print-config")
    assert 'jvm_cache "%s";' % cache in run(*args).stdout
    assert 'jvm_cache "off";' in run(*args, "--cache", "off").stdout
    assert 'jvm_cache "/srv/c";' in run(*args, "--cache", "/srv/c").stdout
    monkeypatch.delenv("NGINX_JVM_CACHE")
    monkeypatch.setenv("HOME", "/home/someone")
    expected = "/var/cache/nginx-jvm" if os.geteuid() == 0 \
        else "/home/someone/.cache/nginx-jvm"
    assert 'jvm_cache "%s";' % expected in run(*args).stdout
    r = run(*args, "--cache", "")
    assert r.returncode != 0 and "--cache needs a directory" in r.stderr


def run(*args, timeout=60, **kw):
    return subprocess.run([LAUNCHER] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout,
                          **kw)


def test_print_config_for_a_ring_handler():
    r = run("run", "--handler", "testapp.offloop/fast", "--classpath",
            str(CLJ_APPS), "--port", "8123", "--workers", "3",
            "--max-body-size", "20m", "--jvm-option", "-Xmx128m",
            "--mode", "pool", "--pool-size", "8", "--queue", "16",
            "--print-config")
    assert r.returncode == 0, r.stderr
    conf = r.stdout
    assert "listen 127.0.0.1:8123 backlog=4096;" in conf
    assert "sendfile on;" in conf, "File bodies leave by sendfile"
    assert "keepalive_requests 100000;" in conf
    assert "worker_processes 3;" in conf
    assert "client_max_body_size 20m;" in conf
    assert 'jvm_options "-Xmx128m";' in conf
    assert 'jvm_content "testapp.offloop/fast";' in conf
    assert "jvm_mode pool;" in conf
    assert "jvm_pool_size 8;" in conf and "jvm_queue 16;" in conf
    assert '"%s"' % (ROOT / "build" / "nginx-jvm.jar") in conf
    # Clojure from build/lib for a Ring handler
    assert '"%s/*"' % (ROOT / "build" / "lib") in conf


def test_static_locations(tmp_path):
    (tmp_path / "public").mkdir()
    r = run("run", "--handler", "testapp.Echo", "--classpath", "/tmp",
            "--static", "/static=public", "--static", "/img/=%s/" % tmp_path,
            "--print-config", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    # both end in "/": alias reaches nothing outside the directory
    assert ('location "/static/" {\n            alias "%s/public/";'
            % tmp_path) in r.stdout
    assert 'location "/img/" {\n            alias "%s/";' % tmp_path in r.stdout
    assert "include /etc/nginx/mime.types;" in r.stdout
    r = run("run", "--handler", "testapp.Echo", "--classpath", "/tmp",
            "--print-config")
    assert "alias" not in r.stdout and "mime.types" not in r.stdout


def test_reuseport_gives_each_worker_its_socket():
    args = ["--handler", "testapp.ring/pid", "--classpath",
            ":".join([str(CLJ_APPS), java_classes()] + RING_JARS),
            "--workers", "2"]
    r = run("run", *args, "--print-config")
    assert "listen 127.0.0.1:8080 backlog=4096;" in r.stdout
    r = run("run", *args, "--reuseport", "--print-config")
    assert "listen 127.0.0.1:8080 backlog=4096 reuseport;" in r.stdout
    with launched(args + ["--reuseport"], "/pid") as (proc, port, first):
        assert first.status == 200, first
        # the kernel spreads new connections over both workers' sockets
        seen = set()

        def both():
            seen.add(request(port, "GET", "/pid").text)
            return len(seen) == 2
        assert wait_for(both, 60), seen


def test_print_config_for_a_java_handler_has_no_clojure():
    r = run("run", "--handler", "testapp.Echo", "--classpath",
            java_classes(), "--print-config")
    assert r.returncode == 0, r.stderr
    assert str(ROOT / "build" / "lib") not in r.stdout


def test_a_classpath_with_clojure_keeps_its_own():
    r = run("run", "--handler", "a.b/c", "--classpath",
            str(CLJ_APPS) + ":" + str(ROOT / "build" / "lib" / "*"),
            "--print-config")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(str(ROOT / "build" / "lib")) == 1


@pytest.mark.parametrize("args, message", [
    ([], r"--handler is required"),
    (["--handler", "a.b/c"], r"--classpath or --jar is required"),
    (["--handler", "a.b/c", "--classpath", "/nonexistent/x.jar"],
     r"does not exist"),
    (["--handler", "a.b/c", "--classpath", "/tmp", "--port", "http"],
     r"--port must be"),
    (["--handler", "a.b/c", "--classpath", "/tmp", "--mode", "fast"],
     r"--mode must be"),
    (["--handler", "a.b/c", "--classpath", "/tmp", "--jvm-option", "Xmx1g"],
     r"is not a JVM option"),
    (["--handler", "a.b/c", "--classpath", "/tmp", "--static", "static=/tmp"],
     r"--static takes URL-PREFIX=DIR"),
    (["--handler", "a.b/c", "--classpath", "/tmp", "--static", "/s=/nonexistent"],
     r"--static: /nonexistent is not a directory"),
    (["--handler", "a.b/c", "--classpath", "/tmp", "--static", "/=/tmp"],
     r"the prefix / is the handler's"),
])
def test_bad_arguments_are_refused(args, message):
    r = run("run", *args)
    assert r.returncode == 2
    assert re.search(message, r.stderr), r.stderr


def nginx_pids_under(pid):
    """The launcher's nginx master and its workers."""
    found = []
    for child in children(pid):
        found.append(child)
        found.extend(children(child))
    return found


def prefix_of(proc):
    masters = children(proc.pid)
    # the master's title: "nginx: master process nginx -e stderr -p PREFIX ..."
    with open("/proc/%d/cmdline" % masters[0], "rb") as f:
        args = f.read().replace(b"\0", b" ").split()
    return args[args.index(b"-p") + 1].decode()


# The launcher's sizing: worker_connections from the hard descriptor limit,
# a quarter of it (at most 1,024) kept for the JVM's own files, at most 64 K
# descriptors and 10,240 connections (nginx writes every one at a worker's
# start); worker_rlimit_nofile the descriptors.
FD_CAP, FD_RESERVE, CONN_CAP = 65536, 1024, 10240


def hard_limit():
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return 1048576 if hard == resource.RLIM_INFINITY else hard


def limited(hard):
    """preexec_fn: the descriptor limit lowered to `hard`."""
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def sizing(conf):
    """(worker_connections, [worker_rlimit_nofile values]) of a config."""
    c = re.search(r"^\s*worker_connections (\d+);", conf, re.M)
    return (int(c.group(1)),
            [int(n) for n in re.findall(r"^worker_rlimit_nofile (\d+);",
                                        conf, re.M)])


@pytest.mark.parametrize("hard", [None, 1000, 8192, 16384])
def test_connections_follow_the_descriptor_limit(hard):
    kw = {"preexec_fn": limited(hard)} if hard else {}
    r = run("run", "--handler", "testapp.offloop/fast", "--classpath",
            str(CLJ_APPS), "--print-config", **kw)
    assert r.returncode == 0, r.stderr
    limit = hard or hard_limit()
    nofile = min(limit, FD_CAP)
    reserve = min(nofile // 4, FD_RESERVE)
    connections = min(nofile - reserve, CONN_CAP)
    assert sizing(r.stdout) == (connections, [nofile]), r.stdout
    # --print-config says where the numbers come from
    assert ("# worker_connections %d, worker_rlimit_nofile %d: from the "
            "descriptor limit (ulimit -Hn %d)" % (connections, nofile,
                                                 limit)) in r.stdout
    if nofile - reserve > CONN_CAP:
        assert "at most %d connections" % CONN_CAP in r.stdout


def test_given_connections_and_rlimit_are_kept():
    args = ("run", "--handler", "testapp.offloop/fast", "--classpath",
            str(CLJ_APPS), "--print-config", "--connections", "300")
    r = run(*args, preexec_fn=limited(4000))
    assert sizing(r.stdout) == (300, [4000]), r.stdout
    assert "worker_connections 300 (--connections)" in r.stdout
    # worker_rlimit_nofile in --main wins: one directive, not two
    r = run(*args, "--main", "worker_rlimit_nofile 3000;")
    assert sizing(r.stdout) == (300, [3000]), r.stdout
    assert "worker_rlimit_nofile from --main" in r.stdout
    # more connections than descriptors: said so
    r = run(*args[:-1], "5000", preexec_fn=limited(4000))
    assert sizing(r.stdout) == (5000, [4000]), r.stdout
    assert "too low for 5000 connections" in r.stdout
    r = run(*args[:-1], "many")
    assert r.returncode != 0 and "--connections must be" in r.stderr


def test_one_worker_holds_more_connections_than_the_old_4096():
    """The sweep's 10,000 connections may land on one worker: with the
    launcher's own config, one worker holds 5,000 at once (the old fixed
    4096 refused the rest: "worker_connections are not enough"), and its
    descriptor limit is the config's."""
    count = 5000
    if hard_limit() < 2 * count + 2 * FD_RESERVE:
        pytest.skip("the descriptor limit (%d) is too low for %d "
                    "connections here and in nginx" % (hard_limit(), count))
    cp = ":".join([str(CLJ_APPS)] + RING_JARS)
    with launched(["--handler", "testapp.offloop/fast", "--classpath", cp,
                   "--workers", "1"], "/x") as (proc, port, first):
        assert first.status == 200, first
        master, worker = nginx_pids_under(proc.pid)
        limits = open("/proc/%d/limits" % worker).read()
        nofile = min(hard_limit(), FD_CAP)
        assert re.search(r"Max open files\s+%d\s+%d" % (nofile, nofile),
                         limits), limits
        socks = []
        # this process holds them all: its soft limit up to the hard one
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        try:
            for _ in range(count):
                socks.append(socket.create_connection(("127.0.0.1", port),
                                                      timeout=60))
            for s in socks:
                s.sendall(b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
            answered = 0
            for s in socks:
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    answered += 1
            assert answered == count
        finally:
            for s in socks:
                s.close()
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        err = proc.stderr.read().decode()
        assert "worker_connections are not enough" not in err, err
        assert not re.search(r"\[(alert|crit|error|emerg)\]", err), err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_serves_then_stops_cleanly(sig):
    cp = ":".join([str(CLJ_APPS)] + RING_JARS)
    with launched(["--handler", "testapp.offloop/fast", "--classpath", cp,
                   "--workers", "2"], "/x") as (proc, port, first):
        assert first.status == 200, first
        r = request(port, "GET", "/x")
        assert r.text.startswith("fast on ")
        pids = nginx_pids_under(proc.pid)
        assert len(pids) == 3                     # master and two workers
        prefix = prefix_of(proc)
        assert os.path.isdir(prefix)
        # both JVMs started: nginx's fast stop kills a worker that is still
        # in its JVM's start after about a second ("exited on signal 9")
        seen = stderr_until(proc, r"jvm: worker \d+ ready", 2)

        os.kill(proc.pid, sig)
        stopped(proc)
        assert wait_for(lambda: not any(alive(p) for p in pids), 10)
        assert not os.path.exists(prefix)
        err = seen + proc.stderr.read().decode()
        assert not re.search(r"\[(alert|crit|error|emerg)\]", err), err


@contextlib.contextmanager
def started_with_ignored(*signums):
    """The launcher started (one worker, ready) with `signums` ignored, as a
    CI runner, nohup or a shell's background job leaves them; yields the
    process and what its error output said so far, and checks the rest of
    it for [alert]-or-worse lines once the test stopped it."""
    def ignored():
        for n in signums:
            signal.signal(n, signal.SIG_IGN)
    cp = ":".join([str(CLJ_APPS)] + RING_JARS)
    proc = subprocess.Popen(
        [LAUNCHER, "run", "--port", str(free_port()), "--handler",
         "testapp.offloop/fast", "--classpath", cp, "--workers", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True, preexec_fn=ignored)
    try:
        proc.seen = stderr_until(proc, r"jvm: worker \d+ ready", 1)
        yield proc
        err = proc.seen + proc.stderr.read().decode()
        assert not re.search(r"\[(alert|crit|error|emerg)\]", err), err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_stops_when_started_with_int_and_quit_ignored():
    """A background job of a non-interactive shell (and all it starts: a CI
    script's make, pytest, the launcher) inherits INT and QUIT ignored,
    which bash can neither trap nor reset: the launcher starts itself again
    with their default actions, so that INT still stops it, as it stops
    nginx (the fresh machine's failure of the test above, issue 46)."""
    with started_with_ignored(signal.SIGINT, signal.SIGQUIT) as proc:
        pids = nginx_pids_under(proc.pid)
        for pid in [proc.pid] + pids:
            with open("/proc/%d/status" % pid) as f:
                ign = int(re.search(r"SigIgn:\s*(\w+)", f.read()).group(1), 16)
            assert not ign & (1 << (signal.SIGINT - 1)), (pid, hex(ign))
        os.kill(proc.pid, signal.SIGINT)
        assert stopped(proc) == 0
        assert wait_for(lambda: not any(alive(p) for p in pids), 10)


def test_reloads_on_hup_when_started_under_nohup():
    """nohup (and a CI runner started so) leaves HUP ignored, which bash
    cannot trap: the launcher resets it as it does INT and QUIT, so that
    HUP still reloads (new workers), as it reloads an nginx under nohup."""
    with started_with_ignored(signal.SIGHUP) as proc:
        old = nginx_pids_under(proc.pid)
        os.kill(proc.pid, signal.SIGHUP)
        proc.seen += stderr_until(proc, r"jvm: worker \d+ ready", 1)
        assert "reconfiguring" in proc.seen, proc.seen
        assert wait_for(lambda: not any(alive(p) for p in old[1:]), 60)
        assert proc.poll() is None
        os.kill(proc.pid, signal.SIGTERM)
        assert stopped(proc) == 0


def test_second_start_uses_the_cache(cache):
    cp = ":".join([str(CLJ_APPS)] + RING_JARS)
    for start in (1, 2):
        with launched(["--handler", "testapp.offloop/fast", "--classpath", cp,
                       "--workers", "1"], "/x") as (proc, port, first):
            assert first.status == 200, first
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
            err = proc.stderr.read().decode()
            assert ("building the class cache" in err) == (start == 1), err
    # one entry, and jars/: the Ring jars whose manifests name Debian's
    # Clojure, unpacked once by the launcher (the same paths both starts)
    entries = sorted(p.name for p in cache.iterdir() if p.is_dir())
    assert len(entries) == 2 and entries[1] == "jars", entries


# --- manifests: Class-Path, and the jars served unpacked -------------------

def manifest_jar(path, names, files=None, compression=zipfile.ZIP_STORED):
    """A jar whose manifest's Class-Path names `names`, folded at 72 bytes
    as the jar tool writes it; its files `files` (name: text)."""
    text = "Class-Path: " + " ".join(names)
    lines = [text[:72]] + [" " + text[i:i + 71]
                           for i in range(72, len(text), 71)]
    with zipfile.ZipFile(path, "w", compression) as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n"
                   + "".join(l + "\r\n" for l in lines) + "\r\n")
        for name, data in (files or {"%s/x.txt" % path.stem: ""}).items():
            z.writestr(name, data)
    return path


def class_path(*entries):
    """The launcher's jvm_classpath for a Ring handler on `entries`
    (--print-config): (its entries after the runtime and the launcher's
    Clojure, stderr, CPU seconds it and its commands took), or (None,
    stderr, CPU seconds) when it refused.  CPU time, not the clock's: a
    launcher that loops spends it, a busy machine does not add to it (the
    time limit is for one that hangs)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = run("run", "--print-config", "--handler", "a.b/c", "--classpath",
            ":".join(str(e) for e in entries), timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    took = (after.ru_utime + after.ru_stime
            - before.ru_utime - before.ru_stime)
    if r.returncode != 0:
        return None, r.stderr, took
    block = r.stdout[r.stdout.index("jvm_classpath"):]
    cp = re.findall(r'^\s+"(.*)"$', block[:block.index(";")], re.M)
    assert cp[0].endswith("/nginx-jvm.jar") and cp[1].endswith("/lib/*"), cp
    return cp[2:], r.stderr, took


def unpacked_as(entry, jar):
    """Whether class path entry `entry` is `jar` served unpacked."""
    return re.fullmatch(r".*/jars/[0-9a-f]{16}-" + re.escape(jar.stem),
                        entry) is not None


@pytest.mark.parametrize("how", ["rewritten", "renamed"])
def test_a_jar_replaced_keeping_its_size_and_time_is_unpacked_again(
        cache, tmp_path, how):
    """The unpacked copy is kept by the jar's path, size and times, device
    and inode: another jar in its place (rewritten in place, or renamed
    over it), of the same size and given the same time (touch -r), has
    another ctime or inode, and its own classes are served, not the old
    copy's."""
    fake_clojure_jar(tmp_path / "clojure.jar", "1.11.1")
    app = manifest_jar(tmp_path / "app.jar", ["clojure.jar"],
                       {"app/version.txt": "one"})
    cp, err, _ = class_path(app)
    assert cp is not None, err
    assert len(cp) == 1 and unpacked_as(cp[0], app), cp
    assert Path(cp[0], "app/version.txt").read_text() == "one"
    before = os.stat(app)

    new = manifest_jar(tmp_path / "new.jar", ["clojure.jar"],
                       {"app/version.txt": "two"})
    if how == "rewritten":
        app.write_bytes(new.read_bytes())
    else:
        os.replace(new, app)
    os.utime(app, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(app)
    assert (after.st_size, after.st_mtime_ns) == \
        (before.st_size, before.st_mtime_ns)

    again, err, _ = class_path(app)
    assert again is not None, err
    assert len(again) == 1 and unpacked_as(again[0], app), again
    assert again != cp
    assert Path(again[0], "app/version.txt").read_text() == "two"
    # and the same jar again: the same copy (the class cache's key)
    assert class_path(app)[0] == again


def test_manifests_that_name_each_other(tmp_path):
    """a.jar names b.jar, which names a.jar and a Clojure; c.jar names
    a.jar: followed once each, and every jar that reaches the Clojure, c.jar
    too (through the loop), is served unpacked, the Clojure left out."""
    fake_clojure_jar(tmp_path / "clojure.jar", "1.11.1")
    a = manifest_jar(tmp_path / "a.jar", ["b.jar"])
    b = manifest_jar(tmp_path / "b.jar", ["a.jar", "clojure.jar"])
    c = manifest_jar(tmp_path / "c.jar", ["a.jar"])
    for entries, order in [([a, c], [a, b, c]), ([c, a], [c, a, b]),
                           ([b], [b, a])]:
        cp, err, took = class_path(*entries)
        assert cp is not None, err
        assert len(cp) == len(order), cp
        assert all(unpacked_as(e, j) for e, j in zip(cp, order)), cp
        assert took < 20, took


def test_a_jar_that_names_itself(tmp_path):
    """Class-Path: ./self.jar (another spelling of its own path): one
    entry, not a path that grows."""
    fake_clojure_jar(tmp_path / "clojure.jar", "1.11.1")
    me = manifest_jar(tmp_path / "self.jar", ["./self.jar", "clojure.jar",
                                              "../%s/self.jar" % tmp_path.name])
    cp, err, _ = class_path(me)
    assert cp is not None, err
    assert len(cp) == 1 and unpacked_as(cp[0], me), cp


def test_a_long_chain_of_manifests(tmp_path):
    """j0.jar names j1.jar, ... j49.jar names the Clojure (Debian's Ring
    jars: two or three): all fifty served unpacked, in the JVM's order."""
    n = 50
    fake_clojure_jar(tmp_path / "clojure.jar", "1.11.1")
    jars = [manifest_jar(tmp_path / ("j%d.jar" % i),
                         ["j%d.jar" % (i + 1) if i + 1 < n else "clojure.jar"])
            for i in range(n)]
    cp, err, took = class_path(jars[0])
    assert cp is not None, err
    assert len(cp) == n, cp
    assert all(unpacked_as(e, j) for e, j in zip(cp, jars)), cp
    assert took < 20, took


def test_a_manifest_of_thousands_of_names(tmp_path):
    """5,000 names: most of no file (the JVM skips them, so does the
    launcher), a URL and a file: URL, a name with %20, a directory, three
    jars, the Clojure: the class path is the jar unpacked, then what exists,
    in the manifest's order, and the URL is named."""
    fake_clojure_jar(tmp_path / "clojure.jar", "1.11.1")
    (tmp_path / "classes").mkdir()
    lib = tmp_path / "lib"
    lib.mkdir()
    plain = []
    for name in ["one.jar", "two words.jar", "three.jar"]:
        with zipfile.ZipFile(lib / name, "w") as z:
            z.writestr("p/%s.txt" % name.split(".")[0], "")
        plain.append(lib / name)
    names = ["missing/m%d.jar" % i for i in range(4990)]
    names[10:10] = ["lib/one.jar"]
    names[2000:2000] = ["http://example.com/remote.jar",
                        "lib/two%20words.jar", "classes/"]
    names[4000:4000] = ["file:%s" % (lib / "three.jar"), "clojure.jar"]
    assert len(names) == 4996
    app = manifest_jar(tmp_path / "app.jar", names)
    cp, err, took = class_path(app)
    assert cp is not None, err
    assert unpacked_as(cp[0], app), cp
    assert cp[1:] == [str(plain[0]), str(plain[1]), str(tmp_path / "classes") + "/",
                      str(plain[2])], cp
    assert "names http://example.com/remote.jar, not files: left out" in err
    assert took < 20, took


def test_manifests_that_name_too_many_jars_are_refused(tmp_path):
    """Over 1,000 jars reached through manifests from one entry: refused,
    saying which and why, quickly."""
    fake_clojure_jar(tmp_path / "clojure.jar", "1.11.1")
    for i in range(1001):
        with zipfile.ZipFile(tmp_path / ("d%d.jar" % i), "w") as z:
            z.writestr("d/%d.txt" % i, "")
    app = manifest_jar(tmp_path / "app.jar",
                       ["d%d.jar" % i for i in range(1001)] + ["clojure.jar"])
    cp, err, took = class_path(app)
    assert cp is None
    assert "%s: its manifests name more than 1000 jars" % app in err, err
    assert took < 20, took


def test_an_oversized_manifest_is_refused(tmp_path):
    """A manifest of 5 MB (compressed to little): refused, not read whole."""
    fake_clojure_jar(tmp_path / "clojure.jar", "1.11.1")
    app = manifest_jar(tmp_path / "app.jar",
                       ["clojure.jar"] + ["x" * 100] * 50000,
                       compression=zipfile.ZIP_DEFLATED)
    cp, err, took = class_path(app)
    assert cp is None
    assert "%s: its manifest is over 4194304 bytes" % app in err, err
    assert took < 20, took


def test_java_handler_through_the_launcher():
    with launched(["--handler", "testapp.Echo", "--classpath",
                   java_classes(), "--workers", "1"], "/hi?x=1") as \
            (proc, port, first):
        assert first.status == 200, first
    assert proc.returncode == 0


def worker_users(proc):
    users = set()
    for pid in children(children(proc.pid)[0]):
        with open("/proc/%d/status" % pid) as f:
            uid = [l.split()[1] for l in f if l.startswith("Uid:")][0]
        users.add(pwd.getpwuid(int(uid)).pw_name)
    return users


WHOAMI = """(ns whoami.core)

;; top-level code: runs wherever the namespace loads (the master's JVMs
;; that build the class cache, then each worker)
(spit (str "%s/" (.pid (java.lang.ProcessHandle/current)))
      (System/getProperty "user.name"))

(defn handler [request]
  {:status 200 :body (System/getProperty "user.name")})
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="only root chooses the user")
def test_started_as_root_the_application_runs_as_nobody(cache, monkeypatch):
    """Workers and the master's JVMs alike; the class cache they built is
    then root's, read-only to them."""
    monkeypatch.delenv("SUDO_USER", raising=False)
    top = Path(tempfile.mkdtemp(prefix="nginx-jvm-test-whoami-"))
    try:
        os.chmod(top, 0o755)
        (top / "src" / "whoami").mkdir(parents=True)
        (top / "src" / "whoami" / "core.clj").write_text(WHOAMI % (top / "marks"))
        (top / "marks").mkdir()
        os.chmod(top / "marks", 0o777)
        with launched(["--handler", "whoami.core/handler", "--classpath",
                       str(top / "src"), "--workers", "2"], "/", 90) as \
                (proc, port, r):
            assert r.status == 200, proc.stderr.read1().decode()
            assert r.text == "nobody"
            assert worker_users(proc) == {"nobody"}
            def marks():
                found = {p.name: p.read_text()
                         for p in (top / "marks").iterdir()}
                # the compiling and archiving JVMs, and the two workers,
                # each file written whole (spit creates it, then writes)
                return found if len(found) == 4 and all(found.values()) \
                    else None
            found = wait_for(marks, 30)
            assert found and set(found.values()) == {"nobody"}, found
            [entry] = [p for p in cache.iterdir() if p.is_dir()]
            for p in [entry] + list(entry.rglob("*")):
                assert p.stat().st_uid == 0, p
                assert not p.stat().st_mode & 0o022, p
        err = proc.stderr.read().decode()
        assert "not readable" not in err and "[warn]" not in err, err
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root chooses the user")
def test_the_user_who_ran_sudo_or_root_when_asked(monkeypatch):
    args = ("run", "--handler", "testapp.offloop/fast", "--classpath",
            str(CLJ_APPS), "--print-config")
    monkeypatch.setenv("SUDO_USER", "daemon")
    assert "\nuser daemon daemon;\n" in run(*args).stdout
    assert "\nuser root root;\n" in run(*args, "--user", "root").stdout
    monkeypatch.setenv("SUDO_USER", "root")
    assert "\nuser nobody nogroup;\n" in run(*args).stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="only root chooses the user")
def test_a_class_path_the_workers_cannot_read_is_refused(tmp_path,
                                                         monkeypatch):
    monkeypatch.delenv("SUDO_USER", raising=False)
    private = tmp_path / "private"          # below pytest's 0700 directory
    private.mkdir()
    r = run("run", "--handler", "testapp.offloop/fast", "--classpath",
            "%s:%s" % (CLJ_APPS, private))
    assert r.returncode == 2
    assert "the workers run as nobody" in r.stderr
    assert "    %s\n" % private in r.stderr
    assert str(CLJ_APPS) + "\n" not in r.stderr
    assert "--user root" in r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="only root chooses the user")
def test_a_static_directory_the_workers_cannot_read_is_refused(tmp_path,
                                                              monkeypatch):
    monkeypatch.delenv("SUDO_USER", raising=False)
    public = tmp_path / "public"            # below pytest's 0700 directory
    public.mkdir()
    r = run("run", "--handler", "testapp.offloop/fast", "--classpath",
            str(CLJ_APPS), "--static", "/static/=%s" % public)
    assert r.returncode == 2
    assert "the workers run as nobody" in r.stderr
    assert "    %s/\n" % public in r.stderr


def test_any_nginx_directive_through_the_launcher(tmp_path):
    """--http, --server and --server-conf carry directives the launcher
    has no option for: a request limit answers 503 beyond its rate, and a
    WebSocket message limit lands in the server block."""
    conf = tmp_path / "server.conf"
    conf.write_text("jvm_websocket_max_message 32m;\n"
                    "location /limited {\n"
                    "    limit_req zone=one nodelay;\n"
                    "    limit_req_status 503;\n"
                    "    jvm_content testapp.ring/pid;\n"
                    "}\n")
    args = ["--handler", "testapp.ring/pid", "--classpath",
            ":".join([str(CLJ_APPS), java_classes()] + RING_JARS),
            "--workers", "1",
            "--http", "limit_req_zone $binary_remote_addr zone=one:1m "
                      "rate=1r/m;",
            "--server-conf", str(conf)]
    r = run("run", *args, "--print-config")
    assert r.returncode == 0, r.stderr
    assert 'include "%s";' % conf in r.stdout
    http = r.stdout.index("limit_req_zone")
    assert http < r.stdout.index("server {") < r.stdout.index("include")
    with launched(args, "/pid") as (proc, port, first):
        assert first.status == 200, first
        # one request a minute: the next ones are refused by nginx itself
        codes = [request(port, "GET", "/limited").status for _ in range(4)]
        assert codes == [200, 503, 503, 503], codes
        assert request(port, "GET", "/pid").status == 200


def test_a_wrong_directive_is_named_as_nginx_starts(tmp_path):
    conf = tmp_path / "server.conf"
    conf.write_text("jvm_websocket_max_message lots;\n")
    r = run("run", "--handler", "testapp.ring/pid", "--classpath",
            str(CLJ_APPS), "--port", str(free_port()),
            "--server-conf", str(conf))
    assert r.returncode != 0
    assert re.search(r'\[emerg\].*"jvm_websocket_max_message"', r.stderr), \
        r.stderr
    r = run("run", "--handler", "testapp.ring/pid", "--classpath",
            str(CLJ_APPS), "--server-conf", str(tmp_path / "missing.conf"))
    assert r.returncode == 2
    assert "--server-conf" in r.stderr and "not a readable file" in r.stderr


# --- the JDK: an explicit choice (JAVA_HOME, --jvm-path) as told, else the
# newest of 17 or newer that has a libjvm.so -----------------------------------

JVM = Path("/usr/lib/jvm")
JDK_LINE = re.compile(r"^nginx-jvm: (JDK \S+ \((/[^)]*)\), .*)$", re.M)


def release_version(home):
    release = Path(home) / "release"
    if not release.exists():
        return None
    m = re.search(r'^JAVA_VERSION="([^"]+)"', release.read_text(), re.M)
    return m.group(1) if m else None


def feature(version):
    return int(re.match(r"(?:1\.)?(\d+)", version).group(1))


def usable_jdks():
    """{real directory: version} of the machine's JDKs 17 or newer with a
    libjvm.so, in /usr/lib/jvm and the java on $PATH's."""
    homes = [p.resolve() for p in JVM.iterdir() if p.is_dir()]
    java = shutil.which("java")
    if java:
        homes.append(Path(java).resolve().parents[1])
    found = {}
    for home in homes:
        v = release_version(home)
        if v and feature(v) >= 17 and (home / "lib/server/libjvm.so").exists():
            found[home] = v
    return found


def newest_and_17():
    """(the newest JDK, a JDK 17), real directories, or a skip."""
    jdks = usable_jdks()
    newest = max(jdks, key=lambda h: feature(jdks[h]), default=None)
    jdk17 = [h for h in jdks if feature(jdks[h]) == 17]
    if not newest or not jdk17 or feature(jdks[newest]) == 17:
        pytest.skip("needs a JDK 17 and a newer one in /usr/lib/jvm")
    return newest, jdk17[0]


def fake_jdk(home, version=None, libjvm=True, java_says=None):
    """A directory in a JDK's shape: its release file (if version), an
    empty lib/server/libjvm.so (if libjvm), and a bin/java that prints
    `java_says` as "java -version" does (if given)."""
    home.mkdir(parents=True)
    if version:
        (home / "release").write_text('JAVA_VERSION="%s"\nIMPLEMENTOR="test"\n'
                                      % version)
    if libjvm:
        (home / "lib/server").mkdir(parents=True)
        (home / "lib/server/libjvm.so").write_bytes(b"")
    if java_says:
        (home / "bin").mkdir()
        (home / "bin/java").write_text(
            "#!/bin/sh\necho 'openjdk version \"%s\" 2031-01-01' >&2\n"
            % java_says)
        os.chmod(home / "bin/java", 0o755)
    return home


@pytest.fixture
def jdk_root(tmp_path, monkeypatch):
    """A /usr/lib/jvm of the test's (NGINX_JVM_JDK_ROOT): the machine's
    newest JDK and its JDK 17, linked; an old JDK 11 with a libjvm.so; a
    "JDK 99" without one (broken, or a JRE without the server VM). No
    JAVA_HOME."""
    newest, jdk17 = newest_and_17()
    root = tmp_path / "jvm"
    root.mkdir()
    (root / "newest").symlink_to(newest)
    (root / "java-17").symlink_to(jdk17)
    fake_jdk(root / "jdk-11-old", "11.0.2")
    fake_jdk(root / "jdk-99-broken", "99", libjvm=False)
    monkeypatch.setenv("NGINX_JVM_JDK_ROOT", str(root))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    return root, newest, jdk17


def libjvm_of(proc):
    """The libjvm.so the launcher's worker has loaded."""
    master, worker = nginx_pids_under(proc.pid)
    maps = open("/proc/%d/maps" % worker).read()
    return set(re.findall(r"(/\S+/libjvm\.so)$", maps, re.M))


def print_config(*args, **kw):
    return run("run", "--handler", "testapp.Echo", "--classpath",
               java_classes(), *args, "--print-config", **kw)


def assert_jdk_chosen(jdk, said):
    """--print-config names `jdk` in the words `said` above its jvm_path,
    and a launched worker loads that libjvm.so; returns the launcher's
    stderr."""
    lib = "%s/lib/server/libjvm.so" % jdk
    r = print_config()
    assert r.returncode == 0, r.stderr
    assert ('    # %s\n    jvm_path "%s";' % (said, lib)) in r.stdout, r.stdout
    with launched(["--handler", "testapp.Echo", "--classpath",
                   java_classes(), "--workers", "1"], "/hi") as \
            (proc, port, first):
        assert first.status == 200, first
        assert libjvm_of(proc) == {lib}
    return proc.stderr.read().decode()


def test_the_newest_usable_jdk_serves_and_is_named(jdk_root):
    root, newest, jdk17 = jdk_root
    v = release_version(newest)
    # the java on PATH's (JDK 17 here) counts once, by whatever names
    java = shutil.which("java")
    on_path = {Path(java).resolve().parents[1]} if java else set()
    found = len({newest, jdk17} | (on_path & set(usable_jdks())))
    said = ("JDK %s (%s), the newest of %d found; JAVA_HOME chooses another"
            % (v, newest, found))
    err = assert_jdk_chosen(newest, said)
    # one line, before nginx's own
    assert err.startswith("nginx-jvm: %s\nnginx-jvm: serving " % said), err


def test_java_home_wins(jdk_root, monkeypatch):
    root, newest, jdk17 = jdk_root
    # by a link: named, and loaded, by its real directory
    monkeypatch.setenv("JAVA_HOME", str(root / "java-17"))
    said = "JDK %s (%s), from JAVA_HOME" % (release_version(jdk17), jdk17)
    err = assert_jdk_chosen(jdk17, said)
    assert err.startswith("nginx-jvm: %s\n" % said), err
    # --jvm-path wins over JAVA_HOME
    lib = "%s/lib/server/libjvm.so" % newest
    r = print_config("--jvm-path", lib)
    assert ('    # JDK %s (%s), from --jvm-path\n    jvm_path "%s";'
            % (release_version(newest), newest, lib)) in r.stdout, r.stdout


@pytest.mark.parametrize("how", ["JAVA_HOME", "--jvm-path"])
def test_an_explicit_jdk_older_than_17_is_refused(jdk_root, monkeypatch, how):
    root = jdk_root[0]
    old = root / "jdk-11-old"
    if how == "JAVA_HOME":
        monkeypatch.setenv("JAVA_HOME", str(old))
        args = []
        message = ("nginx-jvm: JAVA_HOME is %s, a JDK 11.0.2: nginx-jvm needs "
                   "a JDK 17 or\nnewer" % old)
    else:
        args = ["--jvm-path", str(old / "lib/server/libjvm.so")]
        message = ("--jvm-path %s/lib/server/libjvm.so is of a JDK 11.0.2 (%s)"
                   % (old, old))
    for extra in ([], ["--print-config"]):
        r = run("run", "--handler", "testapp.Echo", "--classpath",
                java_classes(), "--port", str(free_port()), *args, *extra)
        assert r.returncode == 2, r.stderr
        assert message in r.stderr, r.stderr
        assert "serving" not in r.stderr and r.stdout == ""
    # and one without a libjvm.so
    monkeypatch.setenv("JAVA_HOME", str(root / "jdk-99-broken"))
    r = print_config()
    assert r.returncode == 2
    assert ("JAVA_HOME is %s, which has no lib/server/libjvm.so"
            % (root / "jdk-99-broken")) in r.stderr, r.stderr


def test_ties_and_a_jdk_without_a_release_file(tmp_path, monkeypatch):
    """Of JDKs of the same feature version: the java on $PATH's, then
    default-java's, then the newest update; a JDK without a release file
    says its version through java -version. (Fake JDKs: config only.)"""
    monkeypatch.delenv("JAVA_HOME", raising=False)
    root = tmp_path / "jvm"
    root.mkdir()
    fake_jdk(root / "d-21", "21.0.1")
    (root / "default-java").symlink_to(root / "d-21")
    fake_jdk(root / "x-21", "21.0.9")
    fake_jdk(root / "a-21", "21.0.5")
    path_jdk = fake_jdk(tmp_path / "p-21", "21.0.0", java_says="21.0.0")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/java").symlink_to(path_jdk / "bin/java")
    monkeypatch.setenv("NGINX_JVM_JDK_ROOT", str(root))

    def chosen(path):
        r = print_config(env=dict(os.environ, PATH=path))
        assert r.returncode == 0, r.stderr
        return re.search(r'jvm_path "(.*)/lib/server/libjvm.so";',
                         r.stdout).group(1), r.stdout
    system_path = os.environ["PATH"]
    home, conf = chosen("%s/bin:%s" % (tmp_path, system_path))
    assert home == str(path_jdk), conf
    assert "# JDK 21.0.0 (%s), the newest of 4 found" % path_jdk in conf
    home, conf = chosen(system_path)
    assert home == str(root / "d-21"), conf
    (root / "default-java").unlink()
    assert chosen(system_path)[0] == str(root / "x-21")
    # newer than them all, with no release file: its java -version
    fake_jdk(root / "y-30", java_says="30.0.1")
    home, conf = chosen(system_path)
    assert home == str(root / "y-30"), conf
    assert "# JDK 30.0.1 (%s), the newest of " % (root / "y-30") in conf


def test_virtual_threads_need_jdk_21(jdk_root, monkeypatch):
    root, newest, jdk17 = jdk_root
    if feature(release_version(newest)) < 21:
        pytest.skip("needs a JDK 21 or newer in /usr/lib/jvm")
    for mode in ("virtual", "coloop"):
        r = print_config("--mode", mode)     # the newest: fine
        assert r.returncode == 0, r.stderr
        assert 'jvm_path "%s/lib/server/libjvm.so";' % newest in r.stdout
    monkeypatch.setenv("JAVA_HOME", str(jdk17))
    for mode in ("virtual", "coloop"):
        r = print_config("--mode", mode)
        assert r.returncode == 2
        assert ("--mode %s needs a JDK 21 or newer, not\nJDK %s (%s), from "
                "JAVA_HOME" % (mode, release_version(jdk17), jdk17)) \
            in r.stderr, r.stderr
    assert print_config("--mode", "pool").returncode == 0


def test_no_jdk_found(tmp_path, monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    (tmp_path / "jvm").mkdir()
    fake_jdk(tmp_path / "jvm/old", "11.0.2")
    monkeypatch.setenv("NGINX_JVM_JDK_ROOT", str(tmp_path / "jvm"))
    # a PATH without java: /usr/bin's other commands
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in os.listdir("/usr/bin"):
        if tool != "java":
            (tools / tool).symlink_to("/usr/bin/" + tool)
    r = print_config(env=dict(os.environ, PATH="%s:/usr/sbin" % tools))
    assert r.returncode == 2
    assert "no JDK 17 or newer found" in r.stderr, r.stderr


def test_this_machines_jdk_is_named(monkeypatch):
    """No JAVA_HOME, the real /usr/lib/jvm: the newest (Temurin 25 on the
    project's machine), on stderr as run starts."""
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("NGINX_JVM_JDK_ROOT", raising=False)
    jdks = usable_jdks()
    if not jdks:
        pytest.skip("no JDK 17 or newer in /usr/lib/jvm")
    top = max(feature(v) for v in jdks.values())
    with launched(["--handler", "testapp.Echo", "--classpath",
                   java_classes(), "--workers", "1"], "/hi") as \
            (proc, port, first):
        assert first.status == 200, first
        loaded = libjvm_of(proc)
    err = proc.stderr.read().decode()
    m = JDK_LINE.search(err)
    assert m, err
    home = Path(m.group(2))
    assert home in jdks and feature(jdks[home]) == top, m.group(0)
    among = "the only one found" if len(jdks) == 1 \
        else "the newest of %d found" % len(jdks)
    assert m.group(1) == "JDK %s (%s), %s; JAVA_HOME chooses another" % (
        jdks[home], home, among)
    assert loaded == {"%s/lib/server/libjvm.so" % home}
    temurin = JVM / "temurin-25-jdk-amd64"
    if temurin.exists() and top == 25:
        assert home == temurin.resolve(), m.group(0)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root chooses the user")
def test_a_jdk_the_workers_cannot_read_is_refused(jdk_root, monkeypatch):
    root, newest, jdk17 = jdk_root          # below pytest's 0700 directory
    monkeypatch.delenv("SUDO_USER", raising=False)
    lib = root / "newest/lib/server/libjvm.so"
    r = run("run", "--handler", "testapp.Echo", "--classpath",
            java_classes(), "--jvm-path", str(lib))
    assert r.returncode == 2
    assert "the workers run as nobody" in r.stderr
    assert "    %s\n" % lib in r.stderr, r.stderr
