"""Document-level cross-validation of the aligners (align.py mode=gold gold.folds=k): a hand-built toy gold set
and deterministic scores, so every number below is checked by hand. Fast, offline, no encoder."""

import json
import statistics

import pytest

from multimsd.alignment.aligners import ALIGNERS, Aligner, register_aligner
from multimsd.alignment.goldcv import cross_validate, fold_ids
from multimsd.alignment.goldmode import evaluate_gold
from multimsd.alignment.match import Match
from multimsd.alignment.stage import check_config, run, to_config
from multimsd.errors import MultimsdError
from multimsd.gold import GoldDoc

GRID = [0.5, 0.7, 0.9]
GOLD = {((0,), (0,))}  # every toy document: complex 0 <-> simple 0 is the one gold item


def toy_doc(aid: str) -> GoldDoc:
    return GoldDoc(aid, "en", ["c0", "c1"], ["s0", "s1"], set(GOLD))


# Each document has a right pair (0, 0) and a wrong one (1, 1), with these scores. Document "a" is alone in
# wanting θ = 0.9 (its wrong pair scores 0.8); the other three want θ = 0.7 (their right pair scores 0.75).
SCORES = {"a": (0.95, 0.8), "b": (0.75, 0.6), "c": (0.75, 0.6), "d": (0.75, 0.6)}
DOCS = [toy_doc(aid) for aid in SCORES]


def toy_candidates(scores=SCORES) -> dict:
    return {
        (aid, "en"): [Match(0, 0, right, right), Match(1, 1, wrong, wrong)]
        for aid, (right, wrong) in scores.items()
    }


def test_fold_ids_deal_every_article_once_seeded():
    docs = [toy_doc(f"d{k:02d}") for k in range(47)]
    folds = fold_ids(docs, 5, seed=42)
    assert len(folds) == 5
    assert sorted(len(f) for f in folds) == [9, 9, 9, 10, 10]
    assert set().union(*folds) == {d.article_id for d in docs}
    assert sum(len(f) for f in folds) == 47  # disjoint
    assert folds == fold_ids(docs, 5, seed=42)
    assert folds != fold_ids(docs, 5, seed=7)
    with pytest.raises(MultimsdError, match="gold.folds=48: only 47"):
        fold_ids(docs, 48, seed=42)
    with pytest.raises(MultimsdError, match="at least 2 folds"):
        fold_ids(docs, 1, seed=42)


def test_theta_comes_from_the_training_folds_and_every_document_is_scored_once():
    seen_train = []

    def candidates_for(train):
        seen_train.append({d.article_id for d in train})
        return {(): toy_candidates()}

    folds = [{"a"}, {"b"}, {"c"}, {"d"}]
    res = cross_validate(candidates_for, DOCS, folds, GRID, fixed=((), 0.9))
    rows = res["folds"]
    # the candidates were asked for with the training folds only
    # (then all four, for the settings tuned on every document)
    assert seen_train == [
        {"b", "c", "d"},
        {"a", "c", "d"},
        {"a", "b", "d"},
        {"a", "b", "c"},
        {"a", "b", "c", "d"},
    ]
    # every document scored exactly once
    assert sorted(aid for r in rows for aid in r["articles"]) == ["a", "b", "c", "d"]
    assert sum(r["test"]["gold"] for r in rows) == 4
    # Fold 1 holds "a", whose own best θ is 0.9 (F1 1.0); its training folds b, c, d choose 0.7, which is used:
    # at 0.7 both of a's pairs pass -> P 1/2, R 1, F1 2/3.
    a = rows[0]
    assert a["threshold"] == 0.7
    assert (a["test"]["correct"], a["test"]["predicted"], a["test"]["gold"]) == (1, 2, 1)
    assert a["test"]["f1"] == pytest.approx(2 / 3)
    # Folds 2-4: training {a, two of b/c/d} at 0.7: 3 correct / 4 predicted (F1 .857) beats 0.9 (1 / 1, R 1/3:
    # F1 .5) and 0.5 (3 / 6: F1 .667) -> 0.7, and the held-out document is then aligned perfectly.
    for r in rows[1:]:
        assert r["threshold"] == 0.7
        assert r["train"]["f1"] == pytest.approx(2 * 0.75 * 1 / 1.75)
        assert (r["test"]["correct"], r["test"]["predicted"], r["test"]["f1"]) == (1, 1, 1.0)
    # Pooled by hand: 4 correct, 2 + 1 + 1 + 1 = 5 predicted, 4 gold -> P .8, R 1, F1 8/9.
    pooled = res["test"]["pooled"]
    assert (pooled["correct"], pooled["predicted"], pooled["gold"]) == (4, 5, 4)
    assert pooled["precision"] == pytest.approx(0.8) and pooled["recall"] == 1.0
    assert pooled["f1"] == pytest.approx(8 / 9)
    f1s = [2 / 3, 1, 1, 1]
    assert res["test"]["across_folds"]["f1"]["mean"] == pytest.approx(sum(f1s) / 4)
    assert res["test"]["across_folds"]["f1"]["sd"] == pytest.approx(statistics.stdev(f1s))
    assert res["test"]["across_folds"]["precision"]["mean"] == pytest.approx((0.5 + 3) / 4)
    # Fixed θ = 0.9, untuned: only a's right pair passes -> per fold F1 1, 0, 0, 0; pooled 1 / 1 / 4.
    assert [r["fixed"]["f1"] for r in rows] == [1.0, 0.0, 0.0, 0.0]
    fixed = res["fixed"]["pooled"]
    assert (fixed["correct"], fixed["predicted"], fixed["gold"]) == (1, 1, 4)
    assert fixed["f1"] == pytest.approx(2 * 0.25 / 1.25)
    # Tuned on all four (in-sample): θ 0.7 (4 / 5 correct, F1 8/9) beats 0.9 (F1 .4) and 0.5 (4 / 8).
    assert res["tuned_on_all"]["threshold"] == 0.7
    assert res["tuned_on_all"]["in_sample"]["f1"] == pytest.approx(8 / 9)


def test_the_settings_are_chosen_on_the_training_folds_too():
    # Two settings (as aligner=nm's (floor, penalty, skip_simple)). "hi" keeps document a's wrong pair (0.8)
    # and no wrong pair elsewhere; "lo" drops a's wrong pair but gives b one at 0.72. Held out, a is perfect
    # with "lo" at any θ; but its training folds b, c, d prefer "hi" (F1 1.0 at θ 0.7 against .857), so a is
    # scored with "hi" at 0.7: both of its pairs pass.
    def doc(right, wrong=None):
        return [Match(0, 0, right, right)] + ([Match(1, 1, wrong, wrong)] if wrong else [])

    hi = {("a", "en"): doc(0.95, 0.8), **{(k, "en"): doc(0.75) for k in "bcd"}}
    lo = {
        ("a", "en"): doc(0.95),
        ("b", "en"): doc(0.75, 0.72),
        ("c", "en"): doc(0.75, 0.6),
        ("d", "en"): doc(0.75, 0.6),
    }
    cands = {(0.02,): hi, (0.0,): lo}
    res = cross_validate(lambda train: cands, DOCS, [{"a"}, {"b", "c", "d"}], GRID)
    a, bcd = res["folds"]
    assert a["variant"] == [0.02] and a["threshold"] == 0.7
    assert a["train"]["f1"] == 1.0
    assert (a["test"]["correct"], a["test"]["predicted"], a["test"]["gold"]) == (1, 2, 1)
    # Trained on a alone, both settings reach F1 1.0 at θ 0.9 (the highest): the tie goes to the higher setting
    # (as in the single split); b, c and d's right pairs (0.75) all fall below 0.9.
    assert bcd["variant"] == [0.02] and bcd["threshold"] == 0.9
    assert (bcd["test"]["correct"], bcd["test"]["predicted"], bcd["test"]["gold"]) == (0, 0, 3)
    # pooled: 1 correct of 2 predicted, 4 gold -> P .5, R .25, F1 1/3
    assert res["test"]["pooled"]["f1"] == pytest.approx(2 * 0.5 * 0.25 / 0.75)


def test_only_the_tunable_settings_compete():
    # A configured setting outside the grids (here "hi", perfect on b, c, d) is scored as "fixed" but never
    # chosen: the tuning picks from the grids only, as the single split's tune_on_gold does.
    hi = {(k, "en"): [Match(0, 0, right, right)] for k, (right, _) in SCORES.items()}
    lo = toy_candidates()
    res = cross_validate(
        lambda train: {(1.0,): hi, (0.0,): lo},
        DOCS,
        [{"a"}, {"b", "c", "d"}],
        GRID,
        fixed=((1.0,), 0.7),
        tunable=[(0.0,)],
    )
    assert [r["variant"] for r in res["folds"]] == [[0.0], [0.0]] and res["tuned_on_all"]["variant"] == [0.0]
    assert res["fixed"]["pooled"]["f1"] == 1.0


# ------------------------------------------------------------------------------ end to end through gold mode
class Toy(Aligner):
    """(i, i) pairs scored by a table keyed by the complex sentence's text: deterministic, no encoder."""

    name = "toy"
    calls: list = []

    def candidates(self, docs, langs, cfg, *, gold_train=None, min_score=None):
        Toy.calls.append(sorted(d.article_id for d in gold_train or []))
        return [[Match(i, i, float(c[i].split()[1]), 0.0) for i in range(2)] for c, _ in docs]


@pytest.fixture
def toy_gold(tmp_path):
    saved = dict(ALIGNERS)
    register_aligner(Toy)
    Toy.calls.clear()
    path = tmp_path / "gold.jsonl"
    with path.open("w") as f:
        for aid, (right, wrong) in SCORES.items():
            rec = {
                "article_id": aid,
                "lang": "en",
                "complex": [f"right {right}", f"wrong {wrong}"],
                "simple": ["s0", "s1"],
                "gold": [[0, 0]],
            }
            f.write(json.dumps(rec) + "\n")
    yield path
    ALIGNERS.clear()
    ALIGNERS.update(saved)


def test_gold_mode_writes_the_folds_and_keeps_the_single_split(toy_gold, tmp_path):
    out = tmp_path / "gold"
    cfg = {
        "mode": "gold",
        "data": {"languages": ["en"]},
        "aligner": {"method": "toy", "threshold": 0.9, "threshold_grid": GRID},
        "gold": {"path": str(toy_gold), "methods": ["toy"], "folds": 4, "report_dir": str(out)},
    }
    res = run(cfg)
    cv = res["cv"]["methods"]["toy"]["en"]
    assert sorted(a for r in cv["folds"] for a in r["articles"]) == ["a", "b", "c", "d"]
    assert cv["test"]["pooled"]["f1"] == pytest.approx(8 / 9)  # the hand computation above
    assert cv["fixed_threshold"] == 0.9 and cv["fixed"]["pooled"]["f1"] == pytest.approx(0.4)
    # a trainable aligner is handed each fold's training documents only (after the single split's half)
    held = {r["fold"]: set(r["articles"]) for r in cv["folds"]}
    assert len(Toy.calls) == 1 + 4 + 1  # the single split, each fold, then all documents (tuned_on_all)
    for train, f in zip(Toy.calls[1:], sorted(held)):
        assert set(train) == {"a", "b", "c", "d"} - held[f]
    assert Toy.calls[-1] == ["a", "b", "c", "d"] and cv["tuned_on_all"]["threshold"] == 0.7
    saved = json.loads((out / "gold_results.json").read_text())
    assert saved["cv"]["methods"]["toy"]["en"]["test"]["pooled"]["correct"] == 4
    assert saved["methods"]["toy"]["en"]["test"]  # the single split is still there
    table = (out / "gold_table.md").read_text()
    assert "Cross-validation by document: 4 folds (seed 42)" in table
    assert "| en | toy | 0.875 ± 0.250 |" in table  # P mean ± sd over 1/2, 1, 1, 1


def test_no_folds_is_todays_gold_mode(toy_gold, tmp_path):
    for folds in (None, 1):
        cfg = to_config(
            {
                "mode": "gold",
                "data": {"languages": ["en"]},
                "aligner": {"method": "toy"},
                "gold": {"path": str(toy_gold), "methods": ["toy"], "folds": folds},
            }
        )
        from multimsd.gold import load_gold_docs

        assert "cv" not in evaluate_gold(cfg, load_gold_docs(toy_gold))


def test_bad_folds_fail_before_any_work(toy_gold, tmp_path):
    with pytest.raises(MultimsdError, match="Key 'fold' not in 'GoldConfig'"):
        to_config({"gold": {"fold": 5}})  # a misspelt key
    with pytest.raises(MultimsdError, match="gold.folds=0"):
        check_config(to_config({"mode": "gold", "gold": {"folds": 0}}))
    cfg = {
        "mode": "gold",
        "data": {"languages": ["en"]},
        "aligner": {"method": "toy"},
        "gold": {"path": str(toy_gold), "methods": ["toy"], "folds": 5, "report_dir": str(tmp_path / "g")},
    }
    with pytest.raises(MultimsdError, match="gold.folds=5: only 4 gold article pair"):
        run(cfg)
    assert Toy.calls == [] and not (tmp_path / "g").exists()
