"""The outputs view in a real browser (the ``chromium_page`` and ``studio_server`` fixtures of tests/conftest.py):
rate two items blind, by keys and by a click; kill the server with SIGKILL, start it again on the same port,
reload: both items' ratings are shown; the ratings file holds them; the key-help footer is whole in a
1280 x 900 window; a screenshot is not blank. With ``MULTIMSD_STUDIO_SCREENSHOT=FILE`` the screenshot is also
written there (docs/studio-review.png is made so)."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from test_studio import run_dir  # noqa: F401  (run_dir: the fixture)
from test_studio_review import NAMES, OUTPUTS, REFS, add_systems

# Whole runs: each test starts a command or a browser (`make test-e2e`; docs/development.md).
pytestmark = pytest.mark.e2e

if TYPE_CHECKING:
    from helpers.chromium import Chromium


def on(browser: Chromium, slot: str, crit: str) -> int | None:
    """The value shown as chosen for ``slot``'s ``crit`` (None: none)."""
    return browser.js(
        f'(() => {{ const b = document.querySelector(\'#view-review .out[data-slot="{slot}"] '
        f'.rate[data-crit="{crit}"] button.on\'); return b ? Number(b.textContent) : null; }})()'
    )


def test_rate_two_items_blind_kill_the_server_restart_and_nothing_is_lost(
    run_dir,  # noqa: F811
    tmp_path,
    studio_server,
    chromium_page,
):
    from PIL import Image, ImageStat

    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    outputs = {s: {"en": list(o["en"])} for s, o in OUTPUTS.items()}
    outputs["gamma"]["en"][2] = ""  # a system that wrote nothing for item 3
    add_systems(root, outputs, [r for r in REFS if r["lang"] == "en"])
    server = studio_server(root, "--annotator", "web")
    browser = chromium_page
    browser.goto(server.url + "#review")
    browser.wait("document.querySelectorAll('#view-review .out').length === 3")
    browser.assert_fully_visible("#keys-review")
    assert browser.js("document.getElementById('review-pos').textContent") == "item 1 / 3"
    assert browser.js("document.getElementById('review-blind').checked") is True
    shown = browser.js("document.getElementById('view-review').innerText")
    assert not any(name in shown for name in NAMES)  # blind: no system name on the page
    assert browser.js("document.querySelectorAll('#view-review .novel').length") > 0  # highlights drawn
    assert browser.js("document.querySelectorAll('#view-review .term').length") > 0
    # item 1: B's simplicity by keys (j: next output, s then 4), C's fluency by a click on 2
    browser.key("j")
    browser.key("s")
    browser.key("4")
    browser.wait("$('status').textContent.startsWith('rating saved (#1): B simplicity 4')")
    browser.click('#view-review .out[data-slot="C"] .rate[data-crit="fluency"] button:nth-child(3)')
    browser.wait("$('status').textContent.startsWith('rating saved (#2): C fluency 2')")
    texts_item1 = browser.js(
        "[...document.querySelectorAll('#view-review .out .text')].map(p => p.textContent)"
    )
    # item 2: A's meaning by keys
    browser.key("n")
    browser.wait("document.getElementById('review-pos')?.textContent === 'item 2 / 3'")
    browser.key("m")
    browser.key("5")
    browser.wait("$('status').textContent.startsWith('rating saved (#3): A meaning 5')")
    assert browser.js("document.getElementById('review-progress').textContent").startswith(
        "0 / 3 items rated"
    )

    server.kill()  # killed right after the acknowledged ratings
    server = studio_server(root, "--annotator", "web", "--port", str(server.port))
    browser.reload()
    browser.wait("document.getElementById('review-pos')?.textContent === 'item 2 / 3'")
    browser.wait("document.querySelectorAll('#view-review .out').length === 3")
    assert on(browser, "A", "meaning") == 5
    assert browser.js("document.getElementById('review-progress').textContent").startswith(
        "0 / 3 items rated (2 begun)"
    )
    browser.key("p")
    browser.wait("document.getElementById('review-pos')?.textContent === 'item 1 / 3'")
    browser.wait("document.querySelectorAll('#view-review .rate button.on').length === 2")
    assert on(browser, "B", "simplicity") == 4 and on(browser, "C", "fluency") == 2
    assert on(browser, "A", "simplicity") is None
    # the same blind order after the restart
    assert browser.js(
        "[...document.querySelectorAll('#view-review .out .text')].map(p => p.textContent)"
    ) == (texts_item1)
    png = browser.screenshot()
    # item 3: gamma's empty output reads "(empty)", as the report prints it, and can still be rated
    for item in (2, 3):
        browser.key("n")
        browser.wait(f"document.getElementById('review-pos')?.textContent === 'item {item} / 3'")
    browser.wait("document.querySelectorAll('#view-review .out').length === 3")
    empty = browser.js(
        "[...document.querySelectorAll('#view-review .out .text.empty')].map(p => p.textContent)"
    )
    assert empty == ["(empty)"]
    assert (
        browser.js(
            "document.querySelector('#view-review .text.empty').closest('.out').querySelectorAll('.rate button').length"
        )
        == 15
    )
    server.stop()
    ratings = [json.loads(x) for x in (root / "studio" / "ratings-web.jsonl").read_text().splitlines()]
    by_text = {OUTPUTS[s]["en"][0]: s for s in NAMES}
    b, c = by_text[texts_item1[1]], by_text[texts_item1[2]]
    got = {
        (r["item"], r["system"]): (r["simplicity"], r["meaning"], r["fluency"], r["blind"]) for r in ratings
    }
    assert got[(0, b)] == (4, None, None, True) and got[(0, c)] == (None, None, 2, True)
    assert len(got) == 3 and [v for k, v in got.items() if k[0] == 1] == [(None, 5, None, True)]
    image = Image.open(io.BytesIO(png)).convert("L")
    assert image.size[0] > 600 and ImageStat.Stat(image).stddev[0] > 5  # not a blank page
    (tmp_path / "studio-review.png").write_bytes(png)
    if os.environ.get("MULTIMSD_STUDIO_SCREENSHOT"):
        Path(os.environ["MULTIMSD_STUDIO_SCREENSHOT"]).write_bytes(png)
