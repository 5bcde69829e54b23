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
from clients import ARTEFACTS, get


def keep_screenshots(pages, stem):
    """A failed test's pages, as build/cluster-test/STEM-HOST.png."""
    for h, page in pages.items():
        try:
            path = page.screenshot(os.path.join(ARTEFACTS,
                                                "%s-%s.png" % (stem, h)))
            print("screenshot:", path)
        except Exception as e:
            print("no screenshot of %s: %s" % (h, e))


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
            assert time.monotonic() - start < 60, "no message crosses"
        text = "hello from %s at %d" % (hosts[0], time.time())
        a.eval("text.focus(), true")
        a.type(text)
        typed = time.monotonic()
        b.wait("log.textContent.includes(%s)" % json.dumps(text), 60)
        across = time.monotonic() - typed
        a.wait("log.textContent.includes(%s)" % json.dumps(text), 60)
        assert a.eval("text.value") == ""          # the form was sent
        njc.figures["browser"] = {"typed_to_other_host_ms":
                                  round(across * 1000, 1)}
    except BaseException:
        keep_screenshots(pages, "browser")
        raise


def test_a_page_whose_host_dies_chats_on_through_another(njc, browser):
    """The page's chat socket is on app2; app2's nginx is killed. The page
    reconnects by itself, the front sends it to a live host, and a message
    typed on a page of app1 after that reaches it."""
    victim, other = "app2", "app1"
    pages = {h: browser.page(njc.live, cookies=[(
        "njc_route", njc.routes[h], njc.front)]) for h in (victim, other)}
    try:
        for page in pages.values():
            page.wait("typeof ws !== 'undefined' && ws.readyState === 1")
        a, b = pages[other], pages[victim]
        killed = time.monotonic()
        njc.kill(victim)
        b.wait("log.textContent.includes('reconnecting')", 60)
        b.wait("ws.readyState === 1", 60)
        back = time.monotonic() - killed
        # a message sent now reaches the page on its new host (the
        # bridges carry it across if that is not app1)
        start = time.monotonic()
        n = 0
        while not b.eval("log.textContent.includes('after-kill')"):
            n += 1
            a.eval("ws.send('after-kill %d'), true" % n)
            time.sleep(0.2)
            assert time.monotonic() - start < 60, \
                "no message reaches the page after it reconnected"
        text = "typed after the kill at %d" % time.time()
        a.eval("text.focus(), true")
        a.type(text)
        b.wait("log.textContent.includes(%s)" % json.dumps(text), 60)
        njc.figures["browser_reconnect_ms"] = round(back * 1000, 1)
    except BaseException:
        keep_screenshots(pages, "browser-reconnect")
        raise
    finally:
        njc.start(victim)
        # the front tries the host again after fail_timeout (5 s): the
        # tests after this one find all three hosts serving
        until = time.monotonic() + 60
        while time.monotonic() < until:
            try:
                if get(njc.live, cookie=njc.route(victim)).host == victim:
                    break
            except Exception:
                pass
            time.sleep(0.2)
