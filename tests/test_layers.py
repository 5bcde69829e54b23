"""The C files call each other in layers, never in a circle, and stay small.

A static check of src/c (no nginx needed): each function with external
linkage is mapped to the file that defines it; a use of its name in another
file (a call, or a handler's address taken) is an edge from that file to
the defining one.  The file graph must have no cycle.  The one exception:
module.c's process hooks start the worker (the JVM, then the natives Java
calls up, then the tasks, ...) and stop it, so they may reach any file.

Also: no C file over MAX_FILE lines, no function over MAX_FUNCTION lines
(from the line with its name to its closing brace), and jni.h only where
the JVM is touched.

Run on another tree: NGINX_JVM_SRC=/path/to/src/c (and NGINX_JVM_JAR=
another nginx-jvm.jar for the Java check) python3 -m pytest ...
"""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = Path(os.environ.get("NGINX_JVM_SRC", ROOT / "src" / "c"))

MAX_FILE = 1500
MAX_FUNCTION = 140

# module.c's process hooks: the worker's start and exit, the master's
# start of a configuration.  They drive every layer in turn.
HOOKS = {"ngx_http_jvm_init_module", "ngx_http_jvm_init_process",
         "ngx_http_jvm_exit_process"}
HOOK_FILE = "ngx_http_jvm_module.c"

# the files that may include jni.h: the JVM (and the WebSocket's calls down
# into it), the natives, the master's child JVMs and the header they share
JNI_FILES = {"ngx_http_jvm_vm_create.c", "ngx_http_jvm_vm.c",
             "ngx_http_jvm_natives.c", "ngx_http_jvm_child.c",
             "ngx_http_jvm_jni.h"}


def strip(text):
    """The C text without comments, strings and character constants, with
    its lines kept (so that line numbers still hold)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r'/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                  blank, text, flags=re.S)


def functions(text):
    """(name, static, first line, last line) of each function defined in
    nginx's style: the name at the start of a line, the body's braces at
    the start of lines."""
    lines = strip(text).split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = re.match(r"([A-Za-z_]\w*)\(", lines[i])
        if m and i > 0 and lines[i - 1].strip():
            # the body: the first "{" at column 0 before a ";" ends a line
            j = i
            while j < len(lines) and not lines[j].startswith("{"):
                if lines[j].rstrip().endswith(";"):
                    break
                j += 1
            if j < len(lines) and lines[j].startswith("{"):
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                head = lines[i - 1]
                static = head.startswith("static") or (
                    i > 1 and lines[i - 2].startswith("static")
                    and not lines[i - 2].rstrip().endswith(";"))
                out.append((m.group(1), static, i + 1, k + 1))
                i = k
        i += 1
    return out


def sources():
    return {f.name: f.read_text() for f in sorted(SRC.glob("*.c"))}


def graph():
    """{file: {file it uses: [(function of the user, name used), ...]}}"""
    files = sources()
    defined = {}
    bodies = {}
    for name, text in files.items():
        fns = functions(text)
        bodies[name] = (strip(text).split("\n"), fns)
        for fn, static, _, _ in fns:
            if not static:
                defined[fn] = name
    edges = {name: {} for name in files}
    for name, (lines, fns) in bodies.items():
        for fn, _, first, last in fns:
            if name == HOOK_FILE and fn in HOOKS:
                continue
            body = "\n".join(lines[first - 1:last])
            for used in set(re.findall(r"\b(ngx_http_jvm_\w+)\b", body)):
                target = defined.get(used)
                if target and target != name:
                    edges[name].setdefault(target, []).append((fn, used))
        # tables and initialisers outside functions (commands, hooks)
        inside = set()
        for _, _, first, last in fns:
            inside.update(range(first - 1, last))
        rest = "\n".join(l for i, l in enumerate(lines) if i not in inside)
        for used in set(re.findall(r"\b(ngx_http_jvm_\w+)\s*[,}]", rest)):
            target = defined.get(used)
            if target and target != name:
                edges[name].setdefault(target, []).append(("(table)", used))
    return edges


def cycles(edges):
    """Every strongly connected component of more than one file."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def layers(edges):
    """The files from the top down: each only uses files after it."""
    left = dict((k, set(v)) for k, v in edges.items())
    order = []
    while left:
        top = sorted(f for f in left
                     if not any(f in uses for g, uses in left.items()
                                if g != f))
        if not top:
            break
        order.append(top)
        for f in top:
            del left[f]
    return order


def short(name):
    return name.replace("ngx_http_jvm_", "").replace(".c", "")


def test_the_parser_sees_the_files_and_functions():
    files = sources()
    assert "ngx_http_jvm_vm.c" in files and "ngx_http_jvm_module.c" in files
    names = {fn for text in files.values() for fn, _, _, _ in functions(text)}
    assert {"ngx_http_jvm_init_process", "ngx_http_jvm_vm_start",
            "ngx_http_jvm_content_handler"} <= names
    assert graph()[HOOK_FILE], "module.c uses other files"


def test_no_circle_among_the_c_files():
    edges = graph()
    found = cycles(edges)
    lines = []
    for comp in found:
        lines.append("cycle: " + " ".join(short(f) for f in comp))
        for f in comp:
            for g in sorted(edges[f]):
                if g in comp:
                    uses = sorted({u for _, u in edges[f][g]})
                    lines.append("  %s -> %s: %s"
                                 % (short(f), short(g), ", ".join(uses)))
    assert not found, "the C files call each other in a circle:\n" \
        + "\n".join(lines)


def test_the_layers_can_be_drawn():
    """Every C file has a place in the layer order (pytest -s prints it)."""
    edges = graph()
    order = layers(edges)
    for i, level in enumerate(order):
        print("%2d  %s" % (i, "  ".join(short(f) for f in level)))
    placed = [f for level in order for f in level]
    assert sorted(placed) == sorted(edges), \
        "files with no place in the layers: %s" \
        % sorted(set(edges) - set(placed))


def test_readme_draws_the_layers_as_they_are():
    """README.md's picture names every C file, each on a line above every
    file it calls (or on the same line only when neither calls the other)."""
    text = (ROOT / "README.md").read_text()
    picture = text[text.index("From the top down"):]
    picture = picture[picture.index("```") + 3:]
    picture = picture[:picture.index("```")]
    row = {}
    for i, line in enumerate(picture.strip("\n").split("\n")):
        for word in re.findall(r"\b(\w+)\.c\b", line):
            row.setdefault("ngx_http_jvm_%s.c" % word, i)
    edges = graph()
    missing = sorted(short(f) for f in edges if f not in row)
    assert not missing, "README.md's layers lack: %s" % missing
    wrong = ["%s -> %s" % (short(f), short(g))
             for f in edges for g in edges[f] if row[f] >= row[g]]
    assert not wrong, "README.md draws a callee above or beside its " \
        "caller: %s" % wrong


def test_no_c_file_is_too_long():
    long = {name: text.count("\n") for name, text in sources().items()
            if text.count("\n") > MAX_FILE}
    assert not long, "C files over %d lines: %s" % (MAX_FILE, long)


def test_no_function_is_too_long():
    long = []
    for name, text in sources().items():
        for fn, _, first, last in functions(text):
            if last - first + 1 > MAX_FUNCTION:
                long.append("%s:%d %s (%d lines)"
                            % (name, first, fn, last - first + 1))
    assert not long, "functions over %d lines: %s" % (MAX_FUNCTION, long)


def test_jni_stays_in_the_jvm_files():
    """The feature files are plain C: only the JVM's files include jni.h
    (or the header that does)."""
    bad = []
    for f in sorted(SRC.glob("*.[ch]")):
        text = f.read_text()
        if f.name not in JNI_FILES and re.search(
                r'#include\s+[<"](jni\.h|ngx_http_jvm_jni\.h)[>"]', text):
            bad.append(f.name)
    assert not bad, "jni.h included outside %s: %s" % (sorted(JNI_FILES), bad)


def test_module_h_lists_every_file_in_layer_order():
    """The list at the top of module.h names every C file, each above the
    files it uses (a picture that cannot drift from the code)."""
    text = (SRC / "ngx_http_jvm_module.h").read_text()
    order = re.findall(r"^ \*   (ngx_http_jvm_\w+\.c)", text, flags=re.M)
    edges = graph()
    missing = sorted(set(edges) - set(order))
    assert not missing, "module.h's list of files lacks: %s" % missing
    wrong = ["%s uses %s, listed above it" % (f, g)
             for f in edges for g in edges[f]
             if order.index(f) > order.index(g)]
    assert not wrong, "module.h's list is out of layer order: %s" % wrong


# ------------------------------------------------- a WebSocket frame's route

# A message in and the frames that answer it, as the static call graph
# draws them: each leg from the event handler that starts it to the JNI
# calls that end it (a method id of nginx.jvm.Worker used in a function's
# body).  The stops of a leg: every function on a call path from its start
# to one of its ends, and every function those ends call (the call-down
# layer's own steps: buffers, failures).  The "back" leg starts where Java
# wakes the loop: the function that asks Worker.wsPoll() for a socket.
ROUTE = [("in", "ngx_http_jvm_ws_read_handler",
          {"ngx_http_jvm_ws_message_mid"}),
         ("back", "ngx_http_jvm_vm_ws_poll",
          {"ngx_http_jvm_ws_poll_mid", "ngx_http_jvm_ws_take_mid"})]
ROUTE_MAX_FILES = 3
ROUTE_MAX_FUNCTIONS = 16


def function_graph():
    """({(file, function): {(file, function) it uses}}, {(file, function):
    its body}), static functions resolved within their own file."""
    files = sources()
    extern, static, bodies = {}, {}, {}
    for name, text in files.items():
        lines = strip(text).split("\n")
        for fn, is_static, first, last in functions(text):
            if is_static:
                static.setdefault(name, {})[fn] = name
            else:
                extern[fn] = name
            bodies[(name, fn)] = "\n".join(lines[first:last])
    calls = {}
    for (name, fn), body in bodies.items():
        out = set()
        for used in set(re.findall(r"\b([A-Za-z_]\w*)\b", body)):
            if used in static.get(name, {}):
                out.add((name, used))
            elif used in extern:
                out.add((extern[used], used))
        out.discard((name, fn))
        calls[(name, fn)] = out
    return calls, bodies


def reach(starts, calls):
    seen, todo = set(starts), list(starts)
    while todo:
        for m in calls.get(todo.pop(), ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def frame_route():
    """[(leg, [(file, function), ...], [(file, file it calls), ...])] of
    ROUTE, sorted."""
    calls, bodies = function_graph()
    callers = {}
    for a, bs in calls.items():
        for b in bs:
            callers.setdefault(b, set()).add(a)
    legs = []
    for leg, start, ids in ROUTE:
        if leg == "back":
            # the function that calls it, not the call itself
            first = {n for n in calls
                     if any(fn == start for _, fn in calls[n])}
        else:
            first = {n for n in calls if n[1] == start}
        ends = {n for n, body in bodies.items()
                if set(re.findall(r"\b\w+_mid\b", body)) & ids}
        assert first and ends, "the route's %s leg: no %s or no %s" \
            % (leg, start, sorted(ids))
        stops = (reach(first, calls) & reach(ends, callers)) \
            | reach(ends, calls)
        crossings = {(a[0], b[0]) for a in stops for b in calls[a]
                     if b in stops and a[0] != b[0]}
        legs.append((leg, sorted(stops), sorted(crossings)))
    return legs


def test_a_frames_route_is_short():
    """A WebSocket message in and its answer out cross few files (pytest -s
    prints the route; docs/internals.md, under ngx_http_jvm_vm.c, has the
    figures before and after vm.c's split).  NGINX_JVM_SRC measures
    another tree."""
    legs = frame_route()
    every = set()
    for leg, stops, crossings in legs:
        every.update(stops)
        print("%-4s %d functions in %d files, %d crossings (%s)" % (
            leg, len(stops), len({f for f, _ in stops}), len(crossings),
            ", ".join("%s->%s" % (short(a), short(b))
                      for a, b in crossings)))
        for f, fn in stops:
            print("       %-16s %s" % (short(f), fn))
    files = sorted({short(f) for f, _ in every})
    print("the route: %d functions in %d files (%s)"
          % (len(every), len(files), " ".join(files)))
    assert len(files) <= ROUTE_MAX_FILES and \
        len(every) <= ROUTE_MAX_FUNCTIONS, \
        "a frame's route grew: %d functions in %d files (%s)" \
        % (len(every), len(files), " ".join(files))


# ---------------------------------------------------------------- Java

JAR = Path(os.environ.get("NGINX_JVM_JAR", ROOT / "build" / "nginx-jvm.jar"))


def java_classes():
    """{class: (public, {classes of nginx.jvm whose members it uses})},
    nested classes counted as their outer one, read from the built jar."""
    import shutil
    import subprocess
    import zipfile
    import pytest
    javap = shutil.which("javap") or (
        os.path.join(os.environ["JAVA_HOME"], "bin", "javap")
        if "JAVA_HOME" in os.environ else None)
    if not JAR.exists() or not javap:
        pytest.skip("needs build/nginx-jvm.jar (make jar) and javap")
    names = sorted(n[:-6].replace("/", ".")
                   for n in zipfile.ZipFile(JAR).namelist()
                   if n.startswith("nginx/jvm/") and n.endswith(".class")
                   and n.count("/") == 2)
    out = subprocess.run([javap, "-v", "-p", "-cp", str(JAR)] + names,
                         capture_output=True, text=True, check=True).stdout
    top = lambda c: c.split("/")[-1].split("$")[0]
    classes = {}
    for part in re.split(r"^Classfile ", out, flags=re.M)[1:]:
        this = re.search(r"this_class: #\d+\s+// (nginx/jvm/[\w$]+)", part)
        name = this.group(1)
        flags = re.search(r"^  flags: (.*)$", part, flags=re.M).group(1)
        uses = {top(m) for m in re.findall(
            r"= (?:Methodref|Fieldref|InterfaceMethodref)\s+#\d+\.#\d+"
            r"\s+// (nginx/jvm/[\w$]+)\.", part)}
        uses |= {top(m) for m in re.findall(
            r"REF_\w+ (nginx/jvm/[\w$]+)\.", part)}
        public, used = classes.get(top(name), (None, set()))
        if "$" not in name:
            public = "ACC_PUBLIC" in flags
        classes[top(name)] = (public, used | uses - {top(name)})
    return classes


def test_no_public_class_reaches_into_a_private_one_and_back():
    """A public class of the API (Request, Response, SharedDict, ...) may
    use the package-private core, but nothing it uses may call back into
    it: the core stays below the API."""
    classes = java_classes()
    assert classes["Request"][0] and not classes["Worker"][0]

    def path(a, b, seen):
        if a == b:
            return [a]
        seen.add(a)
        for n in sorted(classes.get(a, (None, ()))[1]):
            if n not in seen:
                p = path(n, b, seen)
                if p:
                    return [a] + p
        return None

    knots = []
    for c, (public, uses) in sorted(classes.items()):
        if not public:
            continue
        for u in sorted(uses):
            if classes.get(u, (True,))[0] is False:
                back = path(u, c, set())
                if back:
                    knots.append(" -> ".join([c] + back))
    assert not knots, "public classes reached back through the core: %s" \
        % knots


def test_internals_md_draws_every_c_file():
    """docs/internals.md's picture of the layers names every C file."""
    doc = (ROOT / "docs" / "internals.md").read_text()
    layers = doc[doc.index("## Layers"):]
    layers = layers[:layers.index("\n## ", 1)]
    missing = sorted(f for f in sources() if f not in layers)
    assert not missing, "docs/internals.md's layers lack: %s" % missing
