"""`nginx -t` rejects bad jvm_* directives, naming the directive."""

from pathlib import Path

import pytest

from harness import Nginx, ring_classpath

OK_LOCATION = "        location / { jvm_content testapp.ring/echo; }\n"


def nginx_t(locations=OK_LOCATION, http="", classpath="ring"):
    n = Nginx(locations, http=http, classpath=classpath)
    try:
        return n, n.test_config()
    finally:
        n.cleanup()


def test_good_config():
    _, t = nginx_t()
    assert t.returncode == 0, t.stderr
    assert "syntax is ok" in t.stderr


BAD = {
    "jvm_path missing file": (
        dict(http="    jvm_path /nonexistent/lib/server/libjvm.so;"),
        "jvm_path", "/nonexistent/lib/server/libjvm.so"),
    "jvm_path a directory": (
        dict(http="    jvm_path /usr/lib/jvm;"), "jvm_path", "not a file"),
    "jvm_classpath missing entry": (
        dict(classpath=ring_classpath() + ["/nonexistent/x.jar"]),
        "jvm_classpath", "/nonexistent/x.jar"),
    "jvm_classpath missing dir/*": (
        dict(classpath=ring_classpath() + ["/nonexistent/dir/*"]),
        "jvm_classpath", "/nonexistent/dir"),
    "jvm_classpath joined with colons": (
        dict(classpath=[":".join(ring_classpath())]),
        "jvm_classpath", "separate arguments"),
    "jvm_options without dash": (
        dict(http="    jvm_options Xmx1g;"), "jvm_options", "Xmx1g"),
    "jvm_options class path": (
        dict(http="    jvm_options -Djava.class.path=/tmp;"), "jvm_options",
        "jvm_classpath"),
    "jvm_content a/b/c": (
        dict(locations="location / { jvm_content a/b/c; }"),
        "jvm_content", "a/b/c"),
    "jvm_content with a space": (
        dict(locations='location / { jvm_content "foo bar"; }'),
        "jvm_content", "foo bar"),
    "jvm_content /x": (
        dict(locations="location / { jvm_content /x; }"), "jvm_content",
        "/x"),
    "jvm_content two arguments": (
        dict(locations="location / { jvm_content testapp.ring/echo "
                       "testapp.ring/pid; }"),
        "jvm_content", "invalid number of arguments"),
    "jvm_content twice": (
        dict(locations="location / { jvm_content testapp.ring/echo; "
                       "jvm_content testapp.ring/pid; }"),
        "jvm_content", "duplicate"),
    "jvm_content in http": (
        dict(http="    jvm_content testapp.ring/echo;"),
        "jvm_content", "not allowed here"),
    "jvm_classpath in a location": (
        dict(locations="location / { jvm_classpath /tmp; }"),
        "jvm_classpath", "not allowed here"),
    "jvm_init twice": (
        dict(http="    jvm_init testapp.init/init;\n"
                  "    jvm_init testapp.init/init;"),
        "jvm_init", "duplicate"),
    "jvm_init bad name": (
        dict(http="    jvm_init /init;"), "jvm_init", "/init"),
    "jvm_access bad name": (
        dict(locations="location / { jvm_access a/b/c; }"),
        "jvm_access", "a/b/c"),
    "jvm_rewrite twice": (
        dict(locations="location / { jvm_rewrite testapp.ring/echo; "
                       "jvm_rewrite testapp.ring/pid; }"),
        "jvm_rewrite", "duplicate"),
    "jvm_header_filter two arguments": (
        dict(locations="location / { jvm_header_filter a.B c.D; }"),
        "jvm_header_filter", "invalid number of arguments"),
    "jvm_log bad name": (
        dict(locations="location / { jvm_log .x; }"), "jvm_log", ".x"),
    "jvm_set without $": (
        dict(http="    jvm_set computed testapp.phases/computed;"),
        "jvm_set", "invalid variable name"),
    "jvm_set one variable, two handlers": (
        dict(http="    jvm_set $v testapp.phases/computed;\n"
                  "    jvm_set $v testapp.Phases$Var;"),
        "jvm_set", "already computed by another handler"),
    "jvm_content without jvm_classpath": (
        dict(classpath=None), "jvm_classpath", "required"),
}


@pytest.mark.log_allows(r"\[emerg\]")
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_config(case):
    kwargs, directive, detail = BAD[case]
    n, t = nginx_t(**kwargs)
    assert t.returncode != 0, t.stderr
    assert "[emerg]" in t.stderr
    assert directive in t.stderr, t.stderr
    assert detail in t.stderr, t.stderr
    # the message points at the configuration file
    assert n.conf + ":" in t.stderr, t.stderr


def gc_threads(pid):
    """The names of the worker's threads a collector runs on: the serial
    collector has none (it collects on the VM thread); the parallel one
    and G1 have "GC Thread#N" workers from the start."""
    names = []
    for task in Path("/proc/%d/task" % pid).iterdir():
        try:
            names.append((task / "comm").read_text().strip())
        except OSError:             # a thread that ended meanwhile
            pass
    return [name for name in names if name.startswith(("GC Thread", "G1 "))]


@pytest.mark.parametrize("options, collector", [
    ("", False), ("-Xmx64m", False), ("-XX:+UseParallelGC", True),
    ("-XX:+UseG1GC", True)], ids=["none", "heap", "parallel", "G1"])
def test_collector_default(options, collector):
    """The serial collector unless jvm_options names one (-XX:+Use*GC): a
    second collector would stop the JVM ("Conflicting collector
    combinations"), and the worker would not serve."""
    http = "    jvm_options %s;" % options if options else ""
    with Nginx(OK_LOCATION, http=http) as n:
        assert n.get("/").status == 200
        pid = n.worker_pids()[0]
        assert bool(gc_threads(pid)) == collector, gc_threads(pid)


ARGS_LOCATION = "        location / { jvm_content testapp.ring/jvm-args; }\n"


def jvm_args(**kw):
    with Nginx(ARGS_LOCATION, **kw) as n:
        r = n.get("/")
        assert r.status == 200, r.body
        return r.body.decode().split("\n")


def test_vm_defaults_reach_the_jvm():
    """The module's memory defaults (docs/directives.md, jvm_options) are the
    worker JVM's own arguments; one that jvm_options sets replaces them."""
    args = jvm_args(workers=2)
    for default in ("-XX:+UseSerialGC", "-Xms16m", "-XX:MaxRAMPercentage=12"):
        assert default in args, args
    args = jvm_args(http="    jvm_options -Xms48m -XX:MaxRAMPercentage=5;")
    assert "-Xms48m" in args and "-Xms16m" not in args, args
    assert [a for a in args if "MaxRAMPercentage" in a] \
        == ["-XX:MaxRAMPercentage=5"], args
