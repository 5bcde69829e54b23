"""A Compojure app with Ring's params, keyword-params and cookies
middleware, served through nginx."""

import urllib.parse

from harness import read_edn

LOCATIONS = """
        location /mw/ { jvm_content testapp.mw/app; }
"""


def test_route_param_is_decoded(ng):
    r = ng.get("/mw/hello/J%C3%BCrgen")
    assert r.status == 200
    assert r.text == "hello J\u00fcrgen"


def test_query_params(ng):
    r = ng.get("/mw/params?a=1&b=x%20y&b=z&c=%C3%A9")
    assert r.status == 200
    assert read_edn(r.text) == {":a": "1", ":b": ["x y", "z"], ":c": "\u00e9"}


def test_form_params(ng):
    form = urllib.parse.urlencode({"name": "J\u00fcrgen", "n": "2"})
    r = ng.request("POST", "/mw/form?q=query",
                   headers={"Content-Type":
                            "application/x-www-form-urlencoded"},
                   body=form.encode())
    assert r.status == 200
    got = read_edn(r.text)
    assert got[":params"] == {":name": "J\u00fcrgen", ":n": "2", ":q": "query"}
    assert got[":form-params"] == {"name": "J\u00fcrgen", "n": "2"}


def test_cookies_read_and_set(ng):
    r = ng.get("/mw/cookies", headers={"Cookie": "a=1; b=hello%20world"})
    assert r.status == 200
    assert read_edn(r.text) == {"a": {":value": "1"},
                                "b": {":value": "hello world"}}
    cookies = sorted(r.header_all("Set-Cookie"))
    assert len(cookies) == 2, r.headers
    assert cookies[0].startswith("count=2;") and "Max-Age=60" in cookies[0]
    assert cookies[1].startswith("visited=yes;") and "Path=/" in cookies[1]


def test_two_cookie_headers(ng):
    data = ng.raw(b"GET /mw/cookies HTTP/1.1\r\nHost: localhost\r\n"
                  b"Cookie: a=1\r\nCookie: b=2\r\nConnection: close\r\n\r\n")
    body = data.split(b"\r\n\r\n", 1)[1]
    assert read_edn(body.decode()) == {"a": {":value": "1"},
                                       "b": {":value": "2"}}


def test_not_found_route(ng):
    r = ng.get("/mw/nope")
    assert r.status == 404
    assert r.text == "no such route"
