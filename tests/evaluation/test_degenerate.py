"""Degenerate outputs in the evaluation stage (``degenerate.*``): shares of empty, cut and input-identical
outputs per system and language in results.json and table.md, a warning above ``degenerate.max_share``,
no "best" bold for a flagged system, and the bootstrap intervals drawn in scores.png."""

from __future__ import annotations

import json

import pytest

from multimsd.errors import MultimsdError
from multimsd.evaluation.stage import run

SRC = [
    "Patients with hypertension should reduce their sodium intake considerably.",
    "Deep vein thrombosis is a blood clot in a deep vein, usually in the leg.",
    "Asthma is a chronic inflammatory disease of the airways.",
    "Antibiotics are ineffective against viral infections such as the common cold.",
    "Regular physical activity lowers the risk of cardiovascular disease.",
]
REF = [
    "People with high blood pressure should eat less salt.",
    "A blood clot in a leg vein is called DVT.",
    "Asthma is a long-term illness of the airways.",
    "Antibiotics do not work against colds.",
    "Exercise lowers the risk of heart disease.",
]
GOOD = [
    "People with high blood pressure should eat less salt.",
    "A blood clot in a deep vein of the leg.",
    "Asthma is a long illness of the airways.",
    "Antibiotics do not help against colds.",
    "Exercise lowers the risk of heart disease.",
]


def write(tmp_path):
    tmp_path.mkdir(parents=True, exist_ok=True)
    refs = tmp_path / "refs.jsonl"
    refs.write_text(
        "".join(json.dumps({"complex": c, "simple": s, "lang": "en"}) + "\n" for c, s in zip(SRC, REF))
    )
    good = tmp_path / "good"
    good.mkdir()
    (good / "en.txt").write_text("\n".join(GOOD) + "\n")
    # as the training stage writes it: 2 of 5 outputs cut at the length cap
    (good / "generation.json").write_text(
        json.dumps({"max_new_tokens": 64, "cut": {"en": [False, True, False, True, False]}})
    )
    empty = tmp_path / "empty.txt"  # the issue's reproduction: every output empty
    empty.write_text("\n" * len(SRC))
    # one output copied (spaces differ), one empty, three good: no file says which were cut
    half = tmp_path / "half.txt"
    half.write_text("\n".join(["  " + SRC[0].replace(" ", "  "), "", *GOOD[2:]]) + "\n")
    return refs, good, empty, half


def cfg(tmp_path, **extra):
    refs, good, empty, half = write(tmp_path)
    c = {
        "refs": {"path": str(refs)},
        "systems": {"identity": "@identity", "good": str(good), "empty": str(empty), "half": str(half)},
        "metrics": {"include": ["sari", "bleu", "fkgl"]},
        "terms": {"enabled": False},
        "bootstrap": {"samples": 200},
        "output": {"dir": str(tmp_path / "out"), "print_table": False, "plot": False},
    }
    c.update(extra)
    return c


def test_shares_flags_and_no_bold_for_degenerate_outputs(tmp_path):
    r = run(cfg(tmp_path))
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    out = {s: saved["systems"][s]["en"]["outputs"] for s in ("identity", "good", "empty", "half")}
    # counted by hand over the 5 sentences
    assert out["empty"] | {} == {
        "n": 5, "empty": 1.0, "cut": None, "cut_known": 0, "identical": 0.0, "flagged": ["empty"]
    }  # fmt: skip
    assert out["good"]["cut"] == pytest.approx(0.4) and out["good"]["cut_known"] == 5
    assert (
        out["good"]["empty"] == 0.0 and out["good"]["identical"] == 0.0 and out["good"]["flagged"] == ["cut"]
    )
    assert out["half"]["empty"] == pytest.approx(0.2) and out["half"]["identical"] == pytest.approx(0.2)
    assert out["half"]["cut"] is None and out["half"]["flagged"] == [
        "empty",
        "identical",
    ]  # cut unknown, not 0
    # the copy baseline copies by design: not flagged for it, never cut
    assert out["identity"]["identical"] == 0.0 and out["identity"]["flagged"] == []
    assert saved["degenerate"]["max_share"] == 0.1
    assert saved["degenerate"]["flagged"] == {"good": {"en": ["cut"]}, "empty": {"en": ["empty"]},
                                              "half": {"en": ["empty", "identical"]}}  # fmt: skip
    assert r["degenerate"] == saved["degenerate"]
    # the issue: an all-empty system gets FKGL 0.00, the lowest; it must not be printed as the best
    assert saved["systems"]["empty"]["en"]["fkgl"] == 0.0
    table = (tmp_path / "out" / "table.md").read_text()
    assert "**0.00**" not in table and "**28.46**" not in table and "**81.90**" not in table
    sari = table.split("## SARI")[1].split("##")[0]
    rows = {line.split("|")[1].strip(): line for line in sari.splitlines() if line.startswith("| ")}
    # good (cut), empty and half are flagged: the best SARI among the rest is the copy baseline's
    assert "81.90 ⚠" in rows["good"] and "**" not in rows["good"] and "**" not in rows["empty"]
    assert rows["identity"].count("**") == 4  # bold in the en and avg columns
    assert "Warning: empty (en): 100 % empty (above 10 %, degenerate.max_share)" in table
    assert "Warning: good (en): 40 % cut at the length cap" in table
    assert "Warning: half (en): 20 % empty, 20 % identical to the input" in table
    # the report's table of degenerate outputs (multimsd.render.scores): the shares above the threshold in bold
    assert "| half | en | 5 | **20 %** | unknown | **20 %** | ⚠ empty, identical to the input |" in table
    assert "| identity | en | 5 | 0 % | 0 % | – | – |" in table


def test_threshold_is_an_option(tmp_path):
    r = run(cfg(tmp_path, degenerate={"max_share": 0.5}))
    assert r["degenerate"]["flagged"] == {"empty": {"en": ["empty"]}}
    table = (tmp_path / "out" / "table.md").read_text()
    assert "Warning: good" not in table and "Warning: empty (en)" in table
    # with nothing flagged the best SARI is bold again
    r = run(cfg(tmp_path / "all", degenerate={"max_share": 1.0}))
    assert r["degenerate"]["flagged"] == {}
    assert "Warning" not in (tmp_path / "all" / "out" / "table.md").read_text()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"degenerate": {"max_share": 1.5}}, "degenerate.max_share=1.5: must lie between 0 and 1"),
        ({"degenerate": {"max_shar": 0.2}}, "max_shar"),  # a typo fails
        ({"bootstrap": {"alpha": 0.0}}, "bootstrap.alpha=0.0: must lie strictly between 0 and 1"),
        (
            {"metrics": {"safety_checks": ["numbers", "terms"]}},
            "metrics.safety_checks: unknown terms; choose",
        ),
    ],
)
def test_bad_options_one_line(tmp_path, extra, message):
    with pytest.raises(MultimsdError, match=message) as e:
        run(cfg(tmp_path, **extra))
    assert "\n" not in str(e.value) and not (tmp_path / "out").exists()


def test_bad_generation_record(tmp_path):
    c = cfg(tmp_path)
    (tmp_path / "good" / "generation.json").write_text(json.dumps({"cut": {"en": [True]}}))
    with pytest.raises(
        MultimsdError, match="generation.json: en has 1 flags but there are 5 en reference rows"
    ):
        run(c)


def test_scores_png_draws_the_intervals(tmp_path, monkeypatch):
    """scores.png: an error bar per system and language at its bootstrap interval (the matplotlib artists)."""
    from multimsd.evaluation import report

    figures = []
    real = report.plot_scores

    def spy(results, path):
        figures.append((results, real(results, path)))
        return figures[-1][1]

    monkeypatch.setattr(report, "plot_scores", spy)
    c = cfg(tmp_path)
    c["output"]["plot"] = True
    run(c)
    assert (tmp_path / "out" / "scores.png").stat().st_size > 1000
    results, fig = figures[0]
    ax = fig.axes[0]
    from matplotlib.collections import LineCollection

    segments = [
        seg for coll in ax.collections if isinstance(coll, LineCollection) for seg in coll.get_segments()
    ]
    spans = sorted((round(float(s[0][1]), 6), round(float(s[1][1]), 6)) for s in segments)
    expected = sorted(
        (round(lo, 6), round(hi, 6))
        for s in results["systems"].values()
        for lo, hi in [s["en"]["ci"]["sari"]]
    )
    assert spans == expected and len(spans) == 4  # one bar per system, from lo to hi
    assert "95 % bootstrap CI" in ax.get_title()


def test_ranking_lists_flagged_systems_after_the_others(tmp_path):
    """The ranking (results.json, and the ranking line of table.md that the command prints) follows the one
    rule for "best" (multimsd.metrics.best): the copy baseline, the only system not flagged, is first and best;
    the flagged ones follow with their flags. By SARI the all-empty system (28.46) scores above the copy
    baseline; it never ranks above it, even with a threshold that flags nothing."""
    r = run(cfg(tmp_path / "default", select_by="sari"))
    rk = r["ranking"]
    assert [(e["system"], e.get("flagged")) for e in rk["overall"]] == [
        ("identity", None), ("good", ["cut"]), ("half", ["empty", "identical"]), ("empty", ["empty"])
    ]  # fmt: skip
    assert (
        rk["best"] == {"en": "identity", "overall": "identity"} and rk["per_language"]["en"] == rk["overall"]
    )
    assert r["systems"]["empty"]["en"]["sari"] == pytest.approx(28.46, abs=0.005)
    assert r["systems"]["empty"]["en"]["sari"] > r["systems"]["identity"]["en"]["sari"]
    table = (tmp_path / "default" / "out" / "table.md").read_text()
    assert (
        "en: identity > good (⚠ cut at the length cap) > half (⚠ empty, identical to the input) > empty (⚠ empty)"
        in table
    )
    assert "follow the others and are never the best" in table
    # nothing above the threshold: the scores decide, but outputs that are all empty still go last
    r = run(cfg(tmp_path / "lenient", select_by="sari", degenerate={"max_share": 1.0}))
    assert r["degenerate"]["flagged"] == {}
    assert [e["system"] for e in r["ranking"]["overall"]] == ["good", "half", "identity", "empty"]
    assert r["ranking"]["overall"][-1]["flagged"] == ["empty"] and r["ranking"]["best"]["overall"] == "good"
