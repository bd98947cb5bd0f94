"""The simplify view in a real browser (the ``chromium_page`` and ``studio_server`` fixtures of tests/conftest.py),
driven by keys and clicks: the run's best system is selected and the others that cannot simplify are listed
but not selectable; a paragraph typed key by key (its digits stay in the text box, they do not switch the view)
and Ctrl+Enter give one row per sentence with the outputs the API gives, the dose's sentence flagged with its
reason and the source's term marked; another system picked with the arrow keys and the button simplifies with
it; Esc leaves the text box and 1 switches view again; a screenshot is not blank. With
``MULTIMSD_STUDIO_SCREENSHOT=FILE`` the screenshot is also written there (docs/studio-simplify.png is made so)."""

from __future__ import annotations

import io
import json
import os
import shutil
import urllib.request
from pathlib import Path

import pytest
from test_studio import run_dir  # noqa: F401  (run_dir: the fixture)
from test_studio_simplify import add_systems, save

# Whole runs: each test starts a command or a browser (`make test-e2e`; docs/development.md).
pytestmark = pytest.mark.e2e

TEXT = "Take 5 mg twice daily. Asthma narrows the airways. Do not drive."


def api(url: str, body: dict) -> dict:
    req = urllib.request.Request(
        url + "api/simplify", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def test_type_a_paragraph_simplify_it_with_two_systems_and_see_the_flags(
    run_dir,  # noqa: F811
    tmp_path,
    studio_server,
    chromium_page,
):
    from PIL import Image, ImageStat

    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    add_systems(root)
    # a second system that can simplify: the same model, decoding 3 new tokens at most
    short = {"kind": "causal", "pretrained": "tiny:llama", "lora": {"enabled": False}}
    save(
        root,
        "zero_shot_short",
        {"model": short, "mode": "icl", "icl": {"shots": 0}, "eval": {"max_new_tokens": 3}},
    )
    record = json.loads((root / "run.json").read_text(encoding="utf-8"))
    record["systems"]["zero_shot_short"] = {"kind": "icl"}
    (root / "run.json").write_text(json.dumps(record), encoding="utf-8")

    server = studio_server(root, "--annotator", "web")
    browser = chromium_page
    browser.goto(server.url + "#simplify")
    browser.wait("document.querySelectorAll('#simplify-system option').length === 5")
    browser.assert_fully_visible("#keys-simplify")
    assert browser.js("$('simplify-system').value") == "zero_shot"  # the ranking's best with a model
    assert browser.js("$('simplify-lang').value") == "en"  # the first it was trained on
    disabled = browser.js("[...$('simplify-system').options].filter(o => o.disabled).map(o => o.value)")
    assert sorted(disabled) == ["copy", "finetuned", "three_shot"]

    browser.key("e")  # into the text box
    browser.type(TEXT)
    assert browser.js("$('simplify-text').value") == TEXT
    assert browser.js("studio.current") == "simplify"  # "5" was typed, not taken as view 5
    browser.key("Enter", ctrl=True)
    browser.wait("document.querySelectorAll('#simplify-result tr').length === 4")
    rows = browser.js(
        "[...document.querySelectorAll('#simplify-result tr')].slice(1).map(tr => ({"
        "flagged: tr.classList.contains('flagged'),"
        "source: tr.querySelector('.source').textContent,"
        "output: tr.querySelector('.output').textContent,"
        "flags: [...tr.querySelectorAll('.flags p')].map(p => p.textContent)}))"
    )
    want = api(server.url, {"text": TEXT, "lang": "en", "system": "zero_shot"})
    assert [r["source"] for r in rows] == [s["source"] for s in want["sentences"]]
    assert [r["output"] for r in rows] == [s["output"] or "(empty)" for s in want["sentences"]]
    assert [r["flags"] for r in rows] == [s["flags"] for s in want["sentences"]]
    # an output cut at the length cap is a flag of its own (issue #47), shown with the others
    cut = "degenerate: the output was cut at the length cap"
    assert [cut in r["flags"] for r in rows] == [bool(s.get("cut")) for s in want["sentences"]]
    assert browser.js("document.querySelector('#simplify-result .terms-note').textContent").startswith(
        "medical terms: en: the bundled list, "
    )
    assert rows[0]["flagged"] and any(
        "5 mg of the source is not in the output" in f for f in rows[0]["flags"]
    )
    assert (
        browser.js("document.querySelector('#simplify-result tr:nth-child(3) .source .term').textContent")
        == "Asthma"
    )
    assert browser.js("$('simplify-summary').textContent").startswith("zero_shot: 3 sentences, ")
    png = browser.screenshot()

    # another system: the select focused by a click, the next option by the arrow key, then the button
    browser.click("#simplify-system")
    browser.key("Escape")  # closes the list the click opened, keeps the focus on the select
    browser.key("ArrowDown")
    browser.wait("$('simplify-system').value === 'zero_shot_short'")
    browser.click("#simplify-go")
    browser.wait("$('simplify-summary').textContent.startsWith('zero_shot_short: 3 sentences')")
    short_want = api(server.url, {"text": TEXT, "lang": "en", "system": "zero_shot_short"})
    shown = browser.js("[...document.querySelectorAll('#simplify-result .output')].map(td => td.textContent)")
    assert shown == [s["output"] or "(empty)" for s in short_want["sentences"]]

    browser.click("#simplify-text")
    browser.key("Escape")  # out of the text box: the number keys switch views again
    browser.key("1")
    browser.wait("studio.current === 'align'")

    image = Image.open(io.BytesIO(png)).convert("L")
    assert image.size[0] > 600 and ImageStat.Stat(image).stddev[0] > 5  # not a blank page
    (tmp_path / "studio-simplify.png").write_bytes(png)
    if os.environ.get("MULTIMSD_STUDIO_SCREENSHOT"):
        Path(os.environ["MULTIMSD_STUDIO_SCREENSHOT"]).write_bytes(png)
