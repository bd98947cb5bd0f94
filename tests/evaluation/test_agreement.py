"""Agreement between annotators (multimsd.metrics.agreement): item F1 and Cohen's κ, against hand computation."""

from __future__ import annotations

import pytest

from multimsd.metrics.agreement import Annotation, agreement, decisions, item_f1, kappa, pair_f1

# Items as the studio has them: (complex members, simple members).
I00, I11, I22, I33, N = ((0,), (0,)), ((1,), (1,)), ((2,), (2,)), ((3,), (3,)), ((1, 2), (1,))


def test_pair_f1_by_hand():
    assert pair_f1({I00, N}, {I00, I11}) == 0.5  # 2·1 / (2 + 2)
    assert pair_f1({I00}, {I00, I11, I22}) == 0.5  # 2·1 / (1 + 3)
    assert pair_f1(set(), set()) == 1.0  # both said "nothing aligns here"
    assert pair_f1({I00}, set()) == 0.0


def test_item_f1_counts_only_articles_both_annotated_and_pools_the_counts():
    a = {"x": Annotation({I00, N}), "y": Annotation({I00, I11}), "only_a": Annotation({I00})}
    b = {"x": Annotation({I00, I11}), "y": Annotation({I00, I11, I22}), "only_b": Annotation({I33})}
    got = item_f1(a, b)
    assert got["articles"] == 2 and (got["items_a"], got["items_b"], got["both"]) == (4, 5, 3)
    assert got["f1"] == pytest.approx(2 * 3 / 9)  # pooled: 2·(1 + 2) / ((2 + 2) + (2 + 3))
    assert got["per_article"] == {"x": 0.5, "y": pytest.approx(0.8)}
    assert item_f1({"x": Annotation({I00})}, {"z": Annotation({I00})})["f1"] is None  # nothing shared


def test_decisions_and_kappa_by_hand():
    a = {"x": Annotation({I00, N}, {I33})}
    b = {"x": Annotation({I00, I11}, {I22})}
    items, la, lb = decisions(a, b, {"x": [I00, I11, I22, I33]})
    assert [it for _, it in items] == [I00, I11, N, I22, I33]  # sorted
    assert la == [1, 0, 1, 0, 0] and lb == [1, 1, 0, 0, 0]
    # po = 3/5; pe = .4·.4 + .6·.6 = .52; κ = (.6 - .52) / (1 - .52) = 1/6
    assert kappa(la, lb) == pytest.approx(1 / 6)
    assert kappa([1, 0], [0, 1]) == pytest.approx(-1.0)  # po 0, pe .5
    assert kappa([1, 1, 0], [1, 1, 0]) == pytest.approx(1.0)
    assert kappa([1, 1], [1, 1]) is None and kappa([], []) is None  # chance agreement 1: undefined
    # Without the predictions only what an annotator decided counts: I11, I22 still (b's accept, b's reject)
    _, la, lb = decisions(a, b)
    assert len(la) == 5 and la == [1, 0, 1, 0, 0]
    got = agreement(a, b, {"x": [I00, I11, I22, I33]})
    assert (got["decisions"], got["agree"], got["articles"], got["f1"]) == (5, 3, 1, 0.5)
    assert got["kappa"] == pytest.approx(1 / 6) and "per_article" not in got
