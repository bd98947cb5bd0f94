"""The report stage on a synthetic run directory with known numbers: both files hold the same formatted
numbers and intervals, the comparison notes are right, example text is escaped, the page is self-contained
and a failure leaves no half-written report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from multimsd.errors import MultimsdError
from multimsd.render.charts import Series, line_chart
from multimsd.report import build as build_module
from multimsd.report import build_report

SCRIPT = "<script>alert('x')</script>"


def _scores(sari: float, bleu: float, fkgl: float, terms: int, ci: float | None = 3.0) -> dict:
    r = {"n_sentences": 3, "sari": sari, "sari_add": 1.0, "sari_keep": 2.0, "sari_delete": 3.0, "bleu": bleu}
    r |= {"ter": 90.0, "fkgl": fkgl, "term_types": terms}
    if ci is not None:
        r["ci"] = {m: [v - ci, v + ci] for m, v in (("sari", sari), ("bleu", bleu), ("fkgl", fkgl))}
    return r


SEPARABLE = {
    "a": "theta4", "b": "theta1", "lang": "en", "metric": "sari", "a_score": 44.44, "b_score": 33.33,
    "diff": 11.11, "ci": [2.5, 19.75], "p_value": 0.0004, "n_sentences": 3, "separable": True,
}  # fmt: skip
OVERLAPPING = {
    "a": "theta4", "b": "theta1", "lang": "de", "metric": "sari", "a_score": 40.0, "b_score": 38.5,
    "diff": 1.5, "ci": [-6.25, 8.75], "p_value": 0.41, "n_sentences": 2, "separable": False,
}  # fmt: skip


def make_run(root: Path, gold: bool = False, comparisons: list | None = None, sweep: bool = True) -> Path:
    run = root / "run"
    (run / "align").mkdir(parents=True)
    (run / "evaluation").mkdir()
    stats = {
        "languages": ["de", "en"],
        "per_language": {
            g: {"article_pairs": 4, "sentence_pairs": n, "vocab_complex": 321, "vocab_simple": 210,
                "avg_chars_complex": 150.25, "avg_words_complex": 24.75, "avg_chars_simple": 99.5,
                "avg_words_simple": 15.125, "train": n - 5, "validation": 3, "test": 2}
            for g, n in (("de", 37), ("en", 41))
        },
        "article_split": {"train": 2, "validation": 1, "test": 1},
        "total_sentence_pairs": 78, "dropped": {}, "embedder": "e5-small-offline",
        "aligner": {"method": "symmetric", "threshold": 0.8},
    }  # fmt: skip
    (run / "align/stats.json").write_text(json.dumps(stats))
    if gold:
        curve = [
            {"threshold": t, "precision": 0.5 + t / 4, "recall": 1 - t, "f1": 0.6} for t in (0.5, 0.7, 0.9)
        ]
        point = {"threshold": 0.7, "test": {"precision": 0.8771, "recall": 0.5432, "f1": 0.6707}}
        methods = {
            m: {g: dict(point, valid_curve=curve) for g in ("de", "en", "all")} for m in ("symmetric",)
        }
        gold_res = {"embedder": "e5", "valid_articles": ["a"], "test_articles": ["b"], "methods": methods}
        (run / "align/gold_results.json").write_text(json.dumps(gold_res))
    refs = [
        {
            "complex": "Der Patient hat Hypertonie.",
            "simple": "Der Patient hat hohen Blutdruck.",
            "lang": "de",
        },
        {"complex": "Die Therapie ist kompliziert.", "simple": ["Einfach.", "Leicht."], "lang": "de"},
        {
            "complex": f"Hypertension {SCRIPT} is common.",
            "simple": "High blood pressure is common.",
            "lang": "en",
        },
        {"complex": "Dyspnea occurs.", "simple": "Breathing is hard.", "lang": "en"},
        {"complex": "Edema | swelling.", "simple": "Swelling.", "lang": "en"},
    ]
    sysdir = run / "systems"
    for name in ("theta1", "theta4"):
        pred = sysdir / name / "pred"
        pred.mkdir(parents=True)
        (pred / "de.txt").write_text(f"{name} de eins\n{name} de zwei\n")
        (pred / "en.txt").write_text(f"{name} en one\n{name} en two\n{name} en three\n")
    (sysdir / "refs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in refs))
    history = [
        {"step": 1, "epoch": 0, "loss": 2.5},
        {"step": 2, "epoch": 0, "loss": 2.25},
        {"epoch": 0, "val_loss": 2.125, "sari": 30.0, "bleu": 4.0, "best": True},
        {"step": 3, "epoch": 1, "loss": 1.75},
        {"step": 4, "epoch": 1, "loss": 1.5},
        {"epoch": 1, "val_loss": 1.9876, "sari": 35.5, "bleu": 5.5, "best": True},
    ]
    (sysdir / "theta4" / "all_results.json").write_text(
        json.dumps({"before": {"val_loss": 2.75}, "history": history, "train_seconds": 12.5})
    )
    results = {
        "languages": ["de", "en"],
        "per_language": {
            "de": {"n_sentences": 2, "fkgl_source": 14.5, "fkgl_reference": 8.5,
                   "term_types": {"source": 5, "reference": 2}},
            "en": {"n_sentences": 3, "fkgl_source": 15.75, "fkgl_reference": 9.25,
                   "term_types": {"source": 7, "reference": 3}},
        },
        "systems": {
            "copy": {"de": _scores(6.5, 7.0, 14.5, 5), "en": _scores(5.86, 5.32, 15.75, 7)},
            "theta1": {"de": _scores(38.5, 6.25, 9.0, 3), "en": _scores(33.33, 7.77, 8.5, 4)},
            "theta4": {"de": _scores(40.0, 8.5, 8.25, 2), "en": _scores(44.44, 9.99, 7.12, 1)},
        },
        "bootstrap": {"samples": 1000, "confidence": 0.95, "seed": 0, "method": "percentile"},
        "ranking": {"best": {"overall": "theta4"}},
    }  # fmt: skip
    if comparisons is not None:
        results["comparisons"] = comparisons
    (run / "evaluation/results.json").write_text(json.dumps(results))

    def trained(theta: float, train_results: str | None) -> dict:
        return {"kind": "train", "label": f"SmolLM2 θ={theta:g}", "theta": theta,
                "predictions": f"systems/theta{theta:g}/pred", "train_results": train_results}  # fmt: skip

    meta = {
        "name": "unit <run>",
        "created": "2026-11-23T10:00:00Z",
        "command": "multimsd run loss.theta=1,4",
        "config": {"loss": {"theta": [1, 4]}},
        "timings": {"align": 40.1, "train/theta4": 150.2, "evaluate": 12.0},
        "align": {"stats": "align/stats.json", "gold": "align/gold_results.json" if gold else None},
        "references": "systems/refs.jsonl",
        "evaluation": "evaluation/results.json",
        "systems": {
            "theta1": trained(1, None),
            "theta4": trained(4, "systems/theta4/all_results.json"),
            "copy": {"kind": "copy", "label": "copy baseline", "theta": None, "predictions": None,
                     "train_results": None},
        },
        "sweep": {"parameter": "loss.theta", "systems": ["theta1", "theta4"]} if sweep else None,
    }  # fmt: skip
    (run / "run.json").write_text(json.dumps(meta))
    return run


@pytest.fixture
def built(tmp_path):
    run = make_run(tmp_path, comparisons=[SEPARABLE, OVERLAPPING])
    summary = build_report(run)
    return run, summary, (run / "report.html").read_text(), (run / "report.md").read_text()


def test_numbers_and_intervals_in_both_files(built):
    run, summary, html, md = built
    assert summary["html"] == run / "report.html" and summary["markdown"] == run / "report.md"
    assert summary["systems"] == ["copy", "theta1", "theta4"]
    for text in (html, md):
        # Table 5: scores with their CIs; the average over languages; FKGL of source and reference
        for s in ("44.44", "[41.44, 47.44]", "9.99", "[6.99, 12.99]", "7.12", "[4.12, 10.12]", "42.22"):
            assert s in text
        assert "15.75" in text and "9.25" in text
        # corpus (Table 4), timings, terms (Table 8), training table, sweep
        for s in ("321", "24.8", "15.1", "78", "150.2", "202.3", "1.988", "35.50", "1000 resamples"):
            assert s in text
        assert "SmolLM2 θ=4" in text and "copy baseline" in text
        assert "Medical-term types" in text and "Sweep over loss.theta" in text
        # paired comparisons: diff, CI, p-value
        for s in (
            "11.11",
            "[2.50, 19.75]",
            "&lt; 0.001" if text is html else "\\< 0.001",
            "[-6.25, 8.75]",
            "0.410",
        ):
            assert s in text


def test_best_value_bold(built):
    _, _, html, md = built
    assert "<b>44.44</b>" in html and "**44.44**" in md  # SARI: higher is better
    assert "<b>7.12</b>" in html and "**7.12**" in md  # FKGL: lower is better
    assert "<b>5.86</b>" not in html
    assert re.search(r'<td class="num"><b>44\.44</b><span class="ci">\[41\.44, 47\.44\]</span></td>', html)


def test_not_separable_note_only_for_overlapping(tmp_path):
    run = make_run(tmp_path / "a", comparisons=[SEPARABLE, OVERLAPPING])
    build_report(run)
    for name in ("report.html", "report.md"):
        text = (run / name).read_text()
        assert "too small to separate" in text
        assert "on de SARI (n = 2)" in text
        assert "on en SARI" not in text
    run = make_run(tmp_path / "b", comparisons=[SEPARABLE])
    build_report(run)
    for name in ("report.html", "report.md"):
        text = (run / name).read_text()
        assert "too small to separate" not in text and "Not separable" not in text
        assert "11.11" in text


def test_without_intervals_or_comparisons(tmp_path):
    run = make_run(tmp_path, comparisons=None, sweep=False)
    res = json.loads((run / "evaluation/results.json").read_text())
    for s in res["systems"].values():
        for r in s.values():
            r.pop("ci")
    res.pop("bootstrap")
    (run / "evaluation/results.json").write_text(json.dumps(res))
    summary = build_report(run)
    md = (run / "report.md").read_text()
    assert "44.44" in md and "[41.44" not in md
    assert "No confidence intervals" in md and "No paired comparisons" in md
    assert "sweep" not in summary["sections"] and "Sweep over" not in md


def test_examples_escaped(built):
    run, _, html, md = built
    assert SCRIPT not in html and "<script" not in html.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert re.search(r"(?<!\\)<script", md) is None and "Edema \\| swelling." in md
    assert "\\<script\\>alert('x')\\</script\\>" in md
    # outputs side by side: a trained system's line, the copy baseline's source, several references
    for text in (html, md):
        assert "theta4 en three" in text and "Die Therapie ist kompliziert." in text
        assert "Einfach. ‖ Leicht." in text
    assert "unit &lt;run&gt;" in html


def test_html_is_self_contained(built):
    _, _, html, _ = built
    low = html.lower()
    assert "http://" not in low and "https://" not in low and "//" not in low.replace("<!--", "")
    assert "src=" not in low and "<link" not in low and "@import" not in low and "url(" not in low
    assert low.count("<svg") >= 2  # training curves and θ sweep
    assert low.count("<table") >= 9


def test_gold_section_only_with_gold(tmp_path, built):
    _, summary, html, _ = built
    assert "alignment" not in summary["sections"] and "Table 3" not in html
    run = make_run(tmp_path / "g", gold=True)
    summary = build_report(run)
    html, md = (run / "report.html").read_text(), (run / "report.md").read_text()
    assert "alignment" in summary["sections"]
    for text in (html, md):
        assert "Table 3" in text and "0.877" in text and "0.543" in text and "0.671" in text
    assert "P/R/F1 vs θ" in html
    # sections in the order
    order = ["Run:", "Corpus (Table 4)", "Table 3", "Table 5", "Table 8", "Table 6", "Training", "Sweep"]
    positions = [md.index(s) for s in order]
    assert positions == sorted(positions)


def test_failure_leaves_no_report(tmp_path, monkeypatch):
    run = make_run(tmp_path)

    def boom(*args, **kwargs):
        raise RuntimeError("renderer failed")

    monkeypatch.setattr(build_module, "render_markdown", boom)
    with pytest.raises(RuntimeError):
        build_report(run)
    assert sorted(p.name for p in run.iterdir()) == ["align", "evaluation", "run.json", "systems"]
    # an earlier report survives a failed rebuild untouched
    monkeypatch.undo()
    build_report(run)
    before = (run / "report.html").read_bytes()
    monkeypatch.setattr(build_module, "render_markdown", boom)
    with pytest.raises(RuntimeError):
        build_report(run)
    assert (run / "report.html").read_bytes() == before
    assert not list(run.glob(".report*"))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda run: (run / "run.json").unlink(), "run.json not found"),
        (lambda run: (run / "run.json").write_text("{not json"), "not valid JSON"),
        (lambda run: (run / "evaluation/results.json").write_text("[1,"), "not valid JSON"),
        (lambda run: (run / "align/stats.json").unlink(), "align.stats not found"),
        (lambda run: (run / "systems/theta4/pred/en.txt").write_text("one line\n"), "has 1 lines"),
    ],
)
def test_bad_input_one_line(tmp_path, damage, message):
    run = make_run(tmp_path)
    damage(run)
    with pytest.raises(MultimsdError, match=message) as e:
        build_report(run)
    assert "\n" not in str(e.value)
    assert not (run / "report.html").exists()


def test_unexpected_shape_one_line(tmp_path):
    run = make_run(tmp_path)
    res = json.loads((run / "evaluation/results.json").read_text())
    res["systems"]["theta4"]["en"] = [1, 2]
    (run / "evaluation/results.json").write_text(json.dumps(res))
    with pytest.raises(MultimsdError, match="unexpected shape"):
        build_report(run)


def test_chart_is_robust():
    svg = line_chart(
        [
            Series("a <b>", [(1.0, float("nan")), (2.0, 3.0)], [None, (2.0, float("inf"))]),
            Series("empty", []),
        ],
        "title & more",
        "θ",
        "score",
    )
    assert "a &lt;b&gt;" in svg and "title &amp; more" in svg and "nan" not in svg.lower()
    assert "empty" not in svg and "xmlns" not in svg
    # one point sits in the middle of the plot, not on an edge
    assert '<circle cx="280.0" cy="133.0"' in line_chart([Series("one", [(4.0, 40.0)])], "t", "x", "y")


def test_missing_run_dir(tmp_path):
    with pytest.raises(MultimsdError, match="run directory not found"):
        build_report(tmp_path / "nope")


def test_comparison_rule_and_alpha_stated(tmp_path):
    """The report states the significance rule and α, and labels the interval with its level 1 − α."""
    run = make_run(tmp_path, comparisons=[SEPARABLE, OVERLAPPING])
    res = json.loads((run / "evaluation/results.json").read_text())
    res["bootstrap"] |= {"alpha": 0.1, "comparison_rule": "RULE-TEXT p < α ⇔ interval excludes 0"}
    (run / "evaluation/results.json").write_text(json.dumps(res))
    build_report(run)
    for name in ("report.html", "report.md"):
        text = (run / name).read_text()
        assert (
            "one rule at α = 0.1: RULE-TEXT p &lt; α" in text
            or "one rule at α = 0.1: RULE-TEXT p \\< α" in text
        )
        assert "a − b [90 % CI]" in text


def test_degenerate_outputs_warned_and_never_bold(tmp_path):
    """The issue's reproduction: a system whose outputs are all empty gets FKGL 0.00, the lowest; the report
    says so in a warning and bolds neither that nor any other score of that system in that language."""
    run = make_run(tmp_path, comparisons=[SEPARABLE])
    res = json.loads((run / "evaluation/results.json").read_text())
    ok = {"n": 3, "empty": 0.0, "cut": 0.0, "cut_known": 3, "identical": 0.0, "flagged": []}
    for s in res["systems"]:
        for g in ("de", "en"):
            res["systems"][s][g]["outputs"] = dict(ok, n=res["per_language"][g]["n_sentences"])
    res["systems"]["theta4"]["en"] |= {"fkgl": 0.0, "sari": 50.0}
    res["systems"]["theta4"]["en"]["outputs"] = {
        "n": 3, "empty": 1.0, "cut": None, "cut_known": 0, "identical": 0.0, "flagged": ["empty"]
    }  # fmt: skip
    res["systems"]["theta1"]["de"]["outputs"] |= {"cut": 0.5, "flagged": ["cut"]}
    res["degenerate"] = {
        "max_share": 0.1,
        "flagged": {"theta4": {"en": ["empty"]}, "theta1": {"de": ["cut"]}},
    }
    (run / "evaluation/results.json").write_text(json.dumps(res))
    build_report(run)
    html, md = (run / "report.html").read_text(), (run / "report.md").read_text()
    for text in (html, md):
        assert "Warning: SmolLM2 θ=4 (en): 100 % empty (above 10 %, degenerate.max_share)" in text
        assert "Warning: SmolLM2 θ=1 (de): 50 % cut at the length cap" in text
        assert "Degenerate outputs" in text and "unknown" in text  # theta4's cut share is not recorded
    # en: theta4's FKGL 0.00 and SARI 50.00 are flagged; the best left are theta1's 8.50 and 33.33
    assert "<b>0.00 ⚠</b>" not in html and "0.00 ⚠" in html and "**0.00" not in md
    assert "<b>50.00" not in html and "**50.00" not in md
    assert "<b>8.50</b>" in html and "**8.50**" in md and "**33.33**" in md
    # de: theta1 is flagged (cut), theta4's de SARI is the best there
    assert "**40.00**" in md and "**38.50" not in md
    # the sweep table bolds no test score of a flagged system
    sweep = md.split("Sweep over")[1]
    assert "45.00" in sweep and "**45.00**" not in sweep  # theta4: mean of 40.00 and 50.00


def many_examples(root: Path, n_en: int = 15, report_examples: int | None = 12) -> Path:
    """The synthetic run with ``n_en`` English test rows (and its ``report_examples`` setting)."""
    run = make_run(root)
    refs = [json.loads(line) for line in (run / "systems/refs.jsonl").read_text().splitlines()]
    refs = [r for r in refs if r["lang"] == "de"] + [
        {"complex": f"Complex sentence number {i}.", "simple": f"Simple {i}.", "lang": "en"}
        for i in range(n_en)
    ]
    (run / "systems/refs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in refs))
    for name in ("theta1", "theta4"):
        lines = [f"{name} output {i}" if i != 3 else "" for i in range(n_en)]
        (run / f"systems/{name}/pred/en.txt").write_text("\n".join(lines) + "\n")
    meta = json.loads((run / "run.json").read_text())
    if report_examples is not None:
        meta["config"]["report_examples"] = report_examples
    (run / "run.json").write_text(json.dumps(meta))
    return run


def test_examples_more_rows_folded_per_language(tmp_path):
    run = many_examples(tmp_path)
    build_report(run)
    html, md = (run / "report.html").read_text(), (run / "report.md").read_text()
    # 12 of the 15 English rows, folded under a summary per language (closed: no `open` attribute)
    assert '<details class="fold"><summary>Examples: en (12 of 15 test rows)</summary>' in html
    assert '<details class="fold"><summary>Examples: de (2 of 2 test rows)</summary>' in html
    assert '<details class="fold" open' not in html and "<script" not in html
    block = html.split("<summary>Examples: en")[1].split("</details>")[0]
    assert block.count("<tr>") == 1 + 12 and "theta4 output 11" in block and "theta4 output 12" not in block
    assert "(empty)" in block  # an empty output is shown as such
    examples_md = md.split("Examples (Table 6)")[1]
    assert "theta1 output 11" in examples_md and "theta1 output 12" not in examples_md
    # the default is 10 rows; 0 leaves the section out; a bad value is one line
    build_report(many_examples(tmp_path / "default", report_examples=None))
    assert "Examples: en (10 of 15 test rows)" in (tmp_path / "default/run/report.html").read_text()
    summary = build_report(many_examples(tmp_path / "none", report_examples=0))
    assert "examples" not in summary["sections"]
    with pytest.raises(MultimsdError, match="report_examples=-1: expected a whole number >= 0"):
        build_report(many_examples(tmp_path / "bad", report_examples=-1))


def test_score_chart_draws_the_intervals(built):
    """Table 5's chart: a bar per system and language, and an error bar from lo to hi of its interval."""
    from multimsd.render.charts import bar_chart
    from multimsd.report.build import build_sections
    from multimsd.report.load import load_run

    run, _, html, md = built
    sections = build_sections(load_run(run))
    charts = [
        b for s in sections for b in s.blocks if getattr(b, "svg", None) and "SARI per language" in b.title
    ]
    assert len(charts) == 1 and charts[0].title == "SARI per language (95 % CI)"
    svg = charts[0].svg
    assert svg.count('class="err"') == 6  # 3 systems x 2 languages
    for lo, hi in ((41.44, 47.44), (30.33, 36.33), (2.86, 8.86), (37.0, 43.0)):
        assert f"[{lo:.2f}, {hi:.2f}]</title></line>" in svg
    assert (
        html.count('class="err"') == 6
        and "SARI per language (95 % CI): copy baseline de 6.50 [3.50, 9.50], en 5.86 [2.86, 8.86]; SmolLM2 θ=1 de 38.50 [35.50, 41.50]"
        in md
    )
    # the error bar spans exactly the interval on the chart's y axis (ticks 0 .. 50: 0 at y=224, 50 at y=30)
    one = bar_chart(["en"], [Series("a", [(0.0, 20.0)], [(10.0, 30.0)])], "t", "SARI")
    line = re.search(r'<line class="err" x1="[\d.]+" x2="[\d.]+" y1="([\d.]+)" y2="([\d.]+)"', one)
    top, bottom = 30, 300 - 46 - 18
    scale = lambda v: top + (bottom - top) - v / 30 * (bottom - top)  # noqa: E731  (ticks 0 .. 30)
    assert (float(line.group(1)), float(line.group(2))) == pytest.approx((scale(10), scale(30)), abs=0.06)
