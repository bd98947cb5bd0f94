"""The report as a reader sees it: Debian's headless ``chromium`` (``make system-deps``), networking off,
renders ``report.html``; the rendered DOM holds the tables and their numbers, and a screenshot is not blank.

Skipped where chromium is not installed, unless ``MULTIMSD_REQUIRE_CHROMIUM=1`` (CI sets it): then a missing
browser is a failure, so the test cannot pass there by being skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image, ImageStat
from test_report import OVERLAPPING, SEPARABLE, make_run

from multimsd.report import build_report

TIMEOUT = 60


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("MULTIMSD_REQUIRE_CHROMIUM") == "1":
            pytest.fail("chromium is not installed (make system-deps) and MULTIMSD_REQUIRE_CHROMIUM=1")
        pytest.skip("chromium is not installed (make system-deps)")
    return exe


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
