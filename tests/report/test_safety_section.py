"""The report's safety section (issue #48 item 4) on hand-made results: SARI against the flag rate per system
with both intervals and the references' own rate, the paired test of an optimised system against its start
with the target's verdict, the note when the pair was not compared, and no section without the metric."""

from __future__ import annotations

import re
from pathlib import Path

from helpers.tables import table_rows

from multimsd.render.blocks import Chart, Paragraph, Table
from multimsd.render.charts import Series, line_chart
from multimsd.report.load import Run, SystemInfo
from multimsd.report.safety import _target, safety_section


def scores(sari: float, flags: float, width: float = 2.0) -> dict:
    return {
        "sari": sari,
        "safety": flags,
        "ci": {"sari": [sari - width, sari + width], "safety": [flags - width, flags + width]},
    }


def comparison(a: str, b: str, metric: str, a_score: float, b_score: float, ci, p: float) -> dict:
    return {
        "a": a, "b": b, "lang": "es", "metric": metric, "a_score": a_score, "b_score": b_score,
        "diff": a_score - b_score, "ci": ci, "p_value": p, "resamples": 1000, "n_sentences": 300,
        "separable": not (ci[0] <= 0 <= ci[1]),
    }  # fmt: skip


def make_run(comparisons: list | None = None, with_safety: bool = True) -> Run:
    systems = {
        "copy": {"es": scores(14.38, 0.0)},
        "finetuned": {"es": scores(30.0, 24.0)},
        "dpo": {"es": scores(29.5, 10.0)},
    }
    if not with_safety:
        systems = {n: {"es": {"sari": v["es"]["sari"]}} for n, v in systems.items()}
    evaluation = {
        "languages": ["es"],
        "systems": systems,
        "per_language": {"es": {"safety_reference": 18.5}},
        "comparisons": comparisons or [],
    }
    pairs = {
        "reward": {"sari": 1.0, "safety_gate": 1.0, "guardrails": 1.0},
        "splits": {
            "train": {
                "sources": 256, "samples": 1024, "pairs": 180, "chosen_from_reference": 40,
                "samples_failing": {"safety_gate": 0.25, "guardrails": 0.5},
            }
        },
    }  # fmt: skip
    info = {
        "copy": SystemInfo("copy", "copy", "copy baseline", None, None, None),
        "finetuned": SystemInfo("finetuned", "train", "SmolLM2 + LoRA", 1.0, None, {}),
        "dpo": SystemInfo("dpo", "optimise", "SmolLM2 + LoRA + DPO", 1.0, None, {"pairs": pairs}, None,
                          start="finetuned", objective="dpo"),
    }  # fmt: skip
    return Run(Path("."), {}, None, None, evaluation, None, info)


MET = [
    comparison("dpo", "finetuned", "sari", 29.5, 30.0, [-1.5, 0.5], 0.4),
    comparison("dpo", "finetuned", "safety", 10.0, 24.0, [-18.0, -10.0], 0.002),
]


def test_the_chart_plots_sari_against_the_flag_rate_with_both_intervals_and_the_references_rate():
    section = safety_section(make_run(MET))
    assert section is not None and section.anchor == "safety"
    chart = next(b for b in section.blocks if isinstance(b, Chart))
    assert "SmolLM2 + LoRA + DPO flags 10.0 % SARI 29.50" in chart.alt
    assert "copy baseline flags 0.0 % SARI 14.38" in chart.alt
    assert "the references' own flag rate 18.5 %" in chart.alt
    # per system a vertical (SARI) and a horizontal (flags) error bar: 3 of each
    lines = re.findall(r'<line x1="([\d.]+)" x2="([\d.]+)" y1="([\d.]+)" y2="([\d.]+)" stroke="#', chart.svg)
    vertical = [ln for ln in lines if ln[0] == ln[1] and ln[2] != ln[3]]
    # (the legend's swatches are horizontal lines 18 px long)
    horizontal = [ln for ln in lines if ln[2] == ln[3] and float(ln[1]) - float(ln[0]) not in (0.0, 18.0)]
    assert len(vertical) == 3 and len(horizontal) == 3
    assert 'stroke-dasharray="6 4"' in chart.svg  # the references' line


def test_the_optimised_system_is_tested_against_its_start_and_the_target_judged():
    section = safety_section(make_run(MET))
    table = next(b for b in section.blocks if isinstance(b, Table))
    (row,) = table_rows(table)
    text = {column: cell.text for column, cell in row.items()}
    assert (text["system vs its start"], text["lang"]) == ("SmolLM2 + LoRA + DPO vs SmolLM2 + LoRA", "es")
    assert (text["SARI start"], text["SARI"]) == ("30.00", "29.50")
    assert (text["flags % start"], text["flags %"]) == ("24.00", "10.00")
    assert (text["p"], text["p [2]"]) == ("0.400", "0.002")  # SARI's, then the flags'
    assert row["SARI Δ [CI]"].ci == "[-1.50, 0.50]" and row["flags Δ [CI]"].ci == "[-18.00, -10.00]"
    assert text["target"] == "met" and row["target"].bold
    text = " ".join(b.text for b in section.blocks if isinstance(b, Paragraph))
    assert "180 preference pairs from 256 training sources (40 with the reference" in text
    assert "safety_gate 25 %, guardrails 50 %" in text


def test_the_target_verdict():
    sari_same = comparison("a", "b", "sari", 29.5, 30.0, [-1.5, 0.5], 0.4)
    sari_lower = comparison("a", "b", "sari", 25.0, 30.0, [-7.0, -3.0], 0.002)
    halved = comparison("a", "b", "safety", 12.0, 24.0, [-15.0, -9.0], 0.002)
    not_halved = comparison("a", "b", "safety", 12.1, 24.0, [-15.0, -9.0], 0.002)
    assert _target(sari_same, halved) == "met"  # exactly half counts
    assert _target(sari_same, not_halved) == "not met: flags not halved"
    assert _target(sari_lower, halved) == "not met: SARI significantly lower"
    assert _target(sari_lower, not_halved) == "not met: flags not halved and SARI significantly lower"
    assert _target(None, halved) == "not compared"


def test_an_optimised_system_not_compared_with_its_start_gets_a_note():
    section = safety_section(make_run([]))
    assert not any(isinstance(b, Table) for b in section.blocks)
    notes = [b.text for b in section.blocks if isinstance(b, Paragraph) and b.note]
    assert any("Not compared: dpo:finetuned" in n and "compare=[dpo:finetuned]" in n for n in notes)


def test_no_section_without_the_safety_metric():
    assert safety_section(make_run(MET, with_safety=False)) is None


def test_a_horizontal_error_bar_widens_the_x_axis():
    narrow = line_chart([Series("a", [(5.0, 1.0)])], "t", "x", "y")
    wide = line_chart([Series("a", [(5.0, 1.0)], x_errors=[(0.0, 40.0)])], "t", "x", "y")
    assert ">40<" in wide and ">40<" not in narrow
