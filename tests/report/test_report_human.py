"""The report's "Human evaluation" section, from ratings files as the studio writes them
(``<run>/studio/ratings-NAME.jsonl``): numbers by hand, in both files; added after a build, they show in the
next build; ratings of outputs that changed are left out; no ratings, no section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_report import make_run

from multimsd.errors import MultimsdError
from multimsd.metrics.human import input_hash, text_hash
from multimsd.report import build_report

# make_run's English test rows (references rows 2, 3, 4) and its systems' outputs ("<name> en one", …)
EN_ROWS = [
    ("Hypertension <script>alert('x')</script> is common.", "High blood pressure is common."),
    ("Dyspnea occurs.", "Breathing is hard."),
]
EN_OUT = ["one", "two"]


def rating(annotator: str, system: str, item: int, s, m, f, *, output: str | None = None) -> dict:
    complex_, simple = EN_ROWS[item]
    return {
        "lang": "en", "item": item, "input": input_hash(complex_, simple), "system": system,
        "output": text_hash(output or f"{system} en {EN_OUT[item]}"), "annotator": annotator, "blind": True,
        "simplicity": s, "meaning": m, "fluency": f,
    }  # fmt: skip


def write(run: Path, annotator: str, recs: list[dict]) -> None:
    (run / "studio").mkdir(exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in recs)
    (run / "studio" / f"ratings-{annotator}.jsonl").write_text(text, encoding="utf-8")


def test_no_ratings_no_section_then_ratings_added_later_show_in_the_next_build(tmp_path):
    run = make_run(tmp_path)
    assert "human" not in build_report(run)["sections"]
    (run / "studio").mkdir()
    (run / "studio" / "ratings-journal-kim.jsonl").write_text("")  # journals are not ratings files
    assert "human" not in build_report(run)["sections"]

    write(run, "kim", [
        rating("kim", "theta4", 0, 4, 5, 3),
        rating("kim", "theta4", 1, 5, 4, 3),
        rating("kim", "theta1", 0, 2, 3, 3),
    ])  # fmt: skip
    write(run, "lee", [
        rating("lee", "theta4", 0, 4, 4, 3),
        rating("lee", "theta1", 0, 3, 3, None),
        rating("lee", "theta1", 1, 1, 1, 1, output="an output the run no longer has"),
    ])  # fmt: skip
    assert "human" in build_report(run)["sections"]
    md = (run / "report.md").read_text(encoding="utf-8")
    html = (run / "report.html").read_text(encoding="utf-8")
    section = md.split("## Human evaluation")[1].split("\n## ")[0]
    # theta4 simplicity: (4 + 4 + 5) / 3; items 0 (4, 4) and 1 (5) resampled → [4, 5] (each end has p = 1/4)
    # theta4 meaning: (5 + 4 + 4) / 3; theta1: one item → its mean, a point interval
    assert "| SmolLM2 θ=4 | 4.33 [4.00, 5.00] | 4.33 [4.00, 4.50] | 3.00 [3.00, 3.00] | 2 | 2 |" in section
    assert "| SmolLM2 θ=1 | 2.50 [2.50, 2.50] | 3.00 [3.00, 3.00] | 3.00 [3.00, 3.00] | 1 | 2 |" in section
    # α by hand (tests/evaluation/test_metrics_human.py): simplicity units (4, 4), (2, 3) → 5/6; meaning (5, 4), (3, 3)
    # → 5/6 as well; fluency: the only shared unit is (3, 3): no variation
    assert "| simplicity | 0.833 | 2 |" in section and "| meaning | 0.833 | 2 |" in section
    assert "| fluency | – (no variation) | 1 |" in section
    assert "1 rating of outputs or test rows that have changed since" in section
    assert "by 2 people (kim, lee)" in section and "5 of 5 rated outputs were rated blind" in section
    # the same numbers in the HTML
    part = html.split('<section id="human">')[1].split("</section>")[0]
    for cell in ("<th>SmolLM2 θ=4</th>", "4.33", "[4.00, 5.00]", "[4.00, 4.50]", "0.833", "– (no variation)"):
        assert cell in part, cell


def test_one_rater_says_so(tmp_path):
    run = make_run(tmp_path)
    write(run, "kim", [rating("kim", "theta4", 0, 4, 5, 3)])
    build_report(run)
    section = (run / "report.md").read_text().split("## Human evaluation")[1].split("\n## ")[0]
    assert "| simplicity | one rater | 0 |" in section
    assert "| SmolLM2 θ=4 | 4.00 [4.00, 4.00] | 5.00 [5.00, 5.00] | 3.00 [3.00, 3.00] | 1 | 1 |" in section


def test_a_damaged_ratings_file_is_one_error_line_and_leaves_no_report(tmp_path):
    run = make_run(tmp_path)
    write(run, "kim", [{**rating("kim", "theta4", 0, 4, 5, 3), "fluency": 7}])
    with pytest.raises(MultimsdError, match=r"ratings-kim.jsonl:1: 'fluency' must be 1-5 or null"):
        build_report(run)
    assert not (run / "report.md").exists() and not (run / "report.html").exists()
