"""The hand-written Chromium client the browser tests drive the studio and the report with.

A headless Debian ``chromium`` spoken to over the DevTools protocol on a pipe (fds 3 / 4, JSON messages ended by
NUL): no driver, no npm package, no port. :func:`chromium` finds the executable (a skip where it is absent,
a failure where ``MULTIMSD_REQUIRE_CHROMIUM=1``, as in CI); :class:`Chromium` opens one page and clicks, types,
waits and measures in it. The ``chromium_page`` fixture of ``tests/conftest.py`` hands one to a test.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("MULTIMSD_REQUIRE_CHROMIUM") == "1":
            pytest.fail("chromium is not installed (make system-deps) and MULTIMSD_REQUIRE_CHROMIUM=1")
        pytest.skip("chromium is not installed (make system-deps)")
    return exe


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

    def key(self, key: str, ctrl: bool = False) -> None:
        """One key press as a keyboard makes it (a printable key also types its character); ``ctrl``: with
        Control held (no character typed then)."""
        text = key if len(key) == 1 and not ctrl else ""
        mods = 2 if ctrl else 0
        self.send("Input.dispatchKeyEvent", session=True, type="keyDown", key=key, text=text, modifiers=mods)
        self.send("Input.dispatchKeyEvent", session=True, type="keyUp", key=key, modifiers=mods)

    def type(self, text: str) -> None:
        """``text`` typed key by key (each character a key press: the page's key handlers see every one)."""
        for ch in text:
            self.key(ch)

    def click(self, selector: str, shift: bool = False) -> None:
        """A left click in the middle of the element (scrolled into view); ``shift``: with Shift held."""
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
                modifiers=8 if shift else 0,
            )

    def goto(self, url: str) -> None:
        self.send("Page.navigate", session=True, url=url)

    def reload(self) -> None:
        self.send("Page.reload", session=True)

    def window(self, width: int, height: int) -> None:
        """The page's viewport, in CSS pixels (as a browser window of that inner size)."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def assert_fully_visible(self, selector: str) -> dict:
        """The element's box lies inside the window and nothing inside it is cut off (its content fits)."""
        box = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); const r = e.getBoundingClientRect();"
            " return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, height: r.height,"
            " scroll: e.scrollHeight, client: e.clientHeight, width: innerWidth, window: innerHeight}; })()"
        )
        assert box["height"] > 0 and box["top"] >= 0 and box["left"] >= 0, (selector, box)
        assert box["bottom"] <= box["window"] and box["right"] <= box["width"], (selector, box)
        assert box["scroll"] <= box["client"], (selector, box)
        return box

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
