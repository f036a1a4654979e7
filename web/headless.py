"""Drive headless Chromium from Python with the standard library only: the Chrome DevTools
Protocol over --remote-debugging-pipe (JSON messages ended by NUL on file descriptors 3 and 4), so
no websocket client, webdriver or node is needed. Used by tests/test_web.py and
benchmarks/web_speed.py (Debian's chromium package: /usr/bin/chromium).

  with Browser() as b:
      page = b.new_page("http://127.0.0.1:8000/?tool=mem")
      page.wait_for("window.llmcalc && window.llmcalc.runs >= 1", timeout=60)
      print(page.evaluate("window.llmcalc.last.stdout"))
      page.screenshot("/tmp/mem.png")
"""
import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

# As the workplace's probe starts it: no sandbox (root), no GPU, and nothing that calls home
# (this machine's network is closed; background connections would be refused many at a time).
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio")


def find_chromium():
    """Debian's chromium (or the one CHROMIUM names); None when there is none."""
    for cand in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if cand and os.path.exists(cand):
            return cand
    return None


class CDPError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with a fresh profile; close() (or `with`) ends it."""

    def __init__(self, executable=None, width=1400, height=1000):
        self.executable = executable or find_chromium()
        if not self.executable:
            raise CDPError("no chromium: apt-get install chromium")
        self.profile = tempfile.mkdtemp(prefix="llmcalc-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # above the standard descriptors, so the child's dup2 onto 3 and 4 cannot clobber them
        hi_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 50)
        hi_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 50)
        for fd in (to_child_r, from_child_w):
            os.close(fd)

        def pipes():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        args = [self.executable, *FLAGS, f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}", "--remote-debugging-pipe", "about:blank"]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=pipes, close_fds=False)
        os.close(hi_r)
        os.close(hi_w)
        self._next = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._replies = {}
        self.events = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_child, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._replies[None] = "closed"
                    self._cond.notify_all()
                return
            buf += chunk
            *messages, buf = buf.split(b"\0")
            with self._cond:
                for raw in messages:
                    msg = json.loads(raw)
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:  # the last few hundred events (console, exceptions), for debugging
                        self.events = self.events[-500:] + [msg]
                self._cond.notify_all()

    def send(self, method, params=None, session=None, timeout=60):
        with self._lock:
            self._next += 1
            mid = self._next
            msg = {"id": mid, "method": method, "params": params or {}}
            if session:
                msg["sessionId"] = session
            os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while mid not in self._replies:
                if None in self._replies:
                    raise CDPError(f"chromium closed the pipe during {method}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CDPError(f"{method}: no reply in {timeout} s")
                self._cond.wait(left)
            reply = self._replies.pop(mid)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    def new_page(self, url="about:blank"):
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        page.send("Page.enable")
        page.send("Runtime.enable")
        if url != "about:blank":
            page.goto(url)
        return page

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except CDPError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Page:
    """One tab: navigate, evaluate JavaScript, wait for a condition, take a screenshot."""

    def __init__(self, browser, target, session):
        self.browser, self.target, self.session = browser, target, session

    def send(self, method, params=None, timeout=60):
        return self.browser.send(method, params, self.session, timeout)

    def goto(self, url):
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression, timeout=60):
        """The value of a JavaScript expression (a promise is awaited), as JSON gives it."""
        res = self.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                             "returnByValue": True}, timeout)
        if "exceptionDetails" in res:
            det = res["exceptionDetails"]
            text = det.get("exception", {}).get("description") or det.get("text")
            raise CDPError(f"{expression[:80]}: {text}")
        return res["result"].get("value")

    def wait_for(self, expression, timeout=60, poll=0.05):
        """Poll until the expression is truthy; returns its value. CDPError after `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(expression)
            except CDPError:
                value = None  # the page is still navigating
            if value:
                return value
            if time.monotonic() > deadline:
                raise CDPError(f"waited {timeout} s for {expression}")
            time.sleep(poll)

    def screenshot(self, path, full_page=True):
        params = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"],
                              "scale": 1}
        data = self.send("Page.captureScreenshot", params)["data"]
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))
        return path
