"""Headless Chromium (Debian's `chromium`) driven over the DevTools
protocol: a small synchronous client over the browser's WebSocket
endpoint (--remote-debugging-port on the loopback of the namespace the
test runs in), enough to open pages in separate browser contexts (each
its own cookies), evaluate JavaScript, type, and take screenshots."""

import base64
import itertools
import json
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time

from websockets.sync.client import connect

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


class DevToolsError(Exception):
    pass


class Chromium:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="njc-chromium-")
        # as root Chromium needs --no-sandbox; the test's own loopback only
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", "--no-first-run",
             "--no-default-browser-check", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", "--user-data-dir=" + self.profile,
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.stderr = []
        url = self._endpoint()
        self.ws = connect(url, proxy=None, max_size=None, ping_interval=None,
                          compression=None, open_timeout=10)
        self.ids = itertools.count(1)
        self.pending = {}
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _endpoint(self):
        found = queue.Queue()

        def drain():
            for line in self.proc.stderr:
                self.stderr.append(line)
                m = re.search(r"DevTools listening on (ws://\S+)", line)
                if m:
                    found.put(m.group(1))
        threading.Thread(target=drain, daemon=True).start()
        try:
            return found.get(timeout=60)
        except queue.Empty:
            self.close()
            raise DevToolsError("chromium did not start:\n" +
                                "".join(self.stderr[-20:]))

    def _read(self):
        try:
            for raw in self.ws:
                message = json.loads(raw)
                if "id" in message:
                    with self.lock:
                        q = self.pending.pop(message["id"], None)
                    if q:
                        q.put(message)
        except Exception:
            pass

    def send(self, method, params=None, session=None, timeout=15):
        i = next(self.ids)
        q = queue.Queue()
        with self.lock:
            self.pending[i] = q
        message = {"id": i, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        try:
            answer = q.get(timeout=timeout)
        except queue.Empty:
            raise DevToolsError("%s: no answer in %ds" % (method, timeout))
        if "error" in answer:
            raise DevToolsError("%s: %s" % (method, answer["error"]))
        return answer.get("result", {})

    def page(self, url, cookies=()):
        """A page in a browser context of its own, its cookies set first
        (name, value, domain)."""
        context = self.send("Target.createBrowserContext")["browserContextId"]
        if cookies:
            self.send("Storage.setCookies", {
                "browserContextId": context,
                "cookies": [{"name": n, "value": v, "domain": d, "path": "/"}
                            for n, v, d in cookies]})
        target = self.send("Target.createTarget", {
            "url": "about:blank", "browserContextId": context})["targetId"]
        session = self.send("Target.attachToTarget", {
            "targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        page.send("Page.enable")
        page.send("Page.navigate", {"url": url})
        return page

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser, session):
        self.browser = browser
        self.session = session

    def send(self, method, params=None, timeout=15):
        return self.browser.send(method, params, self.session, timeout)

    def eval(self, expression):
        r = self.send("Runtime.evaluate", {"expression": expression,
                                           "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise DevToolsError("%s: %s" % (expression,
                                            r["exceptionDetails"].get("text")))
        return r["result"].get("value")

    def wait(self, expression, timeout=60):
        """Until expression is true in the page; answers the seconds it
        took."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            try:
                if self.eval(expression):
                    return time.monotonic() - start
            except DevToolsError:
                pass                 # the page is still loading
            time.sleep(0.05)
        raise AssertionError("%s: not true within %ds" % (expression, timeout))

    def type(self, text):
        """Types text into the focused field and presses Enter."""
        self.send("Input.insertText", {"text": text})
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", {
                "type": kind, "key": "Enter", "code": "Enter",
                "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13,
                **({"text": "\r"} if kind == "keyDown" else {})})

    def screenshot(self, path):
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path


def available():
    return os.access(CHROMIUM, os.X_OK)
