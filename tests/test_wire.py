"""The wire protocol's constants agree on both sides: every constant of
nginx.jvm.Wire is NGX_HTTP_JVM_<name> in ngx_http_jvm_wire.h with the same
value, every one of nginx.jvm.Shm is NGX_HTTP_JVM_DICT_<name>, and the
header has nothing Java lacks but what it says is C's alone.  A value
changed on one side only would otherwise show up as a request answered
wrongly, far from the change.  And no C file but ngx_http_jvm_wire.h and
ngx_http_jvm_wire.c writes or reads the layouts by hand."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JAVA = ROOT / "runtime" / "src" / "main" / "java" / "nginx" / "jvm"
HEADER = ROOT / "src" / "c" / "ngx_http_jvm_wire.h"

# in the header, never sent to Java (see the comment there)
C_ONLY = {"NGX_HTTP_JVM_DICT_AGAIN"}


def java_constants(path):
    """The `static final int` constants (not private) of a class, by name."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", path.read_text(), flags=re.S)
    out = {}
    for decl in re.finditer(r"(?<!private )static final int ([^;]+);", text):
        for name, value in re.findall(r"(\w+)\s*=\s*(-?\d+)", decl.group(1)):
            out[name] = int(value)
    return out


def c_constants():
    out = {}
    for name, value in re.findall(r"^#define (NGX_HTTP_JVM_\w+)\s+(-?\d+)\b",
                                  HEADER.read_text(), flags=re.M):
        out[name] = int(value)
    return out


def twins():
    """The C name each Java constant must have, with its value."""
    want = {}
    for name, value in java_constants(JAVA / "Wire.java").items():
        want["NGX_HTTP_JVM_" + name] = value
    for name, value in java_constants(JAVA / "Shm.java").items():
        want["NGX_HTTP_JVM_DICT_" + name] = value
    return want


def test_the_parsers_see_the_constants():
    java = twins()
    assert java["NGX_HTTP_JVM_PROTOCOL"] > 0
    assert java["NGX_HTTP_JVM_NEXT_EMPTY"] == -4
    assert java["NGX_HTTP_JVM_DICT_KEY_MAX"] == 65535
    assert "NGX_HTTP_JVM_BULK" not in java, "private constants are Java's own"
    assert len(c_constants()) >= len(java)


def test_every_java_constant_has_its_c_twin_with_the_same_value():
    c = c_constants()
    missing = sorted(n for n in twins() if n not in c)
    assert not missing, "in Java, not in ngx_http_jvm_wire.h: %s" % missing
    differ = {n: (v, c[n]) for n, v in twins().items() if c[n] != v}
    assert not differ, "Java and C values differ: %s" % differ


def test_the_header_has_nothing_java_lacks():
    extra = sorted(set(c_constants()) - set(twins()) - C_ONLY)
    assert not extra, "in ngx_http_jvm_wire.h, not in Wire or Shm: %s" % extra


def test_no_other_c_file_defines_a_wire_constant():
    names = set(twins()) | C_ONLY
    for f in sorted((ROOT / "src" / "c").glob("*.[ch]")):
        if f == HEADER:
            continue
        for name in re.findall(r"^#define (NGX_HTTP_JVM_\w+)", f.read_text(),
                               flags=re.M):
            assert name not in names, "%s defines %s again" % (f.name, name)


def test_internals_names_every_entry_point_and_native():
    """docs/internals.md has a line for every method C calls in Java and
    every native Java calls in C, as `name(`."""
    vm = (ROOT / "src" / "c" / "ngx_http_jvm_vm.c").read_text()
    table = vm[vm.index("ngx_http_jvm_methods[] = {"):]
    table = table[:table.index("};")]
    calls = re.findall(r'_mid, "(\w+)"', table)
    # the natives of Natives and Shm, registered by ngx_http_jvm_natives.c
    up = (ROOT / "src" / "c" / "ngx_http_jvm_natives.c").read_text()
    natives = re.findall(r'^\s*\{ "(\w+)", "\(', up, flags=re.M)
    assert "handle" in calls and "wsTake" in calls
    assert "wake" in natives and "topicStats" in natives
    doc = (ROOT / "docs" / "internals.md").read_text()
    missing = sorted(n for n in calls + natives if "`%s(" % n not in doc
                     and "`%s`" % n not in doc)
    assert not missing, "docs/internals.md does not name: %s" % missing


# Hand-written or hand-read ints of the layouts: what the one writer
# (ngx_http_jvm_put_int/_long/_str) and the one reader (ngx_http_jvm_get_*)
# in ngx_http_jvm_wire.h are for.  Matched in C with comments dropped and
# white space folded, so a call split over lines is one.
HAND_WIRE = [
    # an int copied in or out by memcpy: p = ngx_cpymem(p, &n, 4 bytes)
    r"ngx_(?:cpymem|memcpy)\( ?(?:[^;,]+, ?&\w+|&\w+ ?, ?[^;,]+) ?,"
    r" ?(?:4|sizeof\( ?u?int32_t ?\)) ?\)",
    # a long read where a reader's position is
    r"ngx_memcpy\( ?&\w+ ?, ?\w+(?:\.|->)(?:pos|last)\b",
    # a cast of the buffer to an int: *(uint32_t *) p
    r"\* ?\( ?u?int(?:32|64)_t ?\* ?\)",
    # raw offsets into the buffers Java shares
    r"\b(?:resp|req)_addr ?\+ ?(?:\d|sizeof)",
    # a field skipped by hand
    r"\b(?:p|pos) ?\+= ?(?:4|8|sizeof\( ?u?int(?:32|64)_t ?\))",
]


def hand_wire(text):
    """The statements of C text that write or read the layouts by hand."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"\s+", " ", text)
    return [m.group(0) for p in HAND_WIRE for m in re.finditer(p, text)]


def test_the_guard_sees_what_the_one_writer_and_reader_replaced():
    for removed in [
            "p = ngx_cpymem(p, &n, sizeof(uint32_t));",
            "ngx_memcpy(&n, sp->pos,\n            sizeof(uint32_t));",
            "ngx_memcpy(&length, rd.pos, sizeof(int64_t));",
            "ngx_memcpy(&n, p, 4);",
            "n = *(uint32_t *) p;",
            "ngx_memcpy(&kind, ngx_http_jvm_vm.resp_addr + 4, 4);",
            "count = p;\n    p += 4;",
            "rd.pos += sizeof(int64_t);"]:
        assert hand_wire(removed), removed
    assert not hand_wire("p = ngx_http_jvm_put_int(p, n); /* p += 4; */")
    assert not hand_wire("if (*(volatile uint64_t *) &sh->head == off) {")


def test_only_the_wire_files_write_or_read_the_layouts():
    """Every other C file goes through ngx_http_jvm_wire.h's writer and
    reader (and wire.c's header-list encoder)."""
    found = {}
    for f in sorted((ROOT / "src" / "c").glob("*.[ch]")):
        if f.name in ("ngx_http_jvm_wire.h", "ngx_http_jvm_wire.c"):
            continue
        hits = hand_wire(f.read_text())
        if hits:
            found[f.name] = hits
    assert not found, ("the layouts written or read by hand, not through "
                       "ngx_http_jvm_wire.h: %s" % found)
