"""The studio in a real browser: Debian's headless ``chromium`` driven over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: no extra Python package, no port), with clicks and keys as a user makes them.

Against a real server process: reject a predicted alignment (``r``), make a 1:2 item by clicking one
professional and two consumer sentences and pressing ``l``, reload and see both kept; the gold file is the
expected one; a screenshot is not blank. Skipped where chromium is not installed, unless
``MULTIMSD_REQUIRE_CHROMIUM=1`` (CI sets it).
"""

from __future__ import annotations

import base64
import fcntl
import io
import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

from test_report_browser import chromium
from test_studio import A1, _start, run_dir  # noqa: F401  (run_dir: the fixture)

TIMEOUT = 60


def _above_9(fd: int) -> int:
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


class Chromium:
    """A headless chromium and one page, spoken to in DevTools messages (JSON, NUL-terminated) on fds 3 / 4."""

    def __init__(self, exe: str, profile: Path):
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # The child's ends moved above 9, so that putting them on fds 3 and 4 cannot overwrite one another.
        to_child_r, from_child_w = (_above_9(fd) for fd in (to_child_r, from_child_w))
        args = [
            "--headless",
            "--no-sandbox",  # the tests run as root in a container
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--remote-debugging-pipe",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",  # nothing but the studio resolves
            "--disable-background-networking",
            "--disable-extensions",
            "--no-first-run",
            "--window-size=1280,800",
            f"--user-data-dir={profile}",
            "about:blank",
        ]
        # chromium reads commands on fd 3 and writes answers on fd 4
        script = f'exec "$0" "$@" 3<&{to_child_r} 4>&{from_child_w} {to_child_r}<&- {from_child_w}>&-'
        self.proc = subprocess.Popen(
            ["bash", "-c", script, exe, *args],
            pass_fds=(to_child_r, from_child_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.send("Page.enable", session=True)
        self.send("Runtime.enable", session=True)

    def _message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            if not select.select([self._from_child], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise AssertionError("chromium did not answer")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise AssertionError("chromium closed its pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, session: bool = False, **params) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            m = self._message(deadline)
            if m.get("id") == self._id:
                assert "error" not in m, m["error"]
                return m.get("result", {})

    def js(self, expression: str):
        r = self.send("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        assert "exceptionDetails" not in r, (expression, r["result"].get("description"))
        return r["result"].get("value")

    def wait(self, expression: str, timeout: float = TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.1)
        status = self.js("document.getElementById('status').textContent")
        raise AssertionError(f"timed out waiting for {expression}; status line: {status!r}")

    def key(self, key: str) -> None:
        text = key if len(key) == 1 else ""
        self.send("Input.dispatchKeyEvent", session=True, type="keyDown", key=key, text=text)
        self.send("Input.dispatchKeyEvent", session=True, type="keyUp", key=key)

    def click(self, selector: str) -> None:
        box = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView();"
            " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                session=True,
                type=kind,
                x=box[0],
                y=box[1],
                button="left",
                clickCount=1,
            )

    def screenshot(self) -> bytes:
        return base64.b64decode(self.send("Page.captureScreenshot", session=True)["data"])

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._to_child)
        os.close(self._from_child)


def test_reject_and_link_by_keys_and_clicks_survive_a_reload(run_dir, tmp_path):  # noqa: F811
    from PIL import Image, ImageStat

    exe = chromium()
    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    server, url = _start(root, "--annotator", "web")
    browser = Chromium(exe, tmp_path / "profile")
    try:
        browser.send("Page.navigate", session=True, url=url)
        browser.wait("document.querySelectorAll('#items li').length === 4")
        assert browser.js("$('progress-text').textContent") == "0 / 2 annotated"
        browser.key("r")  # reject the first predicted alignment (1 ↔ 1)
        browser.wait("$('status').textContent.startsWith('reject saved')")
        browser.click("#complex li:nth-child(2)")  # one professional sentence ...
        browser.click("#simple li:nth-child(3)")  # ... and two consumer sentences
        browser.click("#simple li:nth-child(4)")
        browser.wait("document.querySelectorAll('#simple li.selected').length === 2")
        browser.key("l")
        browser.wait("$('status').textContent.startsWith('link saved')")

        browser.send("Page.reload", session=True)
        browser.wait("document.querySelectorAll('#items li').length === 5")
        items = browser.js(
            "[...document.querySelectorAll('#items li')].map(li => [li.className, li.textContent])"
        )
        assert items[0][0].startswith("rejected") and items[0][1].startswith("1 ↔ 1")
        assert items[4][0].startswith("gold-only") and items[4][1].startswith("2 ↔ 3+4")
        assert browser.js("$('progress-text').textContent") == "1 / 2 annotated"
        png = browser.screenshot()
    finally:
        browser.close()
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        server.stdout.close()
        server.stderr.close()
    expected = {"article_id": "a1", "lang": "en", "complex": A1, "simple": A1, "gold": [[1, [2, 3]]]}
    assert (root / "studio" / "gold-web.jsonl").read_text(encoding="utf-8") == json.dumps(expected) + "\n"
    image = Image.open(io.BytesIO(png)).convert("L")
    assert image.size[0] > 600 and ImageStat.Stat(image).stddev[0] > 5  # not a blank page
    (tmp_path / "studio.png").write_bytes(png)
