"""examples/gateway: an access check in front of static files and a
proxy_pass API, and a content handler combining two subrequests."""

import json

import pytest

from harness import ROOT, Nginx, ring_classpath
from upstream import Upstream

LOCATIONS = """
        set $gateway_user "";
        jvm_access gateway.core/auth;
        location / { root @ROOT@/examples/gateway/public;
                     jvm_body_filter gateway.core/stamp; }
        location /api/ { jvm_access gateway.core/api-auth;
                         proxy_http_version 1.1;
                         proxy_set_header Connection "";
                         proxy_pass http://backend/; }
        location = /dashboard { jvm_async on;
                                jvm_content gateway.core/dashboard; }
        location /backend/ { internal;
                             proxy_http_version 1.1;
                             proxy_set_header Connection "";
                             proxy_read_timeout 2s;
                             proxy_pass http://backend/; }
"""

HTTP = """
    upstream backend { server 127.0.0.1:@UP@; keepalive 16; }
"""

AUTH = {"Authorization": "Bearer let-me-in"}


@pytest.fixture(scope="module")
def gw(mode):
    with Upstream() as up:
        cp = ring_classpath() + [str(ROOT / "examples" / "gateway" / "src")]
        with Nginx(LOCATIONS.replace("@ROOT@", str(ROOT)),
                   http=HTTP.replace("@UP@", str(up.port)), classpath=cp,
                   mode=mode) as n:
            yield n


def test_static_needs_a_token(gw):
    r = gw.request("GET", "/")
    assert r.status == 401
    assert r.header("WWW-Authenticate") == 'Bearer realm="gateway"'
    r = gw.request("GET", "/", headers={"Authorization": "Bearer wrong"})
    assert r.status == 401
    assert r.body == b"a valid bearer token is needed\n"


def test_static_with_token(gw):
    r = gw.request("GET", "/", headers=AUTH)
    assert r.status == 200
    assert "gateway example" in r.text


def test_static_pages_are_stamped_by_the_body_filter(gw):
    r = gw.request("GET", "/", headers={"Authorization": "Bearer me-too"})
    assert r.status == 200
    assert r.text.startswith("<!doctype html>")
    assert r.text.endswith("<!-- served to bob by nginx-jvm -->\n")
    assert r.header("Content-Length") is None


def test_api_gets_the_user(gw):
    r = gw.request("GET", "/api/items?x=1",
                   headers={"Authorization": "Bearer me-too"})
    assert r.status == 200
    sent = json.loads(r.body)
    assert sent["path"] == "/items"
    assert sent["headers"]["x-user"] == "bob"


def test_api_gets_the_user_not_the_token(gw):
    # api-auth's nr/set-headers!: X-User replaced, the token gone
    r = gw.request("GET", "/api/items",
                   headers={"Authorization": "Bearer let-me-in",
                            "X-User": "mallory", "X-Other": "kept"})
    assert r.status == 200
    sent = json.loads(r.body)["headers"]
    assert sent["x-user"] == "alice"
    assert "authorization" not in sent
    assert sent["x-other"] == "kept"
    r = gw.request("GET", "/api/items", headers={"X-User": "mallory"})
    assert r.status == 401


def test_dashboard_combines_two_backend_calls(gw):
    r = gw.request("GET", "/dashboard", headers=AUTH)
    assert r.status == 200
    assert r.header("Content-Type") == "application/json"
    d = json.loads(r.body)
    assert d["user"] == "alice"
    assert d["profile"]["path"] == "/profile"
    assert d["profile"]["query"] == "user=alice"
    assert d["orders"]["path"] == "/orders"
    assert d["orders"]["headers"]["x-user"] == "alice"
    assert gw.request("GET", "/dashboard").status == 401
