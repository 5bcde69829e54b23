"""A throw-away redis-server for the tests of the Redis session store and
the topic bridge: Debian's redis-server (scripts/install-deps.sh) on a free
loopback port, its files in a temporary directory, stopped by its PID."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile

import pytest

from harness import BUILD, MODES, free_port, ring_classpath, wait_for

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_LIB = BUILD / "redis-lib"


def require_redis():
    """Skips the calling module, saying why, without redis-server or Jedis."""
    if not os.access(REDIS_SERVER, os.X_OK):
        pytest.skip("redis-server is not installed (scripts/install-deps.sh "
                    "installs Debian's)", allow_module_level=True)
    if not (REDIS_LIB / ".done").exists():
        pytest.skip("build/redis-lib is missing: make redis-deps",
                    allow_module_level=True)


def one_mode_only(mode):
    """Skips all but the first mode of the run, for what the execution mode
    does not change (the bridge's own threads, a class path), to keep
    `make test` short."""
    if mode != MODES[0]:
        pytest.skip("the same in every mode: run in %s only" % MODES[0])


def classpath():
    """The Ring test apps' class path with Jedis."""
    return ring_classpath() + [str(REDIS_LIB) + "/*"]


class RedisServer:
    """persist: an append-only file, so that a restart keeps the data."""

    def __init__(self, persist=True):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="nginx-jvm-redis-")
        self.persist = persist
        self.proc = None

    @property
    def uri(self):
        return "redis://127.0.0.1:%d" % self.port

    def start(self):
        args = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", self.dir, "--save", "", "--daemonize", "no",
                "--logfile", os.path.join(self.dir, "redis.log")]
        if self.persist:
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        assert wait_for(self.answers, 60), "redis-server did not start"
        return self

    def answers(self):
        try:
            return self.command("PING") == "PONG"
        except OSError:
            return False

    def command(self, *args, timeout=5):
        """One command in RESP; answers a str, an int, a list or None."""
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        with socket.create_connection(("127.0.0.1", self.port),
                                      timeout=timeout) as s:
            s.sendall(out)
            f = s.makefile("rb")
            return _reply(f)

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            if sig != signal.SIGTERM:
                os.kill(self.proc.pid, signal.SIGCONT)
            os.kill(self.proc.pid, sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None

    def pause(self):
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()


def _reply(f):
    line = f.readline()
    if not line:
        raise OSError("redis closed the connection")
    kind, rest = line[:1], line[1:-2]
    if kind in (b"+", b"-"):
        return rest.decode()
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data.decode("utf-8", "replace")
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_reply(f) for _ in range(n)]
    raise OSError("unexpected reply %r" % line)
