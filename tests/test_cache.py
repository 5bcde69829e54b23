"""The class cache (jvm_cache): built once by the master, reused by later
starts and by every worker, rebuilt when the class path changes, and a
broken entry is ignored with a warning, never a failed start.

The cache logic does not depend on the execution mode: these tests run
once, on the event loop."""

import os
import time

import pytest

from harness import BUILD, JAR, Nginx

APP = """(ns cachetest.core)

(defn handler [request]
  {:status 200
   :headers {"Content-Type" "text/plain"}
   :body (str "%s "
              ;; where this namespace's class came from: the cache's jar
              (.getResource (clojure.lang.RT/baseLoader)
                            "cachetest/core__init.class"))})
"""

BROKEN = """(ns cachetest.core)

(defn handler [request] (undefined-fn request))
"""

LOCATIONS = "        location / { jvm_content cachetest.core/handler; }\n"


@pytest.fixture
def app(tmp_path):
    """A source directory and a cache directory of the test's own."""
    src = tmp_path / "src"
    (src / "cachetest").mkdir(parents=True)
    write_app(src, "one")
    return src, tmp_path / "cache"


def write_app(src, word, text=APP):
    path = src / "cachetest" / "core.clj"
    path.write_text(text % word if "%s" in text else text)
    # a new size or time: either changes the key
    st = os.stat(path)
    os.utime(path, (st.st_atime + 5, st.st_mtime + 5))


def server(src, cache, workers=2, allow=()):
    return Nginx(LOCATIONS, http="    jvm_cache %s;\n" % cache,
                 classpath=[str(JAR), str(BUILD / "lib") + "/*", str(src)],
                 workers=workers, startup_allow=allow)


def entries(cache):
    return sorted(p for p in cache.iterdir() if p.is_dir()) \
        if cache.exists() else []


def maps_archive(pid, entry):
    with open("/proc/%d/maps" % pid) as f:
        return str(entry / "app.jsa") in f.read()


def test_built_then_reused(app):
    src, cache = app
    with server(src, cache) as n:
        assert n.log_lines(r"\[notice\].*building the class cache")
        assert n.log_lines(r"\[notice\].*class cache .* built")
        [entry] = entries(cache)
        for name in ("app.jar", "app.jsa", "ok"):
            assert (entry / name).is_file(), name
        # the source directory, copied into a jar
        assert len(list(entry.glob("cp*.jar"))) == 1
        r = n.get("/")
        assert r.status == 200
        word, source = r.text.split(" ", 1)
        assert word == "one"
        # the namespace was compiled ahead of time, into the cache's jar
        assert source.startswith("jar:file:%s/app.jar!" % entry), source
        # every worker maps the archive of the classes
        pids = n.worker_pids()
        assert len(pids) == 2
        assert all(maps_archive(p, entry) for p in pids)
        built = (entry / "app.jsa").stat().st_mtime_ns

    with server(src, cache) as n:
        assert not n.log_lines("building the class cache")
        assert entries(cache) == [entry]
        assert (entry / "app.jsa").stat().st_mtime_ns == built
        assert n.get("/").text.startswith("one ")
        assert all(maps_archive(p, entry) for p in n.worker_pids())


def test_rebuilt_when_the_class_path_changes(app):
    src, cache = app
    with server(src, cache) as n:
        assert n.get("/").text.startswith("one ")
    [first] = entries(cache)

    write_app(src, "two")
    with server(src, cache) as n:
        assert n.log_lines("building the class cache")
        r = n.get("/")
        assert r.text.startswith("two ")
        second = [e for e in entries(cache) if e != first]
        assert len(second) == 1
        assert str(second[0] / "app.jar") in r.text
        assert all(maps_archive(p, second[0]) for p in n.worker_pids())

    # a new jar on the class path is a change too
    extra = src.parent / "extra"
    extra.mkdir()
    n = Nginx(LOCATIONS, http="    jvm_cache %s;\n" % cache,
              classpath=[str(JAR), str(BUILD / "lib") + "/*", str(src),
                         str(extra)])
    with n:
        assert n.log_lines("building the class cache")
        assert n.get("/").text.startswith("two ")
    assert len(entries(cache)) == 3


@pytest.mark.parametrize("damage", ["garbage", "truncated", "no-ok",
                                    "no-jar"])
def test_broken_entry_is_rebuilt_with_a_warning(app, damage):
    src, cache = app
    with server(src, cache) as n:
        assert n.get("/").status == 200
    [entry] = entries(cache)
    jsa = entry / "app.jsa"
    if damage == "garbage":
        size = jsa.stat().st_size
        jsa.chmod(0o644)
        jsa.write_bytes(os.urandom(size))
    elif damage == "truncated":
        jsa.chmod(0o644)
        with open(jsa, "r+b") as f:
            f.truncate(1000)
    elif damage == "no-ok":
        (entry / "ok").unlink()
    else:
        (entry / "app.jar").unlink()
        (entry / "ok").unlink()

    with server(src, cache) as n:
        assert n.log_lines(r"\[warn\].*class cache .* is incomplete or "
                           r"corrupt: ignored and built again")
        assert n.log_lines("class cache .* built")
        r = n.get("/")
        assert r.status == 200 and r.text.startswith("one ")
        assert str(entry / "app.jar") in r.text
        assert all(maps_archive(p, entry) for p in n.worker_pids())


def test_archive_the_jvm_rejects_is_ignored(app):
    """An archive that passes the master's checks but not the JVM's: the
    workers start without it and say so."""
    src, cache = app
    with server(src, cache) as n:
        assert n.get("/").status == 200
    [entry] = entries(cache)
    jsa = entry / "app.jsa"
    data = bytearray(jsa.read_bytes())
    data[4:4096] = os.urandom(4092)       # the magic stays, the header not
    jsa.chmod(0o644)
    jsa.write_bytes(bytes(data))

    with server(src, cache, workers=1) as n:
        r = n.get("/")
        assert r.status == 200 and r.text.startswith("one ")
        assert n.log_lines(r"\[warn\].*the JVM rejected the archive of "
                           r"class cache")
        assert not maps_archive(n.worker_pids()[0], entry)


@pytest.mark.log_allows(r"\[error\] .*jvm: ")
def test_a_namespace_that_does_not_compile_leaves_no_cache(app):
    src, cache = app
    write_app(src, "", BROKEN)
    # the worker's own report of the handler it cannot load
    n = server(src, cache, workers=1, allow=[r"\[error\] .*jvm: "])
    with n:
        assert n.log_lines(r"\[warn\].*compiling the handlers' namespaces "
                           r"failed")
        assert n.log_lines(r"\[warn\].*class cache could not be built")
        assert entries(cache) == []
        # the worker started all the same; the location answers 500
        assert n.get("/").status == 500


def test_off_and_bad_arguments(tmp_path, app):
    src, cache = app
    n = Nginx(LOCATIONS, http="    jvm_cache off;\n",
              classpath=[str(JAR), str(BUILD / "lib") + "/*", str(src)])
    with n:
        # compiled from its source: there is no class to find
        assert n.get("/").text == "one "
        assert not n.log_lines("class cache")

    n = Nginx(LOCATIONS, http="    jvm_cache %s;\n    jvm_cache off;\n"
              % cache, classpath=[str(JAR), str(src)])
    r = n.test_config()
    assert r.returncode != 0
    assert '"jvm_cache" directive is duplicate' in r.stderr
    n.cleanup()


def test_old_entries_are_pruned(app):
    """After a build, the 4 entries used last stay; the rest go, and
    nothing that is not an entry is touched."""
    src, cache = app
    cache.mkdir()
    now = time.time()
    fakes = []
    for i in range(6):
        entry = cache / ("%032x" % (i + 1))
        entry.mkdir()
        (entry / "ok").write_text("0")
        (entry / "app.jsa").write_bytes(b"x")
        os.utime(entry / "ok", (now - 3600 * (i + 1), now - 3600 * (i + 1)))
        fakes.append(entry)
    (cache / "not-an-entry").mkdir()
    with server(src, cache, workers=1) as n:
        assert n.get("/").text.startswith("one ")
        removed = n.log_lines(r"\[notice\].*class cache .* removed")
        assert len(removed) == 3
    left = entries(cache)
    # the new entry and the three fakes used last
    assert fakes[0] in left and fakes[1] in left and fakes[2] in left
    assert not any(f in left for f in fakes[3:])
    assert (cache / "not-an-entry") in left
    assert len(left) == 5


SHARED_APP = """(ns cachetest.core
  (:require [nginx.jvm.shared :as shared]))

;; looked up as the namespace loads: in the master's archiving JVM too
(def counter (shared/dict "hits"))
(def news (shared/topic "news"))

(defn handler [request]
  {:status 200
   :headers {"Content-Type" "text/plain"}
   :body (str (shared/incr! counter "n") " " (class news))})
"""


def test_shared_state_looked_up_as_the_namespace_loads(app):
    src, cache = app
    write_app(src, "", SHARED_APP)
    http = ("    jvm_cache %s;\n    jvm_shared_dict hits 64k;\n"
            "    jvm_topic news 64k;\n" % cache)
    with Nginx(LOCATIONS, http=http,
               classpath=[str(JAR), str(BUILD / "lib") + "/*", str(src)],
               workers=2) as n:
        assert n.log_lines(r"\[notice\].*class cache .* built")
        [entry] = entries(cache)
        assert (entry / "app.jsa").is_file()
        assert [n.get("/").text for _ in range(3)] == [
            "1 class nginx.jvm.Topic", "2 class nginx.jvm.Topic",
            "3 class nginx.jvm.Topic"]
        assert all(maps_archive(pid, entry) for pid in n.worker_pids())
