"""Everything the JVM writes lands in nginx's error log as ordinary entries
(time, [level], pid) naming the logger: System.out and System.err line by
line, java.util.logging, SLF4J 2 (the runtime's provider) and
clojure.tools.logging through it; levels the error log hides are never
formatted; lines from many threads stay whole; a USR1 reopen is followed."""

import glob
import os
import re
import signal
import urllib.parse

import pytest

from harness import BUILD, PROBLEM, Nginx, ring_classpath, wait_for

LOCATIONS = """
        location /log { jvm_content testapp.logs/handler; }
"""

ENTRY = re.compile(r"^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d) \[(\w+)\] (\d+)#(\d+): "
                   r"jvm: ([\w.$-]+): (.*)$")


def classpath():
    """The test apps, and slf4j-api and tools.logging as an app brings them."""
    jars = sorted(glob.glob(str(BUILD / "test-lib" / "*.jar")))
    assert len(jars) == 2, "make all fetches build/test-lib"
    return ring_classpath() + jars


@pytest.fixture(scope="module")
def ng(mode):
    with Nginx(LOCATIONS, classpath=classpath(), mode=mode) as n:
        yield n


def get(n, **params):
    r = n.get("/log?" + urllib.parse.urlencode(params))
    assert r.status == 200, r.text
    return r.text


def entry(n, marker, since):
    """The parsed entry holding marker: (time, level, pid, logger, message)."""
    lines = n.wait_log(re.escape(marker), since)
    assert lines, "no entry with %r in:\n%s" % (marker, n.log_text(since))
    m = ENTRY.match(lines[0])
    assert m, "not an nginx error log entry: %r" % lines[0]
    return m.group(1), m.group(2), int(m.group(3)), m.group(5), m.group(6)


def test_system_out_and_err_are_entries_line_by_line(ng):
    since = ng.log_size()
    get(ng, op="out", msg="out-marker")
    get(ng, op="err", msg="err-marker")
    _, level, pid, logger, msg = entry(ng, "out-marker", since)
    assert (level, logger, msg) == ("notice", "stdout", "out-marker")
    assert pid in ng.worker_pids()
    # print then println: one line, one entry
    _, level, pid, logger, msg = entry(ng, "err-marker", since)
    assert (level, logger) == ("warn", "stderr")
    assert msg == "err-marker-part1 err-marker-part2"


@pytest.mark.parametrize("jul,nginx", [("SEVERE", "error"), ("WARNING", "warn"),
                                       ("INFO", "info")])
def test_java_util_logging_levels(ng, jul, nginx):
    since = ng.log_size()
    marker = "jul-%s-marker" % jul
    get(ng, op="jul", level=jul, msg=marker)
    _, level, pid, logger, msg = entry(ng, marker, since)
    assert (level, logger, msg) == (nginx, "testapp.jul", marker + " jul-arg")


# The [error] entries above are the point of these tests.
pytestmark = pytest.mark.log_allows(r"(jul|slf4j)-(SEVERE|error)-marker",
                                    r"testapp\.jul: jul-throw-marker")


def test_jul_fine_is_hidden_at_info(ng):
    since = ng.log_size()
    get(ng, op="jul", level="FINE", msg="jul-fine-marker")
    get(ng, op="out", msg="after-fine-marker")
    assert entry(ng, "after-fine-marker", since)
    assert "jul-fine-marker" not in ng.log_text(since)


def test_a_throwable_follows_its_message(ng):
    since = ng.log_size()
    get(ng, op="jul-throw", msg="jul-throw-marker")
    _, level, _, logger, msg = entry(ng, "jul-throw-marker", since)
    assert level == "error" and logger == "testapp.jul"
    assert msg.startswith("jul-throw-marker: ")
    text = ng.log_text(since)
    tail = text[text.index("jul-throw-marker"):]
    # as the C module logs a handler's failure: what was thrown, then where
    assert tail.splitlines()[0] == \
        "jul-throw-marker: java.lang.IllegalStateException: jul-cause"
    assert "\tat testapp.logs$handler" in tail


@pytest.mark.parametrize("slf,nginx", [("error", "error"), ("warn", "warn"),
                                       ("info", "info")])
def test_slf4j_through_the_runtime_provider(ng, slf, nginx):
    assert get(ng, op="slf4j-provider") == "nginx.jvm.slf4j.NginxLoggerFactory"
    since = ng.log_size()
    marker = "slf4j-%s-marker" % slf
    get(ng, op="slf4j", level=slf, msg=marker, logger="com.example.Svc")
    _, level, _, logger, msg = entry(ng, marker, since)
    assert (level, logger) == (nginx, "com.example.Svc")
    assert msg.startswith(marker)


def test_clojure_tools_logging_goes_through_slf4j(ng):
    since = ng.log_size()
    assert get(ng, op="tools", level="warn", msg="tools-marker") == "org.slf4j"
    _, level, _, logger, msg = entry(ng, "tools-marker", since)
    assert (level, logger, msg) == ("warn", "testapp.logs", "tools-marker")


def test_many_threads_lines_stay_whole(ng):
    since = ng.log_size()
    threads, lines = 8, 60
    get(ng, op="flood", msg="flood-marker", threads=threads, lines=lines)
    whole = re.compile(r"flood-marker t(\d+) i(\d+) x{300} end$")
    seen = set()
    for line in ng.log_text(since).splitlines():
        if "flood-marker" not in line:
            continue
        m = ENTRY.match(line)
        assert m, "a mixed line: %r" % line[:200]
        w = whole.search(m.group(6))
        assert w, "a cut line: %r" % line[:200]
        seen.add((int(w.group(1)), int(w.group(2))))
    assert len(seen) == threads * lines


def test_reopen_follows_the_new_file(ng):
    since = ng.log_size()
    get(ng, op="out", msg="before-reopen-marker")
    assert entry(ng, "before-reopen-marker", since)
    os.rename(ng.log, ng.log + ".old")
    try:
        os.kill(ng.master_pid, signal.SIGUSR1)
        assert wait_for(lambda: os.path.exists(ng.log), 60)
        # the worker reopens after the master: until then Java's entries
        # still go to the old file
        assert wait_for(lambda: get(ng, op="out", msg="after-reopen-marker")
                        and "after-reopen-marker" in ng.log_text(), 60)
        _, level, _, logger, _ = entry(ng, "after-reopen-marker", 0)
        assert (level, logger) == ("notice", "stdout")
        # nginx's own entry and Java's are in the new file, in order
        text = ng.log_text()
        assert re.search(r"\[notice\] \d+#\d+: jvm: stdout: after-reopen", text)
    finally:
        os.remove(ng.log + ".old")


def test_levels_below_the_error_log_are_not_formatted(mode):
    n = Nginx(LOCATIONS, classpath=classpath(), mode=mode)
    with open(n.conf) as f:
        text = f.read()
    with open(n.conf, "w") as f:
        f.write(text.replace("error.log info;", "error.log warn;"))
    with n:
        since = n.log_size()
        # jul INFO, slf4j info and debug, tools.logging debug: none is wanted
        assert get(n, op="lazy", level="INFO") == "0"
        assert get(n, op="lazy", level="WARNING") == "1"
        get(n, op="slf4j", level="info", msg="hidden-info-marker")
        get(n, op="out", msg="hidden-out-marker")
        get(n, op="err", msg="shown-err-marker")
        assert entry(n, "shown-err-marker", since)
        text = n.log_text(since)
        assert "hidden-info-marker" not in text
        assert "hidden-out-marker" not in text
        assert "jul counted" in text


def test_error_log_to_stderr(mode):
    """error_log stderr (as under systemd): Java's entries go to nginx's
    standard error, formatted the same."""
    n = Nginx(LOCATIONS, classpath=classpath(), mode=mode)
    with open(n.conf) as f:
        text = f.read()
    with open(n.conf, "w") as f:
        f.write(re.sub(r"error_log \S+ info;", "error_log stderr info;", text))
    with n:
        get(n, op="out", msg="to-stderr-marker")
        get(n, op="jul", level="WARNING", msg="jul-to-stderr-marker")

        def found():
            lines = [l for l in n.stderr_text().splitlines()
                     if "to-stderr-marker" in l]
            return len(lines) == 2 and lines
        lines = wait_for(found, 60)
        assert lines, n.stderr_text()[-2000:]
        assert ENTRY.match(lines[0]).group(2, 5) == ("notice", "stdout")
        assert ENTRY.match(lines[1]).group(2, 5) == ("warn", "testapp.jul")
        assert "to-stderr-marker" not in n.log_text()
        assert not PROBLEM.search(n.stderr_text())


def test_a_reload_sets_the_new_level(mode):
    with Nginx(LOCATIONS, classpath=classpath(), mode=mode) as n:
        since = n.log_size()
        get(n, op="out", msg="shown-before-reload-marker")
        assert entry(n, "shown-before-reload-marker", since)
        with open(n.conf) as f:
            text = f.read()
        with open(n.conf, "w") as f:
            f.write(text.replace("error.log info;", "error.log warn;"))
        old = n.worker_pids()
        assert n.control("reload").returncode == 0
        assert n.wait_ready(exclude=old), n.log_text()[-3000:]
        assert wait_for(lambda: not any(p in n.worker_pids() for p in old), 30)
        since = n.log_size()
        get(n, op="out", msg="hidden-after-reload-marker")
        get(n, op="err", msg="shown-after-reload-marker")
        assert entry(n, "shown-after-reload-marker", since)
        assert "hidden-after-reload-marker" not in n.log_text(since)
