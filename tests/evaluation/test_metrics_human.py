"""Human ratings (multimsd.metrics.human) and the highlighting spans (novel words, medical terms) the studio's
outputs view draws: numbers computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from multimsd.errors import MultimsdError
from multimsd.metrics.bootstrap import resample_indices
from multimsd.metrics.human import check_rating, input_hash, krippendorff_alpha, summarise, text_hash
from multimsd.metrics.novelty import novel_spans, novelty_statistics
from multimsd.metrics.terms import TermDictionary


def r(annotator, system, item, simplicity=None, meaning=None, fluency=None, lang="en") -> dict:
    return {"lang": lang, "item": item, "input": "i", "system": system, "output": "o", "annotator": annotator,
            "simplicity": simplicity, "meaning": meaning, "fluency": fluency}  # fmt: skip


def test_ordinal_alpha_matches_a_hand_computed_example():
    # Two raters, three units: (1, 1), (2, 3), (3, 3). Values n_1 = 2, n_2 = 1, n_3 = 3, n = 6.
    # Ordinal δ²: δ(1,2) = (3 - 1.5)² = 2.25, δ(2,3) = (4 - 2)² = 4, δ(1,3) = (6 - 2.5)² = 12.25.
    # D_o = (o_23 + o_32) δ(2,3) / n = 8 / 6; D_e = 2 (2·1·2.25 + 2·3·12.25 + 1·3·4) / (6·5) = 6.
    # α = 1 - (4/3) / 6 = 7/9.
    units = {1: {"a": 1, "b": 1}, 2: {"a": 2, "b": 3}, 3: {"a": 3, "b": 3}}
    assert krippendorff_alpha(units) == pytest.approx(7 / 9, abs=1e-12)
    # a unit with one rating carries no information on agreement
    assert krippendorff_alpha({**units, 4: {"a": 5}}) == pytest.approx(7 / 9, abs=1e-12)
    # complete disagreement at the ends of the scale is below zero
    assert krippendorff_alpha({1: {"a": 1, "b": 5}, 2: {"a": 5, "b": 1}}) < 0
    assert krippendorff_alpha({1: {"a": 4}, 2: {"b": 2}}) is None  # nobody shares a unit
    assert krippendorff_alpha({1: {"a": 3, "b": 3}}) is None  # no variation: α is 0/0


def test_means_intervals_and_counts_by_hand():
    ratings = [
        r("kim", "x", 0, 4, 5, 3),
        r("lee", "x", 0, 4, 4, 3),
        r("kim", "x", 1, 5, 4, 3),
        r("kim", "y", 0, 2, 3),
        r("lee", "y", 0, 3, 3),
    ]
    s = summarise(ratings, systems=["y", "x"], samples=1000, seed=0)
    assert list(s["systems"]) == ["y", "x"]
    x = s["systems"]["x"]["simplicity"]
    assert x["mean"] == pytest.approx(13 / 3) and (x["items"], x["ratings"], x["raters"]) == (2, 3, 2)
    # items resampled: two draws of item 0 (4, 4) → 4; two of item 1 → 5; one each → 13/3. Each of the ends
    # has probability 1/4 > 2.5 %, so the 95 % interval is [4, 5].
    assert x["ci"] == [pytest.approx(4.0), pytest.approx(5.0)]
    y = s["systems"]["y"]
    assert y["simplicity"]["mean"] == 2.5 and y["simplicity"]["ci"] == [2.5, 2.5]  # one item
    assert y["fluency"] is None  # nobody rated y's fluency
    assert s["systems"]["x"]["fluency"]["mean"] == 3.0
    # α simplicity over the units (0, x): 4, 4 and (0, y): 2, 3 — n_2 = n_3 = 1, n_4 = 2, n = 4:
    # δ(2,3) = 1, δ(2,4) = (4 - 1.5)² = 6.25, δ(3,4) = (3 - 1.5)² = 2.25; D_o = 2·1/4 = 0.5,
    # D_e = 2 (1 + 2·6.25 + 2·2.25) / 12 = 3, α = 1 - 0.5/3 = 5/6.
    assert s["alpha"]["simplicity"] == pytest.approx(5 / 6)
    assert s["alpha"]["fluency"] is None  # every shared fluency rating is 3
    assert s["shared_units"] == {"simplicity": 2, "meaning": 2, "fluency": 1}
    assert s["raters"] == ["kim", "lee"]


def test_the_interval_resamples_items_with_the_projects_bootstrap():
    # Three items of one system, rated by 1, 2 and 1 people: per item [sum, count].
    ratings = [r("a", "x", 0, 1), r("a", "x", 1, 5), r("b", "x", 1, 4), r("a", "x", 2, 2)]
    got = summarise(ratings, samples=200, seed=7)["systems"]["x"]["simplicity"]
    stats = np.array([[1, 1], [9, 2], [2, 1]], dtype=float)
    means = [stats[idx, 0].sum() / stats[idx, 1].sum() for idx in resample_indices(3, 200, 7)]
    assert got["mean"] == pytest.approx(12 / 4)
    assert got["ci"] == [pytest.approx(np.percentile(means, 2.5)), pytest.approx(np.percentile(means, 97.5))]


def test_a_rating_line_is_checked():
    good = {**r("kim", "x", 0, 4), "blind": True}
    assert check_rating(good, "f:1") is good
    for bad, msg in [
        ({**good, "simplicity": 6}, "1-5 or null"),
        ({**good, "meaning": True}, "1-5 or null"),
        ({**good, "item": -1}, "row index"),
        ({**good, "lang": ""}, "'lang'"),
        ([1], "not a JSON object"),
    ]:
        with pytest.raises(MultimsdError, match=msg):
            check_rating(bad, "f:1")
    assert text_hash("a") == text_hash("a") != text_hash("b")
    assert input_hash("c", "s") == text_hash("c", "s") and input_hash("c", ["s", "t"]) == text_hash(
        "c", "s", "t"
    )


def test_novel_spans_are_the_tokens_the_novelty_metric_counts():
    src, out = "Asthma narrows the airways.", "The airways get narrow, asthma!"
    spans = novel_spans(src, out)
    assert [out[a:b] for a, b in spans] == ["get", "narrow", ",", "!"]
    assert len(spans) == novelty_statistics([src], [out])[0, 0]  # as many as the metric counts
    assert [out[a:b] for a, b in novel_spans(src, out, lowercase=False)] == [
        "The",
        "get",
        "narrow",
        ",",
        "asthma",
        "!",
    ]


def test_term_spans_point_at_the_original_characters():
    d = TermDictionary(["deep vein thrombosis", "vein", "thyroid hormone"], "en")
    text = (
        "Deep vein thrombosis, a vein, ＴＨＹＲＯＩＤ hormone."  # full-width letters: NFKC-equal to the term
    )
    assert d.find_spans(text) == [
        (0, 20, "deep vein thrombosis"),  # leftmost-longest: not also "vein"
        (24, 28, "vein"),
        (30, 45, "thyroid hormone"),
    ]
    assert [t for _, _, t in d.find_spans(text)] == d.find(text)
    ru = TermDictionary(["тромбоз", "елка"], "ru")  # ё is matched as е
    assert ru.find_spans("Тромбоз и Ёлка.") == [(0, 7, "тромбоз"), (10, 14, "елка")]
    ja = TermDictionary(["深部静脈血栓症"], "ja")
    assert ja.find_spans("彼は深部静脈血栓症です。") == [(2, 9, "深部静脈血栓症")]
