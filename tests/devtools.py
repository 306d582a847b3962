"""A headless Chromium page driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: JSON messages separated by NUL bytes on file descriptors 3 and 4),
the transport puppeteer uses, with Python's standard library only. Shared by the browser
tests (tests/cli/serve_browser_test.py, tests/reports/report_layout.py, finance_layout.py); each installs
nothing and skips (exit 77) without chromium.
"""

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def fail(msg):
    print(f"{os.path.basename(sys.argv[0])}: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def chromium_or_skip():
    """The chromium binary, or exit 77 (skipped): a browser test installs nothing."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print(f"{os.path.basename(sys.argv[0])}: SKIP: chromium is not installed; scripts/test.sh installs it",
              file=sys.stderr)
        sys.exit(77)
    return chromium


@contextlib.contextmanager
def report_page(path, element_id, width, height):
    """A page of a headless Chromium (or exit 77) showing the HTML file `path`, once it has
    loaded and holds the element with this id; Chromium and its profile go afterwards."""
    chromium = chromium_or_skip()
    with tempfile.TemporaryDirectory() as profile:
        page = Browser(chromium, profile, width, height)
        try:
            page.call("Page.navigate", {"url": "file://" + os.path.abspath(path)})
            page.wait(f"document.readyState === 'complete' && document.getElementById('{element_id}') !== null",
                      f"the element '{element_id}' of {path}")
            yield page
        finally:
            page.close()


def save_section(page, element_id, width, height, path):
    """A PNG of the page from the element with this id down, width x height CSS pixels."""
    top = page.js(f"document.getElementById('{element_id}').getBoundingClientRect().top + window.scrollY")
    shot = page.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                "clip": {"x": 0, "y": top, "width": width, "height": height,
                                                         "scale": 1}})["data"]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(base64.b64decode(shot))


class Browser:
    """One page of a headless Chromium, over the DevTools pipe."""

    def __init__(self, chromium, profile, width=1400, height=1100):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # In the child, fd 3: what Chromium reads, fd 4: what it writes (copied out of the
        # way first, so that one move cannot overwrite the other's source). The child keeps
        # fds 3 and 4 only (pass_fds), closing the rest after this runs.
        def fds():
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(r, 3)
            os.dup2(w, 4)
        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
             f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
            preexec_fn=fds, pass_fds=(3, 4), start_new_session=True, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(profile, "chromium.log"), "wb"))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.session = None
        self.console = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")

    def _message(self):
        while b"\0" not in self.buf:
            chunk = os.read(self.from_chrome, 1 << 16)
            if not chunk:
                fail("chromium closed the DevTools pipe (see its log)")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._message()
            if m.get("method") == "Runtime.exceptionThrown":
                self.console.append(m["params"]["exceptionDetails"].get("text", "exception"))
            if m.get("method") == "Runtime.consoleAPICalled":
                self.console.append(" ".join(str(a.get("value", "")) for a in m["params"]["args"]))
            if m.get("id") == self.next_id:
                if "error" in m:
                    fail(f"{method}: {m['error']}")
                return m["result"]

    def js(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            fail(f"script error in {expr!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait(self, expr, what, timeout_s=60):
        end = time.time() + timeout_s
        while time.time() < end:
            # While the page loads there may be no document.body yet.
            if self.js(f"(() => {{ try {{ return {expr}; }} catch (e) {{ return false; }} }})()"):
                return
            time.sleep(0.05)
        fail("timed out waiting for " + what)

    def close(self):
        # Browser.close lets Chromium end its renderer and helper processes, which write to
        # the profile until they exit: killing the parent alone left them writing while the
        # caller removed the profile ("Directory not empty"). The process group goes too,
        # whatever answers.
        try:
            os.write(self.to_chrome, json.dumps({"id": -1, "method": "Browser.close"}).encode() + b"\0")
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
