"""The alignment view's other aligners and scorers in a real browser (the ``chromium_page`` and ``studio_server``
fixtures of tests/conftest.py): the legend hides an aligner's items, ``a`` accepts another aligner's item, a
click on a sentence shows one rank column per scorer on the other side, shift-click on a scorer adds the
combined (mean-rank) column, ``c`` goes back to one scorer."""

from __future__ import annotations

import json
import shutil

import pytest
from test_studio import A1, run_dir  # noqa: F401  (run_dir: the fixture)

# Whole runs: each test starts a command or a browser (`make test-e2e`; docs/development.md).
pytestmark = pytest.mark.e2e


def test_legend_other_aligner_accept_rank_columns_and_combination(
    run_dir,  # noqa: F811
    tmp_path,
    studio_server,
    chromium_page,
):
    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    server = studio_server(
        root, "--annotator", "web", "--aligner", "asymmetric:0.99", "--aligner", "lexical:0.2"
    )
    browser = chromium_page
    browser.goto(server.url)
    browser.wait("document.querySelectorAll('#legend label').length === 2")
    n_lex = browser.js("document.querySelectorAll('#items li[data-aligner=\"lexical:0.2\"]').length")
    assert n_lex > 0
    assert browser.js("document.querySelectorAll('#items li').length") == 4 + 4 + n_lex
    browser.click('#legend input[data-aligner="lexical:0.2"]')  # hide the lexical aligner's items
    browser.wait("document.querySelectorAll('#items li').length === 8")
    items = browser.js("[...document.querySelectorAll('#items li')].map(li => li.textContent)")
    assert items[0].startswith("1 ↔ 1") and "asymmetric" not in items[0]  # the run's first, unlabelled
    assert items[4].startswith("1 ↔ 1") and items[4].endswith("asymmetric:0.99")
    for _ in range(4):
        browser.key("j")
    browser.key("a")  # accept the other aligner's 1 ↔ 1
    browser.wait("$('status').textContent.startsWith('accept saved')")
    browser.wait("document.querySelectorAll('#items li')[4].className.startsWith('accepted other')")
    # Candidates: one column per scorer on the other side, the sentence itself first by every scorer.
    browser.click("#complex li:nth-child(2)")
    browser.wait("document.querySelectorAll('#simple li .rank').length === 16")
    head = browser.js("[...document.querySelectorAll('#simple .rank-head .rank')].map(e => e.textContent)")
    assert head == ["cos", "lex", "lev", "jac"]
    own = "[...document.querySelectorAll('#simple li:nth-child(2) .rank')].map(e => e.textContent)"
    assert browser.js(own) == ["#1", "#1", "#1", "#1"]
    browser.click('#scorer-bar button[data-scorer="lexical"]', shift=True)  # combine cosine and lexical
    browser.wait("document.querySelectorAll('#simple .rank-head .rank').length === 5")
    assert browser.js("document.querySelector('#simple .rank-head .rank.lead').textContent") == "Σ"
    assert browser.js(own)[-1] == "#1"  # mean rank 1: first in the combination
    on = "[...document.querySelectorAll('#scorer-bar button.on')].map(b => b.dataset.scorer)"
    assert browser.js(on) == ["cosine", "lexical"]
    browser.key("c")  # back to one scorer: the next one after cosine
    browser.wait("document.querySelectorAll('#simple .rank-head .rank').length === 4")
    assert browser.js(on) == ["lexical"]
    server.stop()
    expected = {"article_id": "a1", "lang": "en", "complex": A1, "simple": A1, "gold": [[0, 0]]}
    assert (root / "studio" / "gold-web.jsonl").read_text(encoding="utf-8") == json.dumps(expected) + "\n"
