"""Gold scoring on a hand-checked case, θ sweep and the gold file reader."""

import json

import pytest

from multimsd.alignment.goldscore import PRF, best_threshold, per_article, score_doc, split_gold_ids, sweep
from multimsd.alignment.match import Match
from multimsd.errors import MultimsdError
from multimsd.gold import GoldDoc, load_gold


def test_score_doc_hand_checked():
    gold = {((0,), (0,)), ((1,), (2,)), ((2, 3), (3,))}  # two 1:1 and one 2:1 alignment
    pred = [(0, 0), (1, 1), (2, 3)]
    prf = score_doc(pred, gold)
    # Only (0,0) is exactly gold: P = 1/3, R = 1/3.
    assert (prf.correct, prf.predicted, prf.gold) == (1, 3, 3)
    assert prf.precision == pytest.approx(1 / 3)
    assert prf.f1 == pytest.approx(1 / 3)
    one_to_one = {g for g in gold if len(g[0]) == len(g[1]) == 1}
    assert score_doc(pred, one_to_one).recall == pytest.approx(1 / 2)


def test_prf_edges_and_sum():
    assert PRF(0, 0, 5).f1 == 0.0
    assert PRF(0, 0, 0).precision == 0.0
    total = PRF(1, 2, 4) + PRF(3, 3, 4)
    assert (total.precision, total.recall) == (pytest.approx(4 / 5), pytest.approx(4 / 8))
    assert total.f1 == pytest.approx(2 * 0.8 * 0.5 / 1.3)


def test_sweep_and_best_threshold():
    doc = GoldDoc("a", "en", ["c0", "c1", "c2"], ["s0", "s1", "s2"], {((0,), (0,)), ((1,), (1,))})
    cands = {("a", "en"): [Match(0, 0, 0.9, 0.9), Match(1, 1, 0.7, 0.7), Match(2, 2, 0.6, 0.6)]}
    curve = sweep(cands, [doc], [0.5, 0.65, 0.8, 0.95])
    # θ=0.5: 3 predicted, 2 correct. θ=0.65: 2/2. θ=0.8: 1/1 of 2 gold. θ=0.95: none.
    assert [(c.correct, c.predicted) for c in curve.values()] == [(2, 3), (2, 2), (1, 1), (0, 0)]
    assert best_threshold(curve) == 0.65
    # Equal F1: the higher θ wins.
    assert best_threshold({0.5: PRF(1, 2, 2), 0.6: PRF(1, 2, 2)}) == 0.6


def test_per_article_counts_add_up_to_the_sweep():
    a = GoldDoc("a", "en", ["c0", "c1", "c2"], ["s0", "s1", "s2"], {((0,), (0,)), ((1,), (1,)), ((2,), (2,))})
    b = GoldDoc("b", "en", ["c0", "c1"], ["s0", "s1", "s2"], {((0,), (0, 1)), ((1,), (2,))})
    cands = {
        ("a", "en"): [Match(0, 0, 0.9, 0.9), Match(1, 2, 0.8, 0.8), Match(2, 2, 0.4, 0.4)],
        # one 1:2 block (correct) and one wrong 1:1 pair
        ("b", "en"): [Match(0, 0, 0.7, 0.7, 1, 2), Match(1, 1, 0.6, 0.6)],
    }
    arts = per_article(cands, [a, b], 0.5)
    # θ=0.5 keeps a's (0,0) correct and (1,2) wrong: 1 of 2 predicted, 1 of 3 gold; b: 1 of 2, 1 of 2.
    assert {k: (v.correct, v.predicted, v.gold) for k, v in arts.items()} == {"a": (1, 2, 3), "b": (1, 2, 2)}
    assert arts["a"].f1 == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
    total = sweep(cands, [a, b], [0.5])[0.5]
    assert (total.correct, total.predicted, total.gold) == (2, 4, 5)
    # 1:1 gold only: b's 1:2 item is no longer gold, so b has 0 of 1 right.
    assert per_article(cands, [b], 0.5, only_1to1=True)["b"] == PRF(0, 2, 1)


def test_split_gold_ids():
    docs = [GoldDoc(str(k), "en", ["x"], ["y"], set()) for k in range(20)]
    v, t = split_gold_ids(docs, 0.5, seed=1)
    assert len(v) == len(t) == 10 and not v & t
    with pytest.raises(MultimsdError):
        split_gold_ids(docs[:1], 0.5, seed=1)


def test_load_gold(tmp_path):
    p = tmp_path / "gold.jsonl"
    rec = {
        "article_id": "a",
        "lang": "en",
        "complex": ["c0", "c1"],
        "simple": ["s0"],
        "gold": [[0, 0], [[0, 1], 0]],
    }
    p.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    (doc,) = load_gold(p)
    assert doc.gold == {((0,), (0,)), ((0, 1), (0,))}
    rec["gold"] = [[5, 0]]
    p.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    with pytest.raises(MultimsdError, match="out of range"):
        load_gold(p)
