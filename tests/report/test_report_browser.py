"""The report as a reader sees it: Debian's headless ``chromium`` (``make system-deps``), networking off,
renders ``report.html``; the rendered DOM holds the tables and their numbers, and a screenshot is not blank.

Skipped where chromium is not installed, unless ``MULTIMSD_REQUIRE_CHROMIUM=1`` (CI sets it): then a missing
browser is a failure, so the test cannot pass there by being skipped.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path

import pytest
from helpers.chromium import chromium
from PIL import Image, ImageStat
from test_report import OVERLAPPING, SEPARABLE, make_run

from multimsd.report import build_report

# Whole runs: each test starts a command or a browser (`make test-e2e`; docs/development.md).
pytestmark = pytest.mark.e2e

TIMEOUT = 60


def run_chromium(exe: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    """Headless chromium with every way out blocked: names resolve nowhere and the proxy is a closed port."""
    cmd = [
        exe,
        "--headless",
        "--no-sandbox",  # the tests run as root in a container
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        "--disable-background-networking",
        "--disable-extensions",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",  # a fresh profile: no lock shared with another chromium
        *args,
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    assert res.returncode == 0, res.stderr[-2000:]
    return res


def test_report_renders_in_chromium(tmp_path):
    exe = chromium()
    run = make_run(tmp_path / "w", gold=True, comparisons=[SEPARABLE, OVERLAPPING])
    build_report(run)
    html = run / "report.html"
    url = html.resolve().as_uri()

    dom = run_chromium(exe, tmp_path / "p1", "--dump-dom", url).stdout
    assert dom.count("<table") == html.read_text().count("<table") >= 9
    assert "<b>44.44</b>" in dom and "[2.50, 19.75]" in dom and "too small to separate" in dom
    assert dom.count("<svg") >= 3  # the θ curve (one alignment method), the training curves, the sweep

    png = tmp_path / "report.png"
    run_chromium(exe, tmp_path / "p2", "--window-size=1280,1600", f"--screenshot={png}", url)
    assert png.stat().st_size > 0
    with Image.open(png) as im:
        assert im.size == (1280, 1600)
        stat = ImageStat.Stat(im.convert("L"))
        # a blank (all-white or all-black) page has no variance; text and tables have plenty
        assert stat.var[0] > 100, stat.var
        assert 0 < stat.mean[0] < 255


class DevTools:
    """A headless chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: commands
    in on fd 3, answers out on fd 4, each a JSON message ending in a NUL byte); no package needed. The
    JavaScript it evaluates is the test's, to read the page; the page itself has none."""

    def __init__(self, exe: str, profile: Path):
        import json
        import select

        self._json, self._select = json, select
        to_browser_r, self._out = os.pipe()
        self._in, from_browser_w = os.pipe()
        cmd = [
            exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
            "--disable-background-networking", "--disable-extensions", "--no-first-run",
            "--window-size=1280,900", f"--user-data-dir={profile}", "--remote-debugging-pipe",
        ]  # fmt: skip

        def child_fds() -> None:  # chromium reads fd 3 and writes fd 4 (moved out of the way first)
            import fcntl

            r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        # close_fds=False: the descriptors 3 and 4 made in child_fds must survive into chromium
        self.proc = subprocess.Popen(
            cmd, preexec_fn=child_fds, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf, self._id, self.session = b"", 0, None

    def send(self, method: str, **params):
        import time

        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if self.session:
            msg["sessionId"] = self.session
        os.write(self._out, self._json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                reply = self._json.loads(raw)
                if reply.get("id") == self._id:
                    assert "error" not in reply, reply
                    return reply["result"]
            left = deadline - time.monotonic()
            assert left > 0, f"chromium did not answer {method}"
            ready, _, _ = self._select.select([self._in], [], [], left)
            if ready:
                chunk = os.read(self._in, 1 << 16)
                assert chunk, "chromium closed the pipe"
                self._buf += chunk

    def js(self, expression: str):
        res = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        return res["result"].get("value")

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=TIMEOUT)
        os.close(self._in)
        os.close(self._out)


def test_examples_open_with_a_click_in_chromium(tmp_path):
    """The examples are folded per language; a real mouse click on a summary opens its block, and its rows,
    hidden before, are laid out and visible after (no script in the page: HTML's own <details>)."""
    import time

    from test_report import many_examples

    exe = chromium()
    run = many_examples(tmp_path / "w")
    build_report(run)
    url = (run / "report.html").resolve().as_uri()
    b = DevTools(exe, tmp_path / "p3")
    try:
        page = next(t for t in b.send("Target.getTargets")["targetInfos"] if t["type"] == "page")
        b.session = b.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        b.send("Page.navigate", url=url)
        deadline = time.monotonic() + TIMEOUT
        while b.js("document.readyState") != "complete" or not b.js(
            "!!document.querySelector('details.fold')"
        ):
            assert time.monotonic() < deadline, "the report did not load"
            time.sleep(0.1)
        assert b.js("document.scripts.length") == 0
        en = (
            "[...document.querySelectorAll('details.fold')].find(d => d.textContent.includes('Examples: en'))"
        )
        row = f"{en}.querySelector('tbody tr:last-child')"
        assert b.js(f"{en}.open") is False
        assert b.js(f"{row}.checkVisibility()") is False  # folded: the rows are not shown
        assert b.js(f"{row}.textContent").startswith("12")
        # scroll the summary into view and click its centre with the mouse
        box = b.js(
            f"(() => {{ const s = {en}.querySelector('summary'); s.scrollIntoView({{block: 'center'}});"
            " const r = s.getBoundingClientRect(); return [r.left + 20, r.top + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            b.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)
        deadline = time.monotonic() + TIMEOUT
        while not b.js(f"{en}.open"):
            assert time.monotonic() < deadline, "the click did not open the examples"
            time.sleep(0.1)
        assert b.js(f"{row}.checkVisibility()") is True and b.js(f"{row}.getBoundingClientRect().height") > 0
        assert "theta4 output 11" in b.js(f"{row}.innerText")
        # the other languages stay folded
        de = (
            "[...document.querySelectorAll('details.fold')].find(d => d.textContent.includes('Examples: de'))"
        )
        assert b.js(f"{de}.open") is False
    finally:
        b.close()


def test_chart_legends_apart_and_inside_in_chromium(tmp_path):
    """Long system labels (45 characters): in the page as Chromium lays it out, no two legend labels of a chart
    overlap and none runs past its chart's edge (where the SVG would cut it)."""
    import json
    import time

    from test_charts import LABELS

    exe = chromium()
    run = make_run(tmp_path / "w")
    meta = json.loads((run / "run.json").read_text())
    for name, label in zip(("copy", "theta1", "theta4"), LABELS, strict=False):
        meta["systems"][name]["label"] = label
    (run / "run.json").write_text(json.dumps(meta))
    build_report(run)
    b = DevTools(exe, tmp_path / "p4")
    try:
        page = next(t for t in b.send("Target.getTargets")["targetInfos"] if t["type"] == "page")
        b.session = b.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        b.send("Page.navigate", url=(run / "report.html").resolve().as_uri())
        deadline = time.monotonic() + TIMEOUT
        while b.js("document.readyState") != "complete" or not b.js("!!document.querySelector('svg.chart')"):
            assert time.monotonic() < deadline, "the report did not load"
            time.sleep(0.1)
        charts = b.js(
            "[...document.querySelectorAll('svg.chart')].map(svg => { const r = svg.getBoundingClientRect();"
            " return {title: svg.getAttribute('aria-label'), box: [r.left, r.top, r.right, r.bottom],"
            f" labels: [...svg.querySelectorAll('text')].filter(t => {json.dumps(LABELS[:3])}.includes(t.textContent))"
            ".map(t => { const b = t.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; })}; })"
        )
    finally:
        b.close()
    scores = [c for c in charts if c["title"].startswith("SARI per language")]
    assert len(scores) == 1 and len(scores[0]["labels"]) == 3
    for chart in charts:
        left, top, right, bottom = chart["box"]
        boxes = chart["labels"]
        for a, c in itertools.combinations(boxes, 2):
            assert a[2] <= c[0] or c[2] <= a[0] or a[3] <= c[1] or c[3] <= a[1], (chart["title"], a, c)
        for x0, y0, x1, y1 in boxes:
            assert left <= x0 and x1 <= right and top <= y0 and y1 <= bottom, (
                chart["title"],
                (x0, x1),
                chart["box"],
            )
