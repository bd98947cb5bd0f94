"""The θ view in a real browser (the ``chromium_page`` and ``studio_server`` fixtures of tests/conftest.py):
annotate by keys in the alignment view, switch to the θ view with ``2``, and the F1 it shows at the picked θ is
the one the real ``multimsd align mode=gold`` gives for the gold file (run in-process with the command the view
itself shows); its key-help footer is whole in a 1280 x 900 window; a screenshot is not blank."""

from __future__ import annotations

import io
import shutil
from typing import TYPE_CHECKING

import pytest
from test_studio_theta import ARTICLES, real_gold_mode, theta_run  # noqa: F401  (theta_run: the fixture)

from multimsd.alignment.embed import Embedder

# Whole runs: each test starts a command or a browser (`make test-e2e`; docs/development.md).
pytestmark = pytest.mark.e2e

if TYPE_CHECKING:
    from helpers.chromium import Chromium


def keys_and_wait(browser: Chromium, key: str, expect: str) -> None:
    browser.js("$('status').textContent = ''")
    browser.key(key)
    browser.wait(f"$('status').textContent.startsWith({expect!r})")


def test_theta_view_shows_align_gold_modes_f1(
    theta_run,  # noqa: F811
    tmp_path,
    monkeypatch,
    capsys,
    studio_server,
    chromium_page,
):
    from PIL import Image, ImageStat

    root = tmp_path / "run"
    shutil.copytree(theta_run, root)
    server = studio_server(root, "--annotator", "web")
    browser = chromium_page
    browser.goto(server.url)
    browser.wait("document.querySelectorAll('#items li').length > 0 && $('article').value === 'a1'")
    assert browser.js("$('lang').value") == "de"
    # Before any gold: the θ view says so, and the agreement part says one annotator.
    browser.key("2")
    browser.wait("$('view-theta').dataset.state === 'empty'")
    assert "needs at least 2" in browser.js("$('theta-empty').textContent")
    assert "one annotator so far" in browser.js("$('agreement').textContent")
    browser.key("1")
    browser.wait("!$('view-align').hidden")
    # a1: accept, accept, reject; a2: accept, reject; a3: accept, accept (a4 untouched)
    for article, decisions in (("a1", "aar"), ("a2", "ar"), ("a3", "aa")):
        # The article's own sentences drawn (the select changes before its view has loaded)
        first = ARTICLES[article][0][0]
        browser.wait(f"$('complex').querySelector('li')?.textContent === {first!r}")
        for k in decisions:
            keys_and_wait(browser, k, "accept saved" if k == "a" else "reject saved")
        browser.key("n")
    browser.wait("$('progress-text').textContent === '3 / 4 annotated'")

    browser.key("2")  # the θ view, by key
    browser.wait("location.hash === '#theta' && $('view-theta').dataset.state === 'ok'")
    browser.assert_fully_visible("#keys-theta")
    pick = "[data-pick][data-lang='de'][data-aligner='symmetric']"
    shown = browser.js(
        f"(() => {{ const e = document.querySelector({pick!r}); return {{theta: +e.dataset.theta,"
        " test: +e.dataset.testF1, valid: +e.dataset.validF1, text: e.querySelector('.test-f1').textContent,"
        " row: e.querySelector('tr.picked .f1').textContent}; })()"
    )
    command = browser.js("$('theta-gold-command').textContent")
    override = browser.js("$('theta-override').textContent")
    assert browser.js("document.querySelectorAll('#view-theta svg polyline').length") == 3
    png = browser.screenshot()
    server.stop()

    def no_model(self, texts, prefix):
        raise AssertionError("encoded on a cached run")

    monkeypatch.setattr(Embedder, "_encode_batch", no_model)
    gold_file = root / "studio" / "gold-web.jsonl"
    assert f"gold.path={gold_file}" in command and override.startswith("multimsd align ")
    results, printed = real_gold_mode(command, tmp_path / "report", monkeypatch, capsys)
    de = results["methods"]["symmetric"]["de"]
    assert shown["theta"] == de["threshold"]
    assert shown["test"] == de["test"]["f1"] and shown["valid"] == de["valid"]["f1"]
    assert shown["text"] == f"{de['test']['f1']:.3f}" and shown["row"] == f"{de['valid']['f1']:.3f}"
    t = de["test"]
    assert (
        f"| de | {de['threshold']:g} | {t['precision']:.3f} | {t['recall']:.3f} | {t['f1']:.3f} |" in printed
    )

    image = Image.open(io.BytesIO(png)).convert("L")
    assert image.size[0] > 600 and ImageStat.Stat(image).stddev[0] > 5  # not a blank page
    (tmp_path / "studio-theta.png").write_bytes(png)
