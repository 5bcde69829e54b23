"""A JAX-RS application (examples/servlet-jaxrs: Jersey 4 from Maven
Central, packaged as a WAR with no web.xml) served by `nginx-jvm run --war`
(issue 47, item 2): Jersey's ServletContainerInitializer finds it, JSON in
and out through Jackson, its exception mapper, its 404s, through real
HTTP. One worker: the notes are kept in the JVM's memory, each worker's
own (docs/servlet.md, "Several workers are several applications")."""

import json

import pytest

from harness import ROOT, maven_package
from test_servlet_war import cache, launcher, shared  # noqa: F401

EXAMPLE = ROOT / "examples" / "servlet-jaxrs"
BUILD = ROOT / "build" / "servlet-jaxrs"


@pytest.fixture(scope="module")
def war():
    return maven_package(EXAMPLE, BUILD, "servlet-jaxrs.war")


@pytest.fixture(scope="module")
def app(war, cache, servlet_mode):
    with launcher(war, cache, "--context-path", "/rest",
                  mode=servlet_mode) as n:
        yield n


def post(app, path, obj):
    return app.request("POST", path, body=json.dumps(obj).encode(),
                       headers={"Content-Type": "application/json"})


def test_text_resource(app):
    r = app.get("/rest/api/notes/hello?name=%C3%A9t%C3%A9")
    assert r.status == 200
    assert r.text == "hello été from JAX-RS"
    assert r.header("Content-Type") == "text/plain;charset=UTF-8"


def test_json_in_and_out(app):
    r = post(app, "/rest/api/notes", {"text": "buy milk, été"})
    assert r.status == 201, r
    note = json.loads(r.body)
    assert note["text"] == "buy milk, été"
    # the Location Jersey builds from the request: nginx's host and port
    loc = r.header("Location")
    assert loc == "http://127.0.0.1:%d/rest/api/notes/%d" % (app.port,
                                                           note["id"])
    r = app.get("/rest/api/notes/%d" % note["id"])
    assert r.status == 200
    assert r.header("Content-Type") == "application/json"
    assert json.loads(r.body) == note
    found = json.loads(app.get("/rest/api/notes?q=milk").body)
    assert note in found
    assert app.request("DELETE", "/rest/api/notes/%d"
                       % note["id"]).status == 204
    assert app.get("/rest/api/notes/%d" % note["id"]).status == 404


def test_bad_input(app):
    # no text: the resource's BadRequestException
    assert post(app, "/rest/api/notes", {"text": " "}).status == 400
    # not JSON at all: the application's mapper (BadJson)
    r = app.request("POST", "/rest/api/notes", body=b"{not json",
                    headers={"Content-Type": "application/json"})
    assert r.status == 400
    assert json.loads(r.body) == {"error": "not the JSON of a note"}
    # a type the resource does not take
    r = app.request("POST", "/rest/api/notes", body=b"x",
                    headers={"Content-Type": "text/plain"})
    assert r.status == 415
    # a path parameter that is not a number
    assert app.get("/rest/api/notes/abc").status == 404


def test_exception_mapper(app):
    r = app.get("/rest/api/notes/boom")
    assert r.status == 400
    assert json.loads(r.body) == {"error": "a bad argument, on purpose"}


def test_method_not_allowed_and_unknown_paths(app):
    r = app.request("PUT", "/rest/api/notes/hello")
    assert r.status == 405
    assert app.get("/rest/api/nothing").status == 404
    assert app.get("/rest/elsewhere").status == 404
