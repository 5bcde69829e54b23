"""jvm_warmup: a worker whose JVM is up sends itself its server's requests,
through nginx's whole request path, before it accepts a connection and
before it counts as ready for an older generation's workers.

testapp.warmup counts, per worker, the requests whose User-Agent is the
warm-up's, and tells any other request that count: a real request that
sees the full count was served after the warm-up."""

import os
import re
import signal
import socket
import threading
import time

import pytest

from harness import (Nginx, alive, children, in_event_loop, parse_raw, raw,
                     wait_for)

LOCATIONS = """
        jvm_warmup /warm requests=%d;
        location /warm { jvm_content testapp.warmup/hit; }
"""


def answer(text):
    """{"pid": .., "warmups": .., "seen": ..} of testapp.warmup's answer."""
    m = re.match(r"pid=(\d+) warmups=(\d+) seen=(.*)$", text)
    assert m, text
    return {"pid": int(m.group(1)), "warmups": int(m.group(2)),
            "seen": m.group(3)}


def per_worker(n, path="/warm"):
    """Each worker's answer, on new connections until every worker gave
    one (200 tries at most)."""
    seen = {}
    for _ in range(200):
        r = n.get(path, headers={"Connection": "close"})
        assert r.status == 200, r
        a = answer(r.text)
        seen.setdefault(a["pid"], a)
        if len(seen) == n.workers:
            break
    return seen


def test_every_worker_answers_its_first_request_warm(mode):
    # 1500: more than a connection's keepalive_requests (1000), so the
    # warm-up goes on on a second connection
    with Nginx(LOCATIONS % 1500, workers=2, mode=mode) as n:
        seen = per_worker(n)
        assert set(seen) == set(n.worker_pids())
        for a in seen.values():
            assert a["warmups"] == 1500, a
            # a local peer, the server's name, the path asked for
            assert a["seen"] == "unix: localhost localhost /warm", a
        done = n.log_lines(r"\[notice\].* jvm: warm-up of /warm: 1500 "
                           r"requests in \d+ ms")
        assert len(done) == 2, n.log_text()


def test_a_server_that_closes_each_connection_soon_is_warmed_all_the_same():
    n = Nginx("        keepalive_requests 7;\n" + LOCATIONS % 50)
    with n:
        (a,) = per_worker(n).values()
        assert a["warmups"] == 50
        assert n.log_lines(r"jvm: warm-up of /warm: 50 requests in")


def test_a_client_that_comes_during_the_warmup_waits_and_is_served_warm(mode):
    # 400 requests of at least 3 ms each: the worker warms up for 1.2 s or
    # more, during which nothing of its listening socket is accepted
    n = Nginx("""
        jvm_warmup /slow?ms=3 requests=400;
        location /slow { jvm_content testapp.warmup/slow; }
""", mode=mode)
    try:
        n.start(wait=False)
        assert wait_for(lambda: _connected(n.port), 30), \
            "the listening socket never took a connection"
        data = raw(n.port, b"GET /slow?ms=0 HTTP/1.1\r\nHost: localhost\r\n"
                   b"Connection: close\r\n\r\n", timeout=60)
        r = parse_raw(data)
        assert r.status == 200
        assert answer(r.text)["warmups"] == 400
    finally:
        n.stop()
        n.cleanup()


def _connected(port):
    """Whether the port takes a connection (the kernel's queue does, while
    the worker warms up)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_a_reload_hands_over_to_workers_already_warm(mode):
    with Nginx(LOCATIONS % 300, mode=mode) as n:
        old = n.worker_pids()
        assert per_worker(n)[old[0]]["warmups"] == 300
        failed = []
        first_new = None
        assert n.control("reload").returncode == 0
        deadline = time.monotonic() + 60
        while first_new is None and time.monotonic() < deadline:
            try:
                r = n.get("/warm", headers={"Connection": "close"},
                          timeout=20)
            except OSError as e:
                failed.append(e)
                continue
            a = answer(r.text)
            if a["pid"] not in old:
                first_new = a
        assert not failed
        assert first_new, "no new worker answered within 60 s"
        # its very first real request came after its 300
        assert first_new["warmups"] == 300
        assert wait_for(lambda: not any(alive(p) for p in old), 60)


@pytest.mark.parametrize("m", ["pool", "virtual"])
def test_a_warmup_that_stalls_is_given_up_at_its_time(m):
    # the warm-up's first request waits a minute on its handler's thread:
    # after its 1 s the worker closes the warm-up's connection (the handler
    # is interrupted as for any client that leaves) and accepts
    n = Nginx("""
        jvm_warmup /stall requests=3 time=1s;
        location /stall { jvm_content testapp.warmup/stall; }
""", mode=m)
    with n:
        assert n.wait_log(r"\[warn\].* jvm: warm-up of /stall stopped after "
                          r"\d+ ms, [01] of 3 requests served: its time was "
                          r"up", timeout=30)
        r = n.get("/stall")
        assert r.status == 200
        # the first request held the pipeline (on a slow machine it may not
        # have started within the second): the others never started
        assert answer(r.text)["warmups"] <= 1


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGQUIT])
def test_a_stop_during_the_warmup_ends_it(sig):
    n = Nginx("""
        jvm_warmup /stall requests=3 time=60s;
        location /stall { jvm_content testapp.warmup/stall; }
""", mode="pool")
    try:
        n.start(wait=False)
        # in epoll_wait: its JVM is up, and it waits on the warm-up (its
        # title says "worker process" only once its start is over)
        assert wait_for(lambda: [p for p in children(n.master_pid)
                                 if in_event_loop(p)], 60)
        assert not n.worker_pids()
        time.sleep(0.5)
        start = time.monotonic()
        assert n.stop(sig=sig, timeout=20), "nginx did not stop by itself"
        assert time.monotonic() - start < 15
        assert n.log_lines(r"jvm: warm-up of /stall stopped after \d+ ms, "
                           r"[01] of 3 requests served: the worker %s"
                           % ("stops" if sig == signal.SIGTERM else "quits"))
    finally:
        n.stop()
        n.cleanup()


def test_a_single_process_warms_up_too():
    with Nginx(LOCATIONS % 100, main="master_process off;") as n:
        (a,) = per_worker(n).values()
        assert a["warmups"] == 100
        assert n.log_lines(r"jvm: warm-up of /warm: 100 requests in")


def test_an_answer_that_is_no_success_is_logged():
    n = Nginx("""
        jvm_warmup /gone requests=3;
        location /gone { return 404; }
        location /warm { jvm_content testapp.warmup/hit; }
""")
    with n:
        assert n.wait_log(r"\[warn\].* jvm: warm-up of /gone: its first "
                          r"answer was \"HTTP/1.1 404 Not Found\"")
        assert n.log_lines(r"jvm: warm-up of /gone: 3 requests in")
        assert n.get("/warm").status == 200


def test_the_warmup_goes_to_its_own_server():
    # two servers on one address, told apart by name; the warm-up's is the
    # second, and its requests reach it, not the default
    n = Nginx("""
        location /warm { return 404; }
""", http="""
    server {
        listen 127.0.0.1:@PORT@;
        server_name warm.example;
        jvm_warmup /warm requests=20;
        location /warm { jvm_content testapp.warmup/hit; }
    }
""")
    with n:
        r = n.get("/warm", headers={"Host": "warm.example"})
        a = answer(r.text)
        assert a["warmups"] == 20
        assert a["seen"] == "unix: warm.example warm.example /warm"
        assert not n.log_lines(r"first answer was")


@pytest.mark.parametrize("directive,words", [
    ("jvm_warmup warm;", r'"jvm_warmup" directive takes a path that starts '
                         r'with "/"'),
    ('jvm_warmup "/a b";', r"without spaces or control characters"),
    ("jvm_warmup /warm requests=0;", r"requests must be 1 to 1000000"),
    ("jvm_warmup /warm requests=x;", r"requests must be 1 to 1000000"),
    ("jvm_warmup /warm time=0;", r"time must be a time above 0"),
    ("jvm_warmup /warm time=soon;", r"time must be a time above 0"),
    ("jvm_warmup /warm speed=3;", r'"jvm_warmup": invalid parameter '
                                  r'"speed=3"'),
    ("jvm_warmup;", r'invalid number of arguments in "jvm_warmup"'),
    ("location /x { jvm_warmup /warm; }", r'"jvm_warmup" directive is not '
                                          r'allowed here'),
])
def test_a_wrong_argument_fails_the_configuration_test(directive, words):
    n = Nginx("        %s\n" % directive)
    try:
        out = n.test_config()
        assert out.returncode != 0
        assert re.search(words, out.stderr), out.stderr
    finally:
        n.cleanup()


def test_a_server_with_no_plain_http_listen_fails_the_test():
    n = Nginx("", http="""
    server {
        listen 127.0.0.1:@PORT2@ proxy_protocol;
        jvm_warmup /warm;
        location /warm { jvm_content testapp.warmup/hit; }
    }
""")
    try:
        out = n.test_config()
        assert out.returncode != 0
        assert re.search(r'"jvm_warmup" in \S+nginx.conf:\d+: its server has '
                         r'no "listen" without ssl, http2 or proxy_protocol',
                         out.stderr), out.stderr
    finally:
        n.cleanup()


# --- the master's word during the warm-up and the wait for the turn ---------
#
# With 2 workers the first one's channel holds an OPEN_CHANNEL (the master
# telling it of the second) before any quit or stop: the worker reads every
# message, as nginx does, not only the first.  testapp.warmup/tally notes
# each warm-up request's start, with the time, in a file: the test sees
# from outside when the warm-up stops.  The second worker waits for its
# turn (the first is not ready before its warm-up ends).

TALLY = """
        jvm_warmup /tally?ms=2 requests=%d time=600s;
        location /tally { jvm_content testapp.warmup/tally; }
"""

LEAVE = """
    jvm_init %s;
    jvm_exit testapp.leave/leave;
    jvm_options -Dtestapp.leave=@PREFIX@/leave.txt
                -Dtestapp.warmups=@PREFIX@/warmups.txt
                -Dtestapp.hold=@PREFIX@/hold;
"""

# as many as would take the warm-up (2 ms each at least) half an hour
ENDLESS = 1000000

# the reaction measured must be within this: the promise is 100 ms, the
# margin is for a loaded machine, and a warm-up that goes on takes minutes
REACTION = 3.0


def tallies(n):
    """{pid: [the warm-up requests' start times, in seconds]}"""
    out = {}
    try:
        with open(n.path("warmups.txt")) as f:
            text = f.read()
    except FileNotFoundError:
        return out
    for line in text.split("\n")[:-1]:
        pid, ms = line.split(" ")
        if pid != "holding":
            out.setdefault(int(pid), []).append(int(ms) / 1000)
    return out


def warming(n, count=20):
    """The pid of the worker that has counted `count` warm-up requests,
    once one has (as the warm-up runs, not as it starts)."""
    def found():
        for pid, times in tallies(n).items():
            if len(times) >= count:
                return pid
    return wait_for(found, 120)


def threads(pid):
    """How many threads a process has: 1 before its JVM."""
    try:
        with open("/proc/%d/status" % pid) as f:
            return int(re.search(r"Threads:\s+(\d+)", f.read()).group(1))
    except (OSError, AttributeError):
        return 0


def leave_lines(n):
    try:
        with open(n.path("leave.txt")) as f:
            return sorted(f.read().split("\n")[:-1])
    except FileNotFoundError:
        return []


def reaction(n, pid, sent):
    """Seconds from `sent` to the last warm-up request of `pid` (below 0
    when none started after it), and how many started after it."""
    times = tallies(n)[pid]
    late = [t for t in times if t > sent]
    return max(times) - sent, len(late)


@pytest.mark.parametrize("sig,word", [(signal.SIGQUIT, "quit"),
                                      (signal.SIGTERM, "stop")])
def test_a_quit_or_stop_during_the_warmup_is_obeyed_at_once(mode, sig, word):
    n = Nginx(TALLY % ENDLESS, workers=2, mode=mode,
              http=LEAVE % "testapp.leave/add-hook")
    try:
        n.start(wait=False)
        first = warming(n)
        assert first, "no warm-up ran:\n" + n.log_text()
        (other,) = [p for p in children(n.master_pid) if p != first]
        # still waiting for its turn, unless the first one's start passed
        # the wait's 10 s (a loaded machine): then it starts its JVM too
        waiting = threads(other) == 1
        sent = time.time()
        # a stop that the workers miss ends with the master's SIGKILL
        # after 1.5 s: the error log's check sees it ("exited on signal 9")
        assert n.stop(sig=sig, timeout=60), "nginx did not stop by itself"
        stopped = time.time() - sent
        took, late = reaction(n, first, sent)
        print("%s: last warm-up request %.3f s after, %d after it; nginx "
              "gone after %.3f s" % (word, took, late, stopped))
        assert took < REACTION, took
        # the second worker, waiting for its turn, started no JVM; or its
        # wait ended on its limit just as the stop came, and it read the
        # stop once its JVM had started: then it sent itself no request
        refused = bool(n.log_lines(r"\[notice\].* jvm: a %s came before "
                                   r"this worker's start: no JVM, quitting"
                                   % word))
        cut = bool(n.log_lines(r"\[notice\].* jvm: a %s came during the "
                               r"JVM's start: no warm-up" % word))
        assert not (refused and cut)
        assert refused or cut or not waiting, n.log_text()
        if refused or cut:
            assert other not in tallies(n)
        elif other in tallies(n):
            assert reaction(n, other, sent)[0] < REACTION
        jvms = [first] if refused else sorted([first, other])
        assert n.log_lines(r"\[warn\].* jvm: warm-up of /tally\?ms=2 stopped "
                           r"after \d+ ms, \d+ of %d requests served: the "
                           r"worker %s" % (ENDLESS, "stops" if word == "stop"
                                           else "quits"))
        # jvm_exit and the shutdown hook ran in the worker that warmed up
        assert leave_lines(n) == sorted(["exit %d" % p for p in jvms]
                                        + ["hook %d" % p for p in jvms])
        assert not n.log_lines(r"exited on signal")
    finally:
        n.stop()
        n.cleanup()


def test_a_quit_while_a_worker_waits_for_its_turn_is_obeyed_at_once():
    # the first worker starts its JVM, and its jvm_init holds it (while a
    # file is there); the second waits for its turn (10 s at most): the
    # quit comes as soon as the first one's JVM has threads
    n = Nginx(TALLY % 10, workers=2, http=LEAVE % "testapp.warmup/hold-init")
    try:
        open(n.path("hold"), "w").close()
        n.start(wait=False)

        def starting():
            pids = children(n.master_pid)
            if len(pids) != 2:
                return None
            started = [p for p in pids if threads(p) > 1]
            return len(started) == 1 and started[0]

        first = wait_for(starting, 60, interval=0.01)
        assert first, "no JVM started:\n" + n.log_text()
        (second,) = [p for p in children(n.master_pid) if p != first]
        sent = time.monotonic()
        n.proc.send_signal(signal.SIGQUIT)
        assert wait_for(lambda: not alive(second), 30)
        took = time.monotonic() - sent
        print("the waiting worker left %.3f s after the quit" % took)
        assert took < REACTION, took
        assert alive(first)         # still in its JVM's start or jvm_init
        assert n.log_lines(r"\[notice\].* jvm: a quit came before this "
                           r"worker's start: no JVM, quitting")
        os.unlink(n.path("hold"))
        n.proc.wait(60)
        # the first worker's quit waited in its channel while jvm_init
        # held it: it is read before the warm-up, which sends nothing
        assert leave_lines(n) == ["exit %d" % first, "hook %d" % first]
        assert n.log_lines(r"\[notice\].* jvm: a quit came during the "
                           r"JVM's start: no warm-up")
        assert tallies(n) == {}
    finally:
        n.stop()
        n.cleanup()


def _set_requests(n, requests):
    with open(n.conf) as f:
        text = f.read()
    with open(n.conf, "w") as f:
        f.write(re.sub(r"requests=\d+", "requests=%d" % requests, text))


def test_a_newer_reload_during_a_warmup_ends_it(mode):
    """The first reload's first worker warms up for ever; a second reload
    ends its warm-up, and it leaves (jvm_exit runs); its second worker,
    waiting for its turn, starts no JVM.  The first workers serve every
    request throughout, until the second reload's workers are ready."""
    n = Nginx(TALLY % 10, workers=2, mode=mode,
              http=LEAVE % "testapp.leave/add-hook")
    with n:
        first = set(n.worker_pids())
        results = []
        stop = threading.Event()

        def load():
            while not stop.is_set():
                try:
                    r = n.get("/tally", headers={"Connection": "close"},
                              timeout=20)
                    results.append(r.status)
                except OSError as e:
                    results.append(e)
                time.sleep(0.01)

        t = threading.Thread(target=load)
        t.start()
        try:
            _set_requests(n, ENDLESS)
            assert n.control("reload").returncode == 0
            warm = warming(n)
            assert warm and warm not in first
            second = set(children(n.master_pid)) - first
            waiting = all(threads(p) == 1 for p in second - {warm})
            _set_requests(n, 10)
            sent = time.time()
            assert n.control("reload").returncode == 0
            assert wait_for(lambda: not alive(warm), 60)
            gone = time.time() - sent
            took, late = reaction(n, warm, sent)
            print("reload: last warm-up request %.3f s after, %d after it; "
                  "the worker gone after %.3f s" % (took, late, gone))
            assert took < REACTION, took
            assert n.wait_ready(exclude=first | second)
            assert wait_for(lambda: not any(alive(p) for p in first), 60)
        finally:
            stop.set()
            t.join()
        assert results and all(r == 200 for r in results), \
            [r for r in results if r != 200][:5]
        assert n.log_lines(r"jvm: reload: a newer configuration came during "
                           r"the warm-up: quitting")
        assert n.log_lines(r"warm-up of /tally\?ms=2 stopped after \d+ ms, "
                           r"\d+ of %d requests served: a newer configuration "
                           r"came" % ENDLESS)
        # the superseded worker that warmed up ran jvm_exit; its second
        # worker had no JVM
        assert "exit %d" % warm in leave_lines(n)
        tallied = set(tallies(n)) & second
        assert warm in tallied
        # (unless the first one's start took more than the wait's 10 s, as
        # under ASan: then the second started its JVM and warmed up too,
        # and its jvm_exit ran)
        late = tallied - {warm}
        left = {int(l.split()[1]) for l in leave_lines(n)}
        assert late <= left, (late, left)
        if waiting and not late:
            assert not left & (second - {warm})


# a trace is logged in pieces, each an [error] line of its own
TRACE = r"\[error\].* jvm: (.*warmup-boom-marker|\s*at |\s*\.\.\.|Caused by)"


@pytest.mark.log_allows(TRACE)
def test_a_failing_warmup_logs_one_stack_trace_not_one_a_request(mode):
    n = Nginx("""
        jvm_warmup /fail requests=300;
        location /fail { jvm_content testapp.warmup/fail; }
""", workers=2, mode=mode, startup_allow=[TRACE])
    with n:
        traces = n.log_lines(r"\[error\].*warmup-boom-marker")
        # one in each worker, and each worker's count
        assert len(traces) == 2, len(traces)
        assert len(n.log_lines(r"\[warn\].* jvm: warm-up of /fail: 300 of "
                               r"its requests failed, the first one logged "
                               r"above, the others only counted")) == 2
        assert n.log_size() < 200000, n.log_size()
        # a real request's failure is logged in full as ever
        since = n.log_size()
        assert n.get("/fail").status == 500
        assert n.wait_log(r"\[error\].*warmup-boom-marker", since)
