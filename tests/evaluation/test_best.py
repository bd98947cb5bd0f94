"""The one rule for "best" (multimsd.metrics.best) on hand-made scores: the order and the best of the systems,
and the same answer from every place that says it: the evaluation's ranking (results.json, the ranking line of
table.md that the command prints), the bold of table.md's and the report's score tables, the report's sweep."""

from __future__ import annotations

import pytest

from multimsd.evaluation.scoring import rank_systems
from multimsd.metrics.best import Placed, best, order
from multimsd.metrics.degenerate import demotions
from multimsd.render.scores import score_table


def test_order_puts_flagged_systems_last_with_their_flags():
    scores = {"a": 30.0, "b": 44.0, "c": 35.0, "d": 35.0, "e": None}
    placed = order(scores, {"b": ["cut"]})
    # unflagged by score (ties by name, a missing score last), then the flagged one
    assert [p.system for p in placed] == ["c", "d", "a", "e", "b"]
    assert placed[-1] == Placed("b", 44.0, ("cut",)) and placed[0].flagged == ()
    assert best(placed) == "c"
    # lower is better (FKGL): the smallest first, still after the flags
    low = order({"x": 8.0, "y": 0.0, "z": 7.5}, {"y": ["empty"]}, lower_better=True)
    assert [p.system for p in low] == ["z", "x", "y"] and best(low) == "z"


def test_no_best_when_every_system_is_flagged_or_unscored():
    assert best(order({"a": 1.0, "b": 2.0}, {"a": ["empty"], "b": ["cut"]})) is None
    assert best(order({"a": None})) is None and best([]) is None
    assert [p.system for p in order({"a": 1.0, "b": 2.0}, {"a": ["empty"], "b": ["cut"]})] == ["b", "a"]


def outputs(n: int = 4, empty: float = 0.0, cut: float | None = 0.0, flagged: tuple = ()) -> dict:
    return {"n": n, "empty": empty, "cut": cut, "cut_known": n, "identical": 0.0, "flagged": list(flagged)}


def evaluation() -> dict:
    """The issue's runs: θ = 4 scores highest but 50 % of its outputs are cut (flagged); two systems whose
    outputs are all empty score above the copy baseline (SARI ~30 from deletions), one of them not flagged
    because degenerate.max_share=1.0 would let it pass."""
    systems = {
        "copy": {"sari": 5.0, "bleu": 3.5, "fkgl": 17.1, "outputs": outputs()},
        "theta1": {"sari": 35.0, "bleu": 9.0, "fkgl": 8.0, "outputs": outputs()},
        "theta4": {"sari": 44.0, "bleu": 9.9, "fkgl": 7.0, "outputs": outputs(cut=0.5, flagged=("cut",))},
        "zero_shot": {"sari": 31.6, "bleu": 0.0, "fkgl": 0.0, "outputs": outputs(empty=1.0, flagged=("empty",))},
        "empty_passed": {"sari": 31.6, "bleu": 0.0, "fkgl": 0.0, "outputs": outputs(empty=1.0)},
    }  # fmt: skip
    return {"languages": ["en"], "systems": {s: {"en": r} for s, r in systems.items()}}


def test_demotions_read_the_flags_and_all_empty_outputs():
    ev = evaluation()
    assert demotions(ev, "theta4", "en") == ["cut"] and demotions(ev, "theta4", "avg") == ["cut"]
    assert demotions(ev, "zero_shot", "overall") == ["empty"]
    # all empty, whatever the threshold: never above the copy baseline
    assert demotions(ev, "empty_passed", "en") == ["empty"]
    assert demotions(ev, "theta1", "en") == [] and demotions(ev, "copy", "all") == []


def test_ranking_and_bold_agree_on_the_best():
    ev = evaluation()
    systems = list(ev["systems"])
    flags = {c: {s: demotions(ev, s, c) for s in systems} for c in ("en", "overall")}
    per_lang = {"en": {s: ev["systems"][s]["en"] for s in systems}}
    ranking = rank_systems(["en"], per_lang, "mean(sari,bleu)", flags)
    # mean(SARI, BLEU) by hand: theta4 26.95, theta1 22.0, zero_shot / empty_passed 15.8, copy 4.25; the
    # flagged ones follow the others in score order (a tie by name), and the all-empty ones follow the copy
    assert [e["system"] for e in ranking["overall"]] == [
        "theta1", "copy", "theta4", "empty_passed", "zero_shot"
    ]  # fmt: skip
    assert ranking["overall"][0] == {"system": "theta1", "score": pytest.approx(22.0)}
    assert ranking["overall"][2] == {"system": "theta4", "score": pytest.approx(26.95), "flagged": ["cut"]}
    assert ranking["best"] == {"en": "theta1", "overall": "theta1"}
    assert ranking["per_language"]["en"] == ranking["overall"]
    # the score tables of table.md and the report bold the same system (SARI: higher; FKGL: lower is better)
    for key, low, bold_value in (("sari", False, "35.00"), ("fkgl", True, "8.00")):
        table = score_table(ev, key, ["en", "avg"], low)
        bold = {row[0].text for row in table.rows for cell in row[1:] if cell.bold}
        assert bold == {"theta1"}, key
        theta1 = next(row for row in table.rows if row[0].text == "theta1")
        assert [c.text for c in theta1[1:]] == [bold_value] * 2
        flagged = next(row for row in table.rows if row[0].text == "theta4")
        assert all(c.text.endswith(" ⚠") and not c.bold for c in flagged[1:])


def test_one_competitor_left_is_still_the_best_of_its_column():
    """Two systems, one flagged: the other is bold (table.md did so, the report did not: one rule now)."""
    ev = evaluation()
    ev["systems"] = {s: ev["systems"][s] for s in ("copy", "theta4")}
    table = score_table(ev, "sari", ["en"], False)
    assert [[c.bold for c in row[1:]] for row in table.rows] == [[True], [False]]
