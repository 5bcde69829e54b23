#!/usr/bin/env python3
"""h2spec (HTTP/2 conformance, RFC 7540 and RFC 7541: 146 cases in its
generic, http2 and hpack sections) against nginx-jvm's JVM handlers
through nginx's HTTP/2, and against nginx's own `return 200` on the same
listener, to tell nginx's behaviour from ours.

    bench/h2spec.py [--modes loop,pool] [--out FILE] [--timeout 2]

One nginx per mode, Java handlers (tests/apps/java/testapp/H2.java), one
worker; two listeners: HTTP/2 over TLS (ALPN h2, a self-signed
certificate made here) and h2c (`listen ... http2` without ssl: prior
knowledge, which nginx 1.22 takes). The targets, each a location of both:

  /stream   testapp.H2$Stream: reads the request body, streams 8 pieces
            of 1 KB (an Iterable, each flushed)
  /headers  testapp.H2$BigHeaders: 6 response header fields of 4,000
            bytes, a header block over one 16 KB frame
  /plain    nginx's `return 200 "plain\\n"`: no JVM, the body unread
  /proxied  nginx's proxy_pass to /plain: nginx reads the request body
            (as it does for a JVM handler), no JVM

Trailers are not in the runs: the module sends none (a JVM handler
cannot set them). h2spec (scripts/h2spec.sh builds it into build/) runs
once per mode, listener and target, and writes JUnit XML; the report
counts the cases passed, failed and skipped per section and lists each
failure with h2spec's words and the targets that failed it: one that
/plain or /proxied failed too on the same listener is nginx's own
behaviour. The exit status is 1 when a JVM target fails a case that
both nginx targets pass, or an error-log line names the module ("jvm").
h2spec's hostile requests make nginx log some errors of its own (a body
over client_max_body_size, say): those are listed, not failed.
"""
import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

TOP = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TOP / "tests"))
from harness import Nginx, free_port, jdk21_libjvm  # noqa: E402

TARGETS = ("/stream", "/headers", "/plain", "/proxied")
NGINX_ONLY = ("/plain", "/proxied")
LOCATIONS = """
        location /stream { jvm_content testapp.H2$Stream; }
        location /headers { jvm_content testapp.H2$BigHeaders; }
        location /plain { return 200 "plain\\n"; }
        location /proxied { proxy_pass http://127.0.0.1:@PORT@/plain; }
"""
HTTP = """
    server {
        listen 127.0.0.1:@PORT2@ ssl http2;
        server_name localhost;
        ssl_certificate @PREFIX@/server.pem;
        ssl_certificate_key @PREFIX@/server.key;
@LOCATIONS@
    }
    server {
        listen 127.0.0.1:@H2C@ http2;
        server_name localhost;
@LOCATIONS@
    }
""".replace("@LOCATIONS@", LOCATIONS)
BAD_LOG = re.compile(r"\[(alert|crit|error|emerg)\]")


def h2spec_binary():
    return subprocess.run([str(TOP / "scripts" / "h2spec.sh")], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()


def certificate(d):
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "server.key",
         "-out", "server.pem", "-days", "2", "-subj", "/CN=localhost"],
        cwd=d, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def run_h2spec(h2spec, port, tls, path, timeout, *specs):
    """[(section, case id, title, failure message or None, skipped)] of
    the specs (sections such as "http2/6.9"; all when none)."""
    with tempfile.TemporaryDirectory(prefix="h2spec-") as d:
        report = os.path.join(d, "junit.xml")
        args = [h2spec, "-h", "127.0.0.1", "-p", str(port), "-P", path,
                "-o", str(timeout), "-j", report]
        if tls:
            args += ["-t", "-k"]
        args += list(specs)
        run = subprocess.run(args, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             timeout=1800)
        if not os.path.exists(report):
            raise SystemExit("h2spec wrote no report:\n" + run.stdout[-3000:])
        return parse(ET.parse(report).getroot())


def parse(root):
    cases = []
    for suite in root.iter("testsuite"):
        for case in suite.iter("testcase"):
            # package "http2/6.9.1": its section, then its number
            package = case.get("package") or suite.get("package") or "?"
            fail = case.find("error")
            if fail is None:
                fail = case.find("failure")
            message = None
            if fail is not None:
                # h2spec's lines: what it expected (one of), then what came
                lines = [x.strip() for x in (fail.text or "").splitlines()
                         if x.strip()] or ["?"]
                message = "expected %s; got %s" % (
                    " or ".join(lines[:-1]) or "?", lines[-1])
            cases.append((package.split("/")[0], package,
                          case.get("classname") or case.get("name") or "?",
                          message, case.find("skipped") is not None))
    return cases


def skipped_mode(mode):
    if mode == "virtual" and jdk21_libjvm() is None:
        return "no JDK 21 or newer"
    return None


def counts(cases):
    """{section: [passed, failed, skipped]}, and a total."""
    out = {}
    for section, _, _, message, skipped in cases:
        c = out.setdefault(section, [0, 0, 0])
        c[2 if skipped else 1 if message else 0] += 1
    out["all"] = [sum(c[i] for c in out.values()) for i in range(3)]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modes", default="loop,pool")
    ap.add_argument("--timeout", type=int, default=2,
                    help="h2spec's wait for each answer, seconds")
    ap.add_argument("--out", default=str(
        TOP / "bench" / "results"
        / ("%s-h2spec.md" % datetime.date.today().isoformat())))
    args = ap.parse_args()
    h2spec = h2spec_binary()
    rows, failures, bad_lines, failed = [], {}, [], False
    sections = ("generic", "http2", "hpack", "all")
    for mode in args.modes.split(","):
        why = skipped_mode(mode)
        if why:
            rows.append("| %s | skipped: %s |" % (mode, why))
            continue
        h2c = free_port()
        ng = Nginx(LOCATIONS, http=HTTP.replace("@H2C@", str(h2c)),
                   classpath="java", mode=mode)
        certificate(ng.prefix)
        with ng:
            for tls, port, listener in ((True, ng.port2, "TLS"),
                                        (False, h2c, "h2c")):
                runs = {}
                for path in TARGETS:
                    print("h2spec: %s, %s, %s ..." % (mode, listener, path),
                          flush=True)
                    runs[path] = run_h2spec(h2spec, port, tls, path,
                                            args.timeout)
                    c = counts(runs[path])
                    rows.append("| %s | %s | `%s` | %s |" % (
                        mode, listener, path, " | ".join(
                            "%d / %d / %d" % tuple(c.get(s, (0, 0, 0)))
                            for s in sections)))
                    print(rows[-1], flush=True)
                plain_failed = {(p, n) for t in NGINX_ONLY
                                for _, p, n, m, _ in runs[t] if m}
                for path in TARGETS:
                    for _, package, name, message, _ in runs[path]:
                        if not message:
                            continue
                        if path not in NGINX_ONLY and (package, name) \
                                not in plain_failed:
                            failed = True
                            where = "%s `%s` (JVM only)" % (listener, path)
                        else:
                            where = "%s `%s`" % (listener, path)
                        f = failures.setdefault(
                            (mode, package, name), [message, []])
                        f[1].append(where)
            with open(ng.log, errors="replace") as f:
                bad_lines += ["%s: `%s`" % (mode, line.rstrip())
                              for line in f if BAD_LOG.search(line)]
    failed |= any("jvm" in b for b in bad_lines)
    version = subprocess.run([h2spec, "--version"], stdout=subprocess.PIPE,
                             text=True).stdout.strip()
    text = [
        "# h2spec against nginx-jvm (%s)"
        % datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC"),
        "",
        "`make h2spec` (bench/h2spec.py): h2spec v2.2.1 (`%s`, built by "
        "scripts/h2spec.sh), default cases (not `--strict`), answer "
        "timeout %d s, against nginx %s with the module; one worker. "
        "Cells: passed / failed / skipped."
        % (version, args.timeout, nginx_version()),
        "",
        "| mode | listener | target | generic | http2 | hpack | all |",
        "|---|---|---|---:|---:|---:|---:|",
    ] + rows + [""]
    notes = ["- %s, %s: %s. %s. Failed on: %s." % (
        mode, package, name, message, ", ".join(where))
        for (mode, package, name), (message, where) in failures.items()]
    text += (["Failures, each case once per mode with the targets that "
              "failed it (\"JVM only\": both nginx targets on the same "
              "listener passed it):", ""] + notes) if notes else [
        "No case failed."]
    text += [""] + (["Error log:", ""] + ["- " + b for b in bad_lines[:30]]
                    if bad_lines else ["No [error], [crit], [alert] or "
                                       "[emerg] line in the error logs."])
    Path(args.out).write_text("\n".join(text) + "\n")
    print("h2spec: wrote %s%s" % (args.out, " (FAIL)" if failed else ""))
    return 1 if failed else 0


def nginx_version():
    from harness import NGINX
    out = subprocess.run([str(NGINX), "-v"], stderr=subprocess.PIPE,
                         text=True).stderr
    m = re.search(r"nginx/(\S+)", out)
    return m.group(1) if m else "?"


if __name__ == "__main__":
    sys.exit(main())
