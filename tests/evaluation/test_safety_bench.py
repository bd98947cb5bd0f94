"""benchmarks/safety_bench.py (issue #47 item 1): the hand-written cases are well formed and each behaves as
written (the lexical checks; the meaning cases run in the benchmark), and the benchmark's table meets the
targets on numbers and negation (here for two languages, without the encoder)."""

from __future__ import annotations

import csv
import importlib.util
import re
import sys
from pathlib import Path

import pytest
from helpers.tables import rows_by

from multimsd import LANGUAGES
from multimsd.metrics.safety import check_sentences

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "benchmarks" / "safety_cases.tsv"
LEXICAL = ("numbers", "negation", "degenerate")


def bench():
    if "safety_bench" not in sys.modules:
        spec = importlib.util.spec_from_file_location("safety_bench", ROOT / "benchmarks" / "safety_bench.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["safety_bench"] = module
        spec.loader.exec_module(module)
    return sys.modules["safety_bench"]


def rows() -> list[dict]:
    with CASES.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def test_the_hand_written_cases_are_well_formed():
    got = rows()
    assert list(got[0]) == ["lang", "check", "expect", "source", "output", "note"]
    for r in got:
        assert r["lang"] in LANGUAGES and r["expect"] in ("flag", "pass"), r
        assert r["check"] in ("numbers", "negation", "meaning", "degenerate"), r
        assert r["source"].strip() and r["note"].strip(), r
    for lang in LANGUAGES:  # every language has cases of every check that must flag, and faithful ones
        mine = [r for r in got if r["lang"] == lang]
        assert {r["check"] for r in mine if r["expect"] == "flag"} == {
            "numbers",
            "negation",
            "meaning",
            "degenerate",
        }
        assert sum(r["expect"] == "pass" for r in mine) >= 20


@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_hand_written_case_behaves_as_written(lang):
    cases = [r for r in rows() if r["lang"] == lang and (r["expect"] == "pass" or r["check"] in LEXICAL)]
    flags = check_sentences([r["source"] for r in cases], [r["output"] for r in cases], lang, checks=LEXICAL)
    wrong = []
    for r, fl in zip(cases, flags):
        fired = {f.check for f in fl}
        if (r["check"] not in fired) if r["expect"] == "flag" else fired:
            wrong.append((r["note"], [f.reason for f in fl]))
    assert wrong == []


@pytest.mark.integration
def test_the_table_meets_the_targets_on_numbers_and_negation(capsys):
    assert bench().main(["--langs", "en,zh", "--no-meaning", "--clara", "0"]) == 0
    table = rows_by(capsys.readouterr().out, "language")
    assert sorted(table) == ["en", "zh"]
    for row in table.values():
        # "0.99 (404)": the rate, then the number of cases (in bold where it misses the target)
        targets = [f"{c} {what}" for c in ("numbers", "negation") for what in ("recall", "false alarms")]
        rate = {c: float(re.match(r"\*{0,2}([\d.]+)", row[c]).group(1)) for c in targets}
        assert rate["numbers recall"] >= 0.95 and rate["negation recall"] >= 0.95, row
        assert rate["numbers false alarms"] <= 0.05 and rate["negation false alarms"] <= 0.05, row
        assert row["meaning recall"] == row["meaning false alarms"] == "–"  # not run without the encoder


def test_the_generator_makes_what_it_says():
    import random

    sp = bench().sp
    rng = random.Random(0)
    made = {kind: out for check, kind, out in sp.must_flag("Take 5 mg twice a day for 3–4 days.", "en", rng)}
    assert made["unit changed"] == "Take 5 g twice a day for 3–4 days."
    assert made["range changed"] == "Take 5 mg twice a day for 3–5 days."
    assert made["frequency word changed"] == "Take 5 mg once a day for 3–4 days."
    faithful = {kind: out for kind, _, out in sp.faithful("Take 5 mg twice a day.", "en", rng)}
    assert faithful["unit spelled out"] == "Take 5 milligrams twice a day."
    assert faithful["frequency said another way"] == "Take 5 mg 2 times a day."
    # a number inside a name is no quantity to change (H2, FEV1, Typ-2-Diabetes)
    assert [m.group(0) for m in sp._numbers("H2 blockers, FEV1 of 80 %, Typ-2-Diabetes", "en")] == ["80"]
