"""The docs' tables held to the code they describe (no nginx needed).

- docs/directives.md has one section per directive of the module's command
  table (ngx_http_jvm_commands), and no other, each with the contexts the
  table allows, and a row of its Variables table per variable of the
  module's own (ngx_http_jvm_variables);
- docs/internals.md's table of entry points names every Java method the C
  module calls (ngx_http_jvm_methods) and every native it registers for
  nginx.jvm.Natives, with the parameter types of their JNI signatures, and
  its response table every body kind of wire.h;
- every bench/results file a doc cites exists;
- README's layout names every C file of src/c.

Each reads the C source as text: a row removed from a doc, or a directive,
method or file added to the code without its row, fails here.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "c"
DOCS = ROOT / "docs"

# NGX_*_CONF flags of a command, as directives.md's "Context:" line says them
CONTEXTS = [("NGX_HTTP_MAIN_CONF", "http"), ("NGX_HTTP_SRV_CONF", "server"),
            ("NGX_HTTP_SIF_CONF", "if in server"),
            ("NGX_HTTP_LOC_CONF", "location"),
            ("NGX_HTTP_LIF_CONF", "if in location")]

JNI_TYPES = {"I": "int", "J": "long", "Z": "boolean", "V": "void",
             "B": "byte", "S": "short", "C": "char", "F": "float",
             "D": "double"}


def commands():
    """{name: [contexts]} of ngx_http_jvm_commands in module.c."""
    text = (SRC / "ngx_http_jvm_module.c").read_text()
    table = re.search(r"ngx_http_jvm_commands\[\] = \{(.*?)\n\s*ngx_null_command",
                      text, re.S).group(1)
    found = {}
    for m in re.finditer(r'\{ ngx_string\("(\w+)"\),\s*([A-Z_|0-9\s]+),', table):
        flags = [f.strip() for f in m.group(2).split("|")]
        found[m.group(1)] = [ctx for flag, ctx in CONTEXTS if flag in flags]
    return found


def documented_directives():
    """{name: [contexts]} of directives.md's sections."""
    text = (DOCS / "directives.md").read_text()
    found = {}
    for m in re.finditer(r"^## (\w+)\n(.*?)(?=^## |\Z)", text, re.S | re.M):
        name, body = m.groups()
        syntax = re.search(r"^\s+Syntax:\s+(\w+)", body, re.M)
        context = re.search(r"^\s+Context:\s+(.*)$", body, re.M)
        assert syntax and context, "directives.md: %s lacks Syntax or Context" % name
        assert syntax.group(1) == name, \
            "directives.md: section %s shows the syntax of %s" % (name, syntax.group(1))
        found[name] = [c.strip() for c in context.group(1).split(",")]
    return found


def java_types(signature):
    """The parameter types and the return type of a JNI signature."""
    def one(s, i):
        dims = 0
        while s[i] == "[":
            dims, i = dims + 1, i + 1
        if s[i] == "L":
            end = s.index(";", i)
            name, i = s[i + 1:end].rsplit("/", 1)[-1], end + 1
        else:
            name, i = JNI_TYPES[s[i]], i + 1
        return name + "[]" * dims, i

    params, i = [], 1
    while signature[i] != ")":
        t, i = one(signature, i)
        params.append(t)
    ret, _ = one(signature, i + 1)
    return params, ret


def jni_tables():
    """{name: (params, return)} of the Worker methods C calls and the
    natives of nginx.jvm.Natives."""
    found = {}
    vm = (SRC / "ngx_http_jvm_vm.c").read_text()
    table = re.search(r"ngx_http_jvm_methods\[\] = \{(.*?)\n\};", vm, re.S).group(1)
    for m in re.finditer(r'&\w+,\s*"(\w+)",\s*"([^"]+)"', table):
        found[m.group(1)] = java_types(m.group(2))
    natives = (SRC / "ngx_http_jvm_natives.c").read_text()
    table = re.search(r"ngx_http_jvm_natives\[\] = \{(.*?)\n\};", natives, re.S).group(1)
    for m in re.finditer(r'\{\s*"(\w+)",\s*"([^"]+)"', table):
        found[m.group(1)] = java_types(m.group(2))
    return found


def internals_section(title):
    text = (DOCS / "internals.md").read_text()
    m = re.search(r"^### %s\n(.*?)(?=^##)" % re.escape(title), text, re.S | re.M)
    assert m, "internals.md has no section %r" % title
    return m.group(1)


def documented_entry_points():
    """{name: (params, return)} from internals.md's entry-point table: each
    `name(type a, type b) ret` in backquotes at a row's start."""
    found = {}
    for row in internals_section("Entry points and what they answer").splitlines():
        if not row.startswith("| `"):
            continue
        first = row.split("|")[1]
        for m in re.finditer(r"`(\w+)\(([^)]*)\)\s*([\w\[\]]*)`", first):
            name, params, ret = m.groups()
            types = [p.strip().split()[0] for p in params.split(",") if p.strip()]
            found[name] = (types, ret or "void")
    return found


def test_every_directive_is_documented_with_its_contexts():
    code, doc = commands(), documented_directives()
    assert len(code) > 30, "the command table was not read"
    assert sorted(set(code) - set(doc)) == [], "directives.md lacks these"
    assert sorted(set(doc) - set(code)) == [], "directives.md names what the module lacks"
    wrong = {n: (doc[n], code[n]) for n in code if doc[n] != code[n]}
    assert wrong == {}, "Context: lines that differ from the command table"


def test_every_variable_is_documented():
    table = re.search(r"ngx_http_jvm_variables\[\] = \{(.*?)ngx_http_null_variable",
                      (SRC / "ngx_http_jvm_variable.c").read_text(), re.S).group(1)
    code = set(re.findall(r'ngx_string\("(\w+)"\)', table))
    text = (DOCS / "directives.md").read_text()
    section = re.search(r"^# Variables\n(.*)", text, re.S | re.M)
    assert section, "directives.md has no # Variables section"
    doc = set(re.findall(r"^\| `\$(\w+)` \|", section.group(1), re.M))
    assert code, "the variables' table was not read"
    assert sorted(code - doc) == [], "directives.md's Variables lacks these"
    assert sorted(doc - code) == [], "directives.md names variables the module lacks"


def test_internals_lists_every_entry_point_with_its_signature():
    code, doc = jni_tables(), documented_entry_points()
    assert len(code) > 30, "the JNI tables were not read"
    assert sorted(set(code) - set(doc)) == [], "internals.md lacks rows for these"
    assert sorted(set(doc) - set(code)) == [], "internals.md names what C lacks"
    wrong = {n: (doc[n], code[n]) for n in code if doc[n] != code[n]}
    assert wrong == {}, "parameter or return types that differ (doc, JNI)"


def test_internals_describes_every_body_kind():
    kinds = re.findall(r"#define NGX_HTTP_JVM_BODY_(\w+)\s+(\d+)",
                       (SRC / "ngx_http_jvm_wire.h").read_text())
    assert len(kinds) >= 9
    rows = {}
    for row in internals_section(
            "Response (`nginx.jvm.ResponseEncoder` writes, C reads)").splitlines():
        cells = row.split("|")
        if len(cells) > 2:
            rows[cells[1].strip()] = cells[2]
    for name, value in kinds:
        assert "%s %s" % (value, name) in rows["`int kind`"], \
            "the kind row lacks %s %s" % (value, name)
        assert re.search(r"\b%s\b" % name, rows["body, by kind"]), \
            "the body-by-kind row lacks %s" % name


def test_every_cited_result_file_exists():
    cited = set()
    for doc in list(DOCS.glob("*.md")) + [ROOT / "README.md"]:
        for m in re.finditer(r"bench/results/([\w.-]+\.(?:md|json|png))", doc.read_text()):
            cited.add((doc.name, m.group(1)))
    assert len(cited) > 10, "no citations found"
    missing = sorted(c for c in cited if not (ROOT / "bench" / "results" / c[1]).exists())
    assert missing == [], "cited result files that do not exist"


def test_readme_layout_names_every_c_file():
    text = (ROOT / "README.md").read_text()
    layout = re.search(r"^## Layout\n(.*?)(?=^## )", text, re.S | re.M).group(1)
    files = sorted(p.name for p in SRC.glob("ngx_http_jvm_*.[ch]"))
    short = {f: f[len("ngx_http_jvm_"):] for f in files}
    missing = [f for f in files
               if not re.search(r"(?<![\w.])%s\b" % re.escape(short[f]), layout)]
    assert missing == [], "README's layout does not name these files"
