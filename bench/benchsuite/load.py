"""Load tools: wrk (throughput), oha (fixed-rate latency), a client holding
idle keep-alive connections, /proc for resident memory and CPU time, and
jcmd for what a JVM's threads allocated.

The parse_* functions and response_complete are pure: they take a tool's
text and return numbers, and are unit-tested on recorded output
(tests/test_bench_load.py).
"""

import json
import os
import re
import selectors
import shutil
import socket
import subprocess
import time

# --- wrk --------------------------------------------------------------------

_UNITS_MS = {"us": 0.001, "µs": 0.001, "ms": 1.0, "s": 1000.0,
             "m": 60000.0, "h": 3600000.0, "secs": 1000.0, "sec": 1000.0}


def to_ms(value, unit):
    return float(value) * _UNITS_MS[unit]


def parse_wrk(text):
    """wrk's report -> {rps, requests, non2xx, socket_errors, latency_avg_ms}.

    Raises ValueError when the text holds no "Requests/sec" line (wrk failed
    to connect, say)."""
    m = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M)
    if not m:
        raise ValueError("no Requests/sec in wrk's output: %r" % text[-300:])
    out = {"rps": float(m.group(1)), "non2xx": 0, "socket_errors": 0}
    m = re.search(r"^\s*(\d+) requests in", text, re.M)
    out["requests"] = int(m.group(1)) if m else None
    m = re.search(r"^\s*Latency\s+([\d.]+)(us|ms|s|m|h)\b", text, re.M)
    out["latency_avg_ms"] = to_ms(*m.groups()) if m else None
    m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    if m:
        out["non2xx"] = int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                  r"timeout (\d+)", text)
    if m:
        out["socket_errors"] = sum(map(int, m.groups()))
    return out


def wrk_lua(method, headers, body):
    """A wrk script that sends `method` with `body` (bytes, ASCII)."""
    lines = ['wrk.method = "%s"' % method]
    lines += ['wrk.headers["%s"] = "%s"' % h for h in headers]
    if body is not None:
        lines.append('wrk.body = "%s"' % body.decode("ascii"))
    return "\n".join(lines) + "\n"


def wrk(url, duration, script=None, headers=(), conns=50):
    """Runs `wrk -t1 -cCONNS -dDs` and returns (parsed, raw output)."""
    cmd = ["wrk", "-t1", "-c%d" % conns, "-d%ds" % duration]
    for name, value in headers:
        cmd += ["-H", "%s: %s" % (name, value)]
    if script:
        cmd += ["-s", str(script)]
    p = subprocess.run(cmd + [url], capture_output=True, text=True,
                       timeout=duration + 60)
    return parse_wrk(p.stdout + p.stderr), p.stdout + p.stderr


# --- oha --------------------------------------------------------------------

def find_oha():
    """The oha binary: on PATH or where `cargo install` puts it; or None."""
    for path in (shutil.which("oha"), os.path.expanduser("~/.cargo/bin/oha")):
        if path and os.access(path, os.X_OK):
            return path
    return None


def install_oha():
    """`cargo install oha --locked` (about 8 minutes on 2 cores); returns
    (path or None, why not)."""
    cargo = shutil.which("cargo") or os.path.expanduser("~/.cargo/bin/cargo")
    if not os.access(cargo, os.X_OK):
        return None, "oha is missing and so is cargo (to install it)"
    print("bench: oha is missing; building it with `cargo install oha "
          "--locked` (about 8 minutes, once: it stays in ~/.cargo/bin)",
          flush=True)
    try:
        p = subprocess.run([cargo, "install", "oha", "--locked"],
                           capture_output=True, text=True, timeout=3600)
    except subprocess.TimeoutExpired:
        return None, "`cargo install oha --locked` took over an hour"
    if p.returncode != 0:
        return None, ("`cargo install oha --locked` failed: "
                      + p.stderr.strip().splitlines()[-1:][0]
                      if p.stderr.strip() else "exit %d" % p.returncode)
    return find_oha(), None


def oha_output_flags(help_text):
    """The flags that make this oha print JSON, from its --help text; [] when
    it only prints text."""
    if "--output-format" in help_text:
        return ["--output-format", "json"]
    if re.search(r"(^|\s)--json\b", help_text):
        return ["--json"]
    return []


def errors(distribution):
    """The count of failed requests from oha's (error, count) pairs; those
    still running at the end of -z are not failures."""
    return sum(int(n) for e, n in distribution
               if "aborted due to deadline" not in e)


def parse_oha_json(text):
    """oha's JSON -> {rps, success, p50 .. p99.99 (ms), statuses}."""
    data = json.loads(text)
    summary, pct = data["summary"], data.get("latencyPercentiles") or {}
    out = {"rps": summary.get("requestsPerSec"),
           "success": summary.get("successRate"),
           "statuses": {str(k): v for k, v in
                        (data.get("statusCodeDistribution") or {}).items()},
           "errors": errors((data.get("errorDistribution") or {}).items())}
    for key in ("p50", "p90", "p99", "p99.9", "p99.99"):
        value = pct.get(key)
        out[key] = None if value is None else value * 1000.0
    return out


def parse_oha_text(text):
    """oha's text report -> the same keys as parse_oha_json."""
    out = {"rps": None, "success": None, "statuses": {}, "errors": 0}
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    if m:
        out["rps"] = float(m.group(1))
    m = re.search(r"Success rate:\s+([\d.]+)%", text)
    if m:
        out["success"] = float(m.group(1)) / 100
    found = {}
    for p, value, unit in re.findall(
            r"([\d.]+)% in ([\d.]+) (secs|sec|ms|us|µs)", text):
        found[float(p)] = to_ms(value, unit)
    for key, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9),
                   ("p99.99", 99.99)):
        out[key] = found.get(p)
    for code, count in re.findall(r"\[(\d{3})\]\s+(\d+)\s+responses", text):
        out["statuses"][code] = int(count)
    tail = text.split("Error distribution:", 1)[1:]
    if tail:
        out["errors"] = errors((e, n) for n, e in
                               re.findall(r"^\s*\[(\d+)\]\s+(.+)$", tail[0],
                                          re.M))
    return out


def oha(path, url, rate, duration, conns=50):
    """Fixed-rate open-model load with latency correction; returns
    (parsed, raw output)."""
    help_text = subprocess.run([path, "--help"], capture_output=True,
                               text=True).stdout
    flags = oha_output_flags(help_text)
    cmd = [path, "-q", str(rate), "--latency-correction", "-c", str(conns),
           "-z", "%ds" % duration, "--no-tui"] + flags + [url]
    p = subprocess.run(cmd, capture_output=True, text=True,
                       timeout=duration + 120)
    if p.returncode != 0:
        raise RuntimeError("oha failed (%d): %s" % (p.returncode,
                                                    p.stderr.strip()[-300:]))
    parse = parse_oha_json if flags else parse_oha_text
    return parse(p.stdout), p.stdout


# --- idle keep-alive connections -------------------------------------------

def response_complete(data):
    """Whether `data` holds one whole HTTP/1.1 response (Content-Length or
    chunked)."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return False
    head = data[:end].decode("latin-1").lower()
    m = re.search(r"^content-length:\s*(\d+)", head, re.M)
    if m:
        return len(data) - end - 4 >= int(m.group(1))
    if re.search(r"^transfer-encoding:.*chunked", head, re.M):
        return data.endswith(b"0\r\n\r\n")
    return True


def open_idle(host, port, count, path="/hello", batch=50, timeout=180):
    """Opens `count` keep-alive connections, each with one request answered,
    and returns (the open sockets, how many failed).  Non-blocking sockets
    in one selector: 10,000 connections fit under the fd limit of 20,000.
    Connections are opened `batch` at a time so as not to overflow the
    server's listen queue (Jetty's holds 50: beyond it, SYN retries make
    2,000 connections take 11 s instead of 1)."""
    request = ("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, host)).encode()
    sel = selectors.DefaultSelector()
    held, failed = [], 0
    deadline = time.monotonic() + timeout
    try:
        while len(held) + failed < count and time.monotonic() < deadline:
            pending = {}
            for _ in range(min(batch, count - len(held) - failed)):
                s = socket.socket()
                s.setblocking(False)
                s.connect_ex((host, port))
                pending[s] = b""
                sel.register(s, selectors.EVENT_WRITE)
            while pending and time.monotonic() < deadline:
                for key, events in sel.select(1):
                    s, ok = key.fileobj, True
                    try:
                        if events & selectors.EVENT_WRITE:   # connected
                            if s.getsockopt(socket.SOL_SOCKET,
                                            socket.SO_ERROR):
                                raise OSError("connect failed")
                            s.send(request)
                            sel.modify(s, selectors.EVENT_READ)
                            continue
                        data = s.recv(65536)
                        if not data:
                            raise OSError("closed by the server")
                        pending[s] += data
                        if not response_complete(pending[s]):
                            continue
                    except OSError:
                        ok = False
                    sel.unregister(s)
                    del pending[s]
                    if ok:
                        held.append(s)
                    else:
                        failed += 1
                        s.close()
            for s in pending:        # out of time
                sel.unregister(s)
                s.close()
                failed += 1
    except BaseException:
        close_all(held)
        raise
    finally:
        sel.close()
    return held, failed


def close_all(socks):
    for s in socks:
        s.close()


# --- resident memory --------------------------------------------------------

def parse_proc_status(text):
    """/proc/PID/status -> {field: kB} for its memory fields (VmRSS, ...)."""
    out = {}
    for m in re.finditer(r"^(\w+):\s+(\d+) kB$", text, re.M):
        out[m.group(1)] = int(m.group(2))
    return out


def rss_kb(pid):
    """The process's VmRSS in kB, 0 if it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            return parse_proc_status(f.read()).get("VmRSS", 0)
    except OSError:
        return 0


# --- CPU time and allocation ------------------------------------------------

def parse_proc_stat_cpu(text):
    """/proc/PID/stat -> user + system CPU time in clock ticks."""
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


def cpu_seconds(pids):
    """The processes' user and system CPU time, in seconds (gone: 0)."""
    ticks = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                ticks += parse_proc_stat_cpu(f.read())
        except (OSError, ValueError):
            pass
    return ticks / os.sysconf("SC_CLK_TCK")


_SIZE = {"B": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}


def parse_thread_allocated(text):
    """`jcmd PID Thread.print -e` -> the bytes its live threads allocated,
    summed (ThreadMXBean's measure, which HotSpot prints per thread, in B,
    K, M or G: rounded to 1 MB a thread above 100 MB)."""
    return sum(int(n) * _SIZE[u] for n, u in
               re.findall(r" allocated=(\d+)([BKMG]) ", text))


def jvm_allocated(pid, jcmd):
    """The bytes the threads of JVM `pid` allocated so far, through jcmd
    (the JVM must run with -XX:+StartAttachListener when it is an nginx
    worker: jcmd would otherwise send SIGQUIT, and the worker quits); None
    if jcmd failed."""
    try:
        r = subprocess.run([jcmd, str(pid), "Thread.print", "-e"],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0 or " allocated=" not in r.stdout:
        return None
    return parse_thread_allocated(r.stdout)
