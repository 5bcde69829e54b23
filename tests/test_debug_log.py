"""With `error_log ... debug` (nginx built --with-debug, as Debian's is),
the module traces what a person debugging wants to see: the request as
described to Java, variables read and set, dictionary operations and
topic messages.  Dictionary and topic operations on a JVM thread write
none (a JVM thread touches no log): so on the event loop only."""

import re
import subprocess
import urllib.parse

import pytest

from harness import NGINX, Nginx, request, wait_for

LOCATIONS = """
        location /vars { jvm_content testapp.Phases$Vars; }
        location /dict { jvm_content testapp.Shared; }
        location /topic { jvm_content testapp.TopicApp; }
"""

HTTP = """
    jvm_shared_dict d 1m;
    jvm_topic t 64k;
    jvm_init testapp.TopicInit;
"""


def debug_build():
    out = subprocess.run([NGINX, "-V"], capture_output=True, text=True)
    return "--with-debug" in out.stderr


@pytest.mark.skipif(not debug_build(), reason="nginx without --with-debug")
def test_debug_lines_on_the_event_loop():
    ng = Nginx(LOCATIONS, http=HTTP, classpath="java", mode="loop")
    with open(ng.conf) as f:
        text = f.read()
    with open(ng.conf, "w") as f:
        f.write(text.replace("error.log info;", "error.log debug;"))
    with ng:
        since = ng.log_size()

        def get(path, **params):
            r = request(ng.port, "GET",
                        path + "?" + urllib.parse.urlencode(params,
                                                            safe=",:"))
            assert r.status == 200, r.text
            return r.text

        get("/vars", n="uri,nosuch_thing", set="nosuch:1")
        get("/dict", op="put", key="kk", value="v")
        get("/dict", op="get", key="kk")
        get("/dict", op="delete", key="absent")
        get("/topic", op="publish", msg="hello")

        want = [
            r"jvm: request described in \d+ bytes, flags 2, \d+ header "
            r"fields, body in 0 segments, 0 in a file",
            r'jvm: get variable "uri": "/vars"',
            r'jvm: get variable "nosuch_thing": unknown',
            r'jvm: set variable "nosuch" refused: unknown nginx variable',
            r'jvm: dict "d" set, key of 2 bytes: ok, 0 evicted',
            r'jvm: dict "d" get, key of 2 bytes: ok',
            r'jvm: dict "d" delete, key of 6 bytes: not found',
            r'jvm: topic "t" publish of 5 bytes: ok',
            r'jvm: topic "t": 1 messages, \d+ bytes to the JVM',
        ]

        def missing():
            text = ng.log_text(since)
            return [w for w in want if not re.search(w, text)]
        wait_for(lambda: not missing(), 60)
        assert not missing(), ng.log_text(since)[-4000:]
