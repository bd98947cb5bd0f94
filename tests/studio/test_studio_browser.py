"""The studio in a real browser (the ``chromium_page`` and ``studio_server`` fixtures of tests/conftest.py:
Debian's headless ``chromium`` over the DevTools pipe, a real server process), with clicks and keys as a user
makes them, in a 1280 x 900 window.

Reject a predicted alignment (``r``), make a 1:2 item by clicking one professional and two consumer sentences
and pressing ``l``, then a 1:1 item inside it: both kept, and a warning on the page; reload and see all of it
kept; the gold file is the expected one; the key-help footer is whole in the window; a screenshot is not blank.
A view registered by a module of its own (``--plugin``) gets its button and its number key.
"""

from __future__ import annotations

import io
import json
import shutil

import pytest
from test_studio import A1, run_dir, toy_view  # noqa: F401  (run_dir, toy_view: fixtures)

# Whole runs: each test starts a command or a browser (`make test-e2e`; docs/development.md).
pytestmark = pytest.mark.e2e


def test_reject_and_link_by_keys_and_clicks_survive_a_reload(run_dir, tmp_path, studio_server, chromium_page):  # noqa: F811
    from PIL import Image, ImageStat

    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    server = studio_server(root, "--annotator", "web")
    browser = chromium_page
    browser.goto(server.url)
    browser.wait("document.querySelectorAll('#items li').length === 4")
    browser.assert_fully_visible("#keys-align")  # main cut its last line off at 900 px
    assert browser.js("$('progress-text').textContent") == "0 / 2 annotated"
    browser.key("r")  # reject the first predicted alignment (1 ↔ 1)
    browser.wait("$('status').textContent.startsWith('reject saved')")
    browser.click("#complex li:nth-child(2)")  # one professional sentence ...
    browser.click("#simple li:nth-child(3)")  # ... and two consumer sentences
    browser.click("#simple li:nth-child(4)")
    browser.wait("document.querySelectorAll('#simple li.selected').length === 2")
    browser.key("l")
    browser.wait("$('status').textContent.startsWith('link saved')")
    assert browser.js("$('warnings').hidden") is True
    # A 1:1 item inside the 1:2 one: kept, and said (sentences numbered from 1, as in the lists)
    browser.click("#complex li:nth-child(2)")
    browser.click("#simple li:nth-child(3)")
    browser.wait("document.querySelectorAll('#simple li.selected').length === 1")
    browser.key("l")
    browser.wait("!$('warnings').hidden")
    assert browser.js("$('warnings').textContent") == (
        "⚠ gold items 2 ↔ 3 and 2 ↔ 3+4 overlap: they share professional sentence 2 and consumer sentence 3 "
        "(gold mode scores both; reject the one you did not mean)"
    )
    assert "overlapping" in browser.js("$('status').textContent")

    browser.reload()
    browser.wait("document.querySelectorAll('#items li').length === 6")
    items = browser.js(
        "[...document.querySelectorAll('#items li')].map(li => [li.className, li.textContent])"
    )
    assert items[0][0].startswith("rejected") and items[0][1].startswith("1 ↔ 1")
    assert items[4][0] == "gold-only overlap" and items[4][1].startswith("⚠ 2 ↔ 3  gold")
    assert items[5][0] == "gold-only overlap" and items[5][1].startswith("⚠ 2 ↔ 3+4  gold")
    assert not browser.js("$('warnings').hidden")
    assert browser.js("$('progress-text').textContent") == "1 / 2 annotated"
    browser.assert_fully_visible("#keys-align")
    png = browser.screenshot()
    server.stop()
    expected = {"article_id": "a1", "lang": "en", "complex": A1, "simple": A1, "gold": [[1, 2], [1, [2, 3]]]}
    assert (root / "studio" / "gold-web.jsonl").read_text(encoding="utf-8") == json.dumps(expected) + "\n"
    image = Image.open(io.BytesIO(png)).convert("L")
    assert image.size == (1280, 900) and ImageStat.Stat(image).stddev[0] > 5  # not a blank page
    (tmp_path / "studio.png").write_bytes(png)


def test_a_view_of_your_own_gets_its_button_and_number_key(
    run_dir,  # noqa: F811
    tmp_path,
    toy_view,  # noqa: F811
    studio_server,
    chromium_page,
):
    """``--plugin toyview`` (tests/studio/test_studio.py's toy view, order 25): its button is the 3rd, key 3 shows it,
    its /api/info entry reaches its script; the outputs view (no test outputs here) keeps key 4, greyed with its
    reason, as does the simplify view (no systems) key 5: pressing 4 says why in the status line."""
    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    server = studio_server(root, "--plugin", "toyview", "--toy-level", "7", env={"PYTHONPATH": str(toy_view)})
    browser = chromium_page
    browser.goto(server.url)
    browser.wait("document.querySelectorAll('#items li').length === 4")
    buttons = browser.js(
        "[...document.querySelectorAll('#views button')]"
        ".map(b => [b.dataset.view, b.dataset.key, b.hidden, b.classList.contains('unavailable')])"
    )
    assert buttons == [
        ["align", "1", False, False],
        ["theta", "2", False, False],
        ["toy", "3", False, False],
        ["review", "4", False, True],
        ["simplify", "5", False, True],  # nor systems to simplify with
    ]
    assert browser.js("$('view-toy').hidden") is True
    browser.key("3")
    browser.wait("location.hash === '#toy' && !$('view-toy').hidden")
    assert browser.js("$('view-toy').textContent") == "toy level 7"
    assert browser.js("$('view-align').hidden && $('keys-align').hidden") is True
    browser.assert_fully_visible("#keys-toy")
    browser.key("4")  # the outputs view has nothing to show here: the key says why, the view stays
    browser.wait("$('status').textContent.startsWith('outputs: not available here: no system of this run')")
    assert browser.js("location.hash") == "#toy"
    browser.key("1")
    browser.wait("location.hash === '' && !$('view-align').hidden && $('view-toy').hidden")
