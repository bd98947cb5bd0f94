"""Writing the evaluation report: markdown tables (``table.md``), the bar chart (``scores.png``) and the
output directory with ``results.json``, written atomically.

The tables and the chart come from the library the run's report uses too (:mod:`multimsd.render`): the
score tables, the table of degenerate outputs and the chart's bars are built by
:mod:`multimsd.render.scores` and written by the one Markdown writer, so ``table.md`` and ``report.md`` show
a score, its interval, its ⚠ and its bold alike. Only the text between the tables (headings, the ranking,
notes) is written here.

Columns come from the metric registry (:mod:`multimsd.metrics.registry`): the metrics of
``metrics.include`` in registry order ("score" metrics, then the medical-term counts, then "features").
Where the stage computed bootstrap intervals, a per-language SARI / BLEU / FKGL cell reads
``41.87 [35.1, 48.6]`` (interval to one decimal), and a table of the paired comparisons follows, with a note
for every language and pair that its sentences cannot separate on some metric. A system whose outputs are
flagged degenerate in a column (:mod:`multimsd.metrics.degenerate`) gets a warning line, a ⚠ after its
scores there, and never the bold of the best; the ranking line lists it after the others, with its flags
(the one rule for "best": :mod:`multimsd.metrics.best`). ``scores.png`` draws the bootstrap intervals as
error bars.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from multimsd.config import EvaluateConfig
from multimsd.fsutil import atomic_directory
from multimsd.metrics import METRICS, Column
from multimsd.metrics.bootstrap import format_p
from multimsd.metrics.degenerate import WHAT, warning_lines
from multimsd.render.blocks import Cell, Table, interval, num
from multimsd.render.figure import bar_figure
from multimsd.render.markdown import table_lines
from multimsd.render.scores import lookup, outputs_table, score_series, score_table

__all__ = ["markdown_report", "plot_scores", "write_outputs"]


# ---------------------------------------------------------------------------------------------- reports
def _table(t: Table) -> list[str]:
    return table_lines(t)[:-1]  # without the empty line after it: the caller spaces the document


def _ranked(entries: list[dict]) -> str:
    """``a > b > c (⚠ empty)``: a ranking, a flagged system with its flags."""
    return " > ".join(
        e["system"] + (f" (⚠ {', '.join(WHAT.get(k, k) for k in e['flagged'])})" if e.get("flagged") else "")
        for e in entries
    )


def markdown_report(results: dict) -> str:
    """``table.md``: the heading and ranking, the summary tables, a table per language, then the shares of
    degenerate outputs and the paired comparisons."""
    include = results["settings"]["metrics"]["include"]
    metrics = [m for name, m in METRICS.items() if name in include]
    out = _heading(results)
    out += _summary_tables(results, metrics)
    out += _per_language(results, _columns(results, metrics))
    out += _not_pooled(results)
    out += _outputs_table(results)
    out += _comparisons(results)
    return "\n".join(out) + "\n"


def _heading(results: dict) -> list[str]:
    """The title, what was scored and how, the ranking, the bootstrap's settings and the warnings."""
    langs = results["languages"]
    rk = results["ranking"]
    out = [
        f"# Evaluation: {results['references']['name']}",
        "",
        f"{results['references']['n_sentences']} sentences in {len(langs)} language(s); tokenizers: "
        + ", ".join(f"{g} {results['per_language'][g]['tokenizer']}" for g in langs)
        + f"; lowercase={str(results['settings']['metrics']['lowercase']).lower()}. "
        "`avg` = mean over languages; `all` = pooled corpus score (only where every language shares a "
        "tokenizer).",
        "",
        f"Ranking by {rk['select_by']}: "
        + "; ".join(f"{g}: {_ranked(rk['per_language'][g])}" for g in langs)
        + f"; overall (mean over languages): {_ranked(rk['overall'])}"
        + (
            ". Systems flagged ⚠ (degenerate outputs, below) follow the others and are never the best."
            if any(e.get("flagged") for e in rk["overall"])
            else ""
        ),
    ]
    b = results.get("bootstrap") or {}
    if b.get("samples") and b.get("metrics"):
        out += [
            "",
            f"[lo, hi]: {100 * b['confidence']:g} % bootstrap confidence interval of "
            f"{', '.join(m.upper() for m in b['metrics'])} per language ({b['samples']} resamples of the "
            f"sentences, seed {b['seed']}, percentile method).",
        ]
    warnings = warning_lines(results)
    if warnings:
        out += ["", *(f"> **{w}**" for w in warnings)]
    return out


def _summary_tables(results: dict, metrics: list) -> list[str]:
    """One table per metric that has a summary table: each system's score per language, avg (and all)."""
    langs = results["languages"]
    out: list[str] = []
    for m in metrics:
        if m.summary_table:
            lower = None if m.higher_is_better is None else not m.higher_is_better
            pooled = any(m.name in per.get("all", {}) for per in results["systems"].values())
            cols = [*langs, "avg", *(["all"] if pooled else [])]
            out += [
                "",
                f"## {m.summary_table}",
                "",
                *_table(score_table(results, m.name, cols, lower, ci_digits=1)),
            ]
    return out


def _columns(results: dict, metrics: list) -> list[Column]:
    """Per-language columns: the scores, then the medical-term counts, then the text features."""
    cols: list[Column] = [c for m in metrics if m.group != "features" for c in m.columns]
    if any(results["per_language"][g].get("term_types") for g in results["languages"]):
        cols.append(Column("terms", "term_types", reference="term_types.{side}"))
    cols += [c for m in metrics if m.group == "features" for c in m.columns]
    return cols


def _per_language(results: dict, cols: list[Column]) -> list[str]:
    """A table per language (and the pooled "all"): the source and references, then every system."""
    out = ["", "## Per language"]
    for g in results["languages"] + (["all"] if "all" in results["pooled"]["languages"] else []):
        rows = [] if g == "all" else _source_and_reference_rows(results["per_language"][g], cols)
        for s, per in results["systems"].items():
            res = per.get(g, {})
            ci = res.get("ci") or {}
            rows.append(
                [
                    Cell(s),
                    *(Cell(num(lookup(res, c.key), c.digits), ci=interval(ci.get(c.key), 1)) for c in cols),
                ]
            )
        for row in rows:  # every column after the name holds numbers: right-aligned
            for cell in row[1:]:
                cell.num = True
        out += [
            "",
            _language_heading(results, g),
            "",
            *_table(Table(["system", *(c.header for c in cols)], rows)),
        ]
    return out


def _language_heading(results: dict, g: str) -> str:
    """``### en — tokenizer 13a, 120 sentences, 1 reference(s)``; for "all", what was pooled."""
    if g == "all":
        return f"### all (pooled: {', '.join(results['pooled']['computed']) or 'nothing'})"
    info = results["per_language"][g]
    mode = f"; METEOR {info['meteor_mode']}" if "meteor_mode" in info else ""
    return (
        f"### {g} — tokenizer {info['tokenizer']}, {info['n_sentences']} sentences, "
        f"{info['n_references']} reference(s){mode}"
    )


def _source_and_reference_rows(info: dict, cols: list[Column]) -> list[list[Cell]]:
    """The *source* and *reference* rows of one language's table (blank where a column has no such value)."""
    rows = []
    for side in ("source", "reference"):
        cells = [
            Cell(num(lookup(info, c.reference.format(side=side)))) if c.reference else Cell("") for c in cols
        ]
        rows.append([Cell(f"*{side}*"), *cells])
    return rows


def _not_pooled(results: dict) -> list[str]:
    """Which metrics were not pooled over the languages, and why."""
    skipped = results["pooled"]["skipped"]
    if not (skipped and len(results["languages"]) > 1):
        return []
    reasons: dict[str, list[str]] = {}
    for m, why in skipped.items():
        reasons.setdefault(why, []).append(m)
    return [
        "",
        "Not pooled over languages: " + "; ".join(f"{', '.join(ms)}: {why}" for why, ms in reasons.items()),
    ]


def _outputs_table(results: dict) -> list[str]:
    """Per system and language: the shares of empty, cut and input-identical outputs."""
    table = outputs_table(results)
    if table is None:
        return []
    deg = results.get("degenerate") or {}
    return [
        "",
        "## Outputs",
        "",
        f"Shares of empty outputs, of outputs cut at the length cap (unknown where the predictions do not "
        f"record it) and of outputs identical to the input; above {100 * deg.get('max_share', 0.1):g} % "
        "(degenerate.max_share) a system is flagged ⚠ in that language.",
        "",
        *_table(table),
    ]


def _comparisons(results: dict) -> list[str]:
    """The paired-bootstrap table and a note per language and pair that cannot be separated on a metric."""
    b = results.get("bootstrap") or {}
    comps = results.get("comparisons") or []
    if not comps:
        return []
    alpha = float(b.get("alpha", 0.05))
    level = f"{100 * (1 - alpha):g} %"
    out = [
        "",
        "## Paired bootstrap comparisons",
        "",
        f"Difference a − b per language with its {level} interval ({b['samples']} resamples of the sentences, "
        f"seed {b['seed']}; both systems on the same resamples). One rule, α = {alpha:g}: "
        f"{b.get('comparison_rule') or 'percentile bootstrap'}.",
        "",
    ]
    rows = []
    unseparated: dict[tuple[str, str, str, int], list[str]] = {}
    for c in comps:
        name = c["metric"].upper()
        rows.append(
            [
                Cell(c["lang"]), Cell(c["a"]), Cell(c["b"]), Cell(name),
                Cell(num(c["a_score"]), num=True), Cell(num(c["b_score"]), num=True),
                Cell(f"{c['diff']:+.2f}", num=True, ci=interval(c["ci"], 1)),
                Cell(format_p(c["p_value"], c.get("resamples")), num=True),
                Cell("yes" if c["separable"] else "no"),
            ]
        )  # fmt: skip
        if not c["separable"]:
            unseparated.setdefault((c["lang"], c["a"], c["b"], c["n_sentences"]), []).append(name)
    out += _table(Table(["lang", "a", "b", "metric", "a", "b", "a − b", "p", "separable"], rows))
    if unseparated:
        out.append("")
        out += [
            f"- {lang}, n={n} sentences: too few to separate {a} and {b} on {', '.join(ms)}"
            for (lang, a, b, n), ms in unseparated.items()
        ]
    return out


def plot_scores(results: dict, path: Path) -> Any:
    """Grouped bar chart: SARI (or the first ranked metric) per language (and their average), one bar per
    system, with the bootstrap interval of each per-language score as an error bar; returns the matplotlib
    figure (:func:`multimsd.render.figure.bar_figure`)."""
    metric = (
        "sari" if "sari" in results["settings"]["metrics"]["include"] else results["ranking"]["metrics"][0]
    )
    langs = results["languages"]
    cols = [*langs, "avg"] if len(langs) > 1 else langs
    series = score_series(results, cols, metric)
    conf = (results.get("bootstrap") or {}).get("confidence", 0.95)
    with_ci = any(e for s in series for e in s.errors or [])
    ci_note = f"; bars: {100 * conf:g} % bootstrap CI" if with_ci else ""
    title = f"{metric.upper()} per language ({results['references']['n_sentences']} sentences{ci_note})"
    return bar_figure(cols, series, title, metric.upper(), path)


def write_outputs(out_dir: Path, results: dict, markdown: str, cfg: EvaluateConfig) -> None:
    """results.json, table.md, evaluate_config.yaml (and scores.png) into ``out_dir``, all or nothing."""
    with atomic_directory(out_dir) as tmp:
        (tmp / "results.json").write_text(
            json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (tmp / "table.md").write_text(markdown, encoding="utf-8")
        (tmp / "evaluate_config.yaml").write_text(
            OmegaConf.to_yaml(OmegaConf.structured(cfg)), encoding="utf-8"
        )
        if cfg.output.plot:
            plot_scores(results, tmp / "scores.png")
