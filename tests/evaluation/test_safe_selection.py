"""Safe selection (issue #48 item 5): with ``select.max_safety`` a system whose share of safety-flagged sentences
is significantly above the limit (the references' own share, or a percentage) is demoted like a degenerate
one, with its reason, and another system is the best; without the limit the higher score wins."""

from __future__ import annotations

import json

import pytest

from multimsd.errors import MultimsdError
from multimsd.evaluation.stage import run

SRC = [
    "Patients should take 5 mg of amlodipine once daily in the morning.",
    "Patients must not drive for 24 hours after the injection.",
    "The daily dose of paracetamol must not exceed 4 g in adults.",
    "After the operation, patients should rest for 3 days at home.",
    "The tablets should be taken with food to avoid stomach upset.",
]
REF = [
    "Take 5 mg of amlodipine once a day in the morning.",
    "Do not drive for 24 hours after the injection.",
    "Adults must not take more than 4 g of paracetamol a day.",
    "Rest at home for 3 days after the operation.",
    "Take the tablets with food so your stomach is not upset.",
]
SAFE = [  # faithful, further from the references
    "Take 5 mg of amlodipine each morning, once a day.",
    "After the injection, do not drive for 24 hours.",
    "Adults should take at most 4 g of paracetamol a day.",
    "After the operation, stay at home and rest for 3 days.",
    "Take the tablets with a meal so your stomach is not upset.",
]
UNSAFE = [  # the references with a number or a negation changed: a high SARI, every sentence flagged
    "Take 50 mg of amlodipine once a day in the morning.",
    "Drive for 24 hours after the injection.",
    "Adults must take 4 g of paracetamol a day.",
    "Rest at home for 30 days after the operation.",
    "Take the tablets with food so your stomach is upset.",
]


def cfg(tmp_path, max_safety=None):
    refs = tmp_path / "refs.jsonl"
    refs.write_text(
        "".join(json.dumps({"complex": c, "simple": s, "lang": "en"}) + "\n" for c, s in zip(SRC, REF))
    )
    for name, lines in (("safe", SAFE), ("unsafe", UNSAFE)):
        (tmp_path / f"{name}.txt").write_text("\n".join(lines) + "\n")
    return {
        "refs": {"path": str(refs)},
        "systems": {"safe": str(tmp_path / "safe.txt"), "unsafe": str(tmp_path / "unsafe.txt")},
        "metrics": {"include": ["sari", "bleu", "safety"], "safety_checks": ["numbers", "negation"]},
        "terms": {"enabled": False},
        "bootstrap": {"samples": 200},
        "select": {"max_safety": max_safety},
        "output": {"dir": str(tmp_path / "out"), "print_table": False, "plot": False},
    }


def test_without_a_limit_the_higher_score_is_best(tmp_path):
    r = run(cfg(tmp_path))
    assert r["systems"]["unsafe"]["en"]["safety"] == 100.0 and r["systems"]["safe"]["en"]["safety"] == 0.0
    assert r["systems"]["unsafe"]["en"]["sari"] > r["systems"]["safe"]["en"]["sari"]
    assert r["ranking"]["best"]["overall"] == "unsafe"
    assert "unsafe" not in r["systems"]["unsafe"]["en"]["outputs"]


@pytest.mark.parametrize("limit", ["reference", "50"])
def test_a_system_above_the_limit_is_demoted_with_its_reason(tmp_path, limit):
    r = run(cfg(tmp_path, limit))
    outputs = r["systems"]["unsafe"]["en"]["outputs"]
    assert "unsafe" in outputs["flagged"] and outputs["unsafe"] == 1.0
    assert outputs["unsafe_limit"] == (0.0 if limit == "reference" else 0.5)  # the references' own share: 0
    assert "unsafe" not in r["systems"]["safe"]["en"]["outputs"]["flagged"]
    assert r["ranking"]["best"] == {"en": "safe", "overall": "safe"}
    assert r["degenerate"]["flagged"] == {"unsafe": {"en": ["unsafe"]}}
    table = (tmp_path / "out" / "table.md").read_text()
    assert (
        "Warning: unsafe (en): 100.0 % of its sentences flagged by the safety checks, significantly above"
        in table
    )


def test_a_limit_at_the_share_itself_demotes_nothing(tmp_path):
    r = run(cfg(tmp_path, "100"))  # 100 % flagged is not *above* a limit of 100 %
    assert r["ranking"]["best"]["overall"] == "unsafe"


@pytest.mark.parametrize(
    ("value", "include", "message"),
    [
        ("strict", None, "select.max_safety=strict: choose reference"),
        ("150", None, "select.max_safety=150: choose reference"),
        ("reference", ["sari", "bleu"], "select.max_safety needs the safety metric"),
    ],
)
def test_a_bad_limit_is_one_error_line(tmp_path, value, include, message):
    c = cfg(tmp_path, value)
    if include:
        c["metrics"]["include"] = include
    with pytest.raises(MultimsdError, match=message) as e:
        run(c)
    assert "\n" not in str(e.value) and not (tmp_path / "out").exists()
