"""nginx variables from Java and Clojure (Request#variable, setVariable,
nginx.jvm.request), and variables computed by handlers (jvm_set) used by
return, if, map, proxy_set_header and log_format."""

import base64
import json
import os

import pytest

from harness import Nginx, wait_for
from upstream import up  # noqa: F401 (the module's upstream, a fixture)

TRACE = r"jvm: (\s+at |\s*\.\.\. \d+ more|Caused by: |\s+Suppressed: )"

HTTP = """
    map $arg_m $mapped { default "none"; a "alpha"; }
    jvm_set $computed testapp.Phases$Var;
    jvm_set $cljset testapp.phases/computed;
    map $computed $from_computed { default "other"; "v-yes" "matched"; }
    log_format jvm '$uri computed=$computed clj=$cljset';
"""

LOCATIONS = """
        location /vars { set $declared "initial";
                         jvm_content testapp.Phases$Vars; }
        location /clj-vars { jvm_content testapp.phases/vars; }
        location /async-vars { jvm_async on; jvm_content testapp.AsyncVars; }
        location /set { return 200 "computed=$computed clj=$cljset map=$from_computed"; }
        location /set-if { if ($computed = "v-yes") { return 204; }
                           return 200 "no"; }
        location /set-proxy/ { proxy_set_header X-Computed $computed;
                               proxy_pass http://127.0.0.1:@UP@/; }
        location /set-log { access_log @PREFIX@/logs/jvm-access.log jvm;
                            return 200 "logged"; }
"""


@pytest.fixture(scope="module")
def ng(mode, up):
    with Nginx(LOCATIONS.replace("@UP@", str(up.port)), http=HTTP,
               mode=mode, startup_allow=[TRACE]) as n:
        yield n


def lines(reply):
    out = {}
    for line in reply.text.splitlines():
        for sep in ("=", "!"):
            if sep in line:
                k, _, v = line.partition(sep)
                out[k] = (sep, v)
                break
    return out


def test_common_variables(ng):
    auth = base64.b64encode(b"alice:pw").decode()
    r = ng.request("GET", "/vars?n=arg_x,cookie_sid,http_x_foo,remote_user,"
                   "request_method,server_protocol,mapped,uri,$args&x=42&m=a",
                   headers={"Cookie": "sid=abc; other=1", "X-Foo": "bar",
                            "Authorization": "Basic " + auth})
    assert r.status == 200
    v = lines(r)
    assert v["arg_x"] == ("=", "42")
    assert v["cookie_sid"] == ("=", "abc")
    assert v["http_x_foo"] == ("=", "bar")
    assert v["remote_user"] == ("=", "alice")
    assert v["request_method"] == ("=", "GET")
    assert v["server_protocol"] == ("=", "HTTP/1.1")
    assert v["mapped"] == ("=", "alpha")
    assert v["uri"] == ("=", "/vars")
    assert v["$args"][1].startswith("n=arg_x")
    assert v["batch"] == ("=", "{arg_x=42, request_method=GET}")
    if ng.mode == "pool":
        assert "nginx-jvm-pool" in v["thread"][1]


def test_missing_values_are_null(ng):
    v = lines(ng.request("GET", "/vars?n=arg_nothere,cookie_none,remote_user"))
    assert v["arg_nothere"] == ("=", "null")
    assert v["cookie_none"] == ("=", "null")
    assert v["remote_user"] == ("=", "null")


def test_unknown_variable_is_a_clear_exception(ng):
    v = lines(ng.request("GET", "/vars?n=no_such_var"))
    assert v["no_such_var"] == (
        "!", 'IllegalArgumentException: unknown nginx variable: "no_such_var"')


def test_set_declared_variable(ng):
    v = lines(ng.request("GET", "/vars?n=declared"))
    assert v["declared"] == ("=", "initial")
    v = lines(ng.request("GET", "/vars?set=declared:changed&n=declared"))
    assert v["declared"] == ("=", "changed")
    assert "set" not in v


def test_set_jvm_set_variable(ng):
    v = lines(ng.request("GET", "/vars?set=computed:assigned&n=computed",
                         headers={"X-V": "yes"}))
    assert v["computed"] == ("=", "assigned")


def test_set_errors(ng):
    v = lines(ng.request("GET", "/vars?set=remote_addr:x"))
    assert v["set"] == ("!", "IllegalArgumentException: this nginx variable "
                             'cannot be set: "remote_addr"')
    v = lines(ng.request("GET", "/vars?set=nope_nope:x"))
    assert v["set"] == ("!", 'IllegalArgumentException: unknown nginx '
                             'variable: "nope_nope"')


def test_set_args(ng):
    # $arg_set is "args:n=args": $args becomes "n=args", then $arg_n is read
    v = lines(ng.request("GET", "/vars?set=args:n=args"))
    assert v["args"] == ("=", "n=args")


def test_clojure_variables(ng):
    r = ng.request("GET", "/clj-vars?a=1&m=a")
    assert r.status == 200
    assert r.text.startswith("a=1 method=GET mapped=alpha remote=127.0.0.1 ")


def test_async_thread_reads_variables(ng):
    r = ng.request("GET", "/async-vars?a=7")
    assert r.status == 200
    assert r.text == ('a=7 unknown=unknown nginx variable: '
                      '"no_such_variable_here" thread=user-thread')


def test_jvm_set_in_return_and_map(ng):
    r = ng.request("GET", "/set?x=1", headers={"X-V": "yes"})
    assert r.status == 200
    assert r.text == "computed=v-yes clj=clj-1 map=matched"
    r = ng.request("GET", "/set")
    assert r.text == "computed= clj= map=other"


def test_jvm_set_in_if(ng):
    assert ng.request("GET", "/set-if", headers={"X-V": "yes"}).status == 204
    r = ng.request("GET", "/set-if", headers={"X-V": "no"})
    assert r.status == 200 and r.text == "no"


def test_jvm_set_in_proxy_set_header(ng):
    r = ng.request("GET", "/set-proxy/echo", headers={"X-V": "up"})
    assert r.status == 200
    assert json.loads(r.body)["headers"]["x-computed"] == "v-up"


def test_jvm_set_in_log_format(ng):
    r = ng.request("GET", "/set-log?x=5", headers={"X-V": "log"})
    assert r.status == 200
    path = ng.path("logs", "jvm-access.log")
    text = wait_for(lambda: os.path.exists(path) and open(path).read(), 60)
    assert "/set-log computed=v-log clj=clj-5" in text


@pytest.mark.log_allows("the jvm_set handler threw", "var-boom-marker", TRACE)
def test_jvm_set_throws_500(ng):
    since = ng.log_size()
    r = ng.request("GET", "/set", headers={"X-V": "boom"})
    assert r.status == 500
    assert wait_for(lambda: "var-boom-marker" in ng.log_text(since), 60)
    assert ng.request("GET", "/set", headers={"X-V": "ok"}).status == 200
