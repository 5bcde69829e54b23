"""examples/live in a real browser (headless Chromium, Debian's
`chromium`): two pages through the front, each sticky to another
application host by its njc_route cookie; a message typed in one appears
in the other (it crosses Redis), and both show the server's clock
(server-sent events). On failure, screenshots of both pages are kept in
build/cluster-test/."""

import json
import os
import time

import pytest

import chromium
from clients import ARTEFACTS


@pytest.fixture
def browser():
    if not chromium.available():
        pytest.skip("chromium is not installed "
                    "(scripts/install-deps.sh cluster installs Debian's)")
    b = chromium.Chromium()
    yield b
    b.close()


def test_chat_across_hosts_in_chromium(njc, browser):
    hosts = ("app1", "app3")
    pages = {h: browser.page(njc.live, cookies=[(
        "njc_route", njc.routes[h], njc.front)]) for h in hosts}
    try:
        for h, page in pages.items():
            page.wait("typeof ws !== 'undefined' && ws.readyState === 1")
            # the page and its WebSocket came from the host its cookie names
            served_by = page.eval(
                "fetch('/', {cache: 'no-store'})"
                ".then(r => r.headers.get('X-Njc-Host'))")
            assert served_by == h
            # server-sent events: the clock runs
            page.wait(r"/^\d\d:\d\d:\d\d$/.test(clock.textContent)")
        a, b = (pages[h] for h in hosts)
        # the hosts' bridges are subscribed once a chat socket opened on
        # each; a first message may go out before: wait for one to cross
        start = time.monotonic()
        while not b.eval("log.textContent.includes('warm-up')"):
            a.eval("ws.send('warm-up'), true")
            time.sleep(0.2)
            assert time.monotonic() - start < 20, "no message crosses"
        text = "hello from %s at %d" % (hosts[0], time.time())
        a.eval("text.focus(), true")
        a.type(text)
        typed = time.monotonic()
        b.wait("log.textContent.includes(%s)" % json.dumps(text), 10)
        across = time.monotonic() - typed
        a.wait("log.textContent.includes(%s)" % json.dumps(text), 5)
        assert a.eval("text.value") == ""          # the form was sent
        njc.figures["browser"] = {"typed_to_other_host_ms":
                                  round(across * 1000, 1)}
    except BaseException:
        for h, page in pages.items():
            try:
                path = page.screenshot(os.path.join(
                    ARTEFACTS, "browser-%s.png" % h))
                print("screenshot:", path)
            except Exception as e:
                print("no screenshot of %s: %s" % (h, e))
        raise
