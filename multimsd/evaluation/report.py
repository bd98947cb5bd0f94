"""Writing the evaluation report: markdown tables (``table.md``), the bar chart (``scores.png``) and the
output directory with ``results.json``, written atomically.

Columns come from the metric registry (:mod:`multimsd.metrics.registry`): the metrics of
``metrics.include`` in registry order ("score" metrics, then the medical-term counts, then "features").
Where the stage computed bootstrap intervals, a per-language SARI / BLEU / FKGL cell reads
``41.87 [35.1, 48.6]`` (interval to one decimal), and a table of the paired comparisons follows, with a note
for every language and pair that its sentences cannot separate on some metric. A system whose outputs are
flagged degenerate in a column (:mod:`multimsd.metrics.degenerate`) gets a warning line, a ⚠ after its
scores there, and never the bold of the best; ``scores.png`` draws the bootstrap intervals as error bars.
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
from multimsd.metrics.degenerate import WHAT, flagged_columns, warning_lines

__all__ = ["markdown_report", "plot_scores", "write_outputs"]


# ---------------------------------------------------------------------------------------------- reports
def _fmt(x: Any, digits: int = 2) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def _with_ci(cell: str, res: dict | None, key: str) -> str:
    """``cell`` followed by the bootstrap interval of ``key`` in ``res``, where there is one."""
    ci = ((res or {}).get("ci") or {}).get(key)
    return f"{cell} [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else cell


def _lookup(res: dict | None, key: str) -> Any:
    """``res[key]``; a dotted key reads nested dicts (``quality.exact_copies``); None where absent."""
    for part in key.split("."):
        res = (res or {}).get(part)
    return res


def _metric_table(metric: str, title: str, results: dict, lower_better: bool | None = False) -> str:
    """One metric per language (and avg, all); the best per column in bold (``lower_better`` None: none)."""
    langs = results["languages"]
    systems = list(results["systems"])
    has_all = any(metric in results["systems"][s].get("all", {}) for s in systems)
    cols = [*langs, "avg", *(["all"] if has_all else [])]

    def value(s: str, col: str) -> float | None:
        r = results["systems"][s]
        if col == "avg":
            return sum(r[g][metric] for g in langs) / len(langs)
        return r.get(col, {}).get(metric)

    flagged = {s: flagged_columns(results, s) for s in systems}
    best = {}
    for col in cols:
        # degenerate outputs (all empty, say) may score "best" (FKGL 0.00): they do not compete
        vals = [v for s in systems if col not in flagged[s] and (v := value(s, col)) is not None]
        if vals:
            best[col] = min(vals) if lower_better else max(vals)
    lines = [f"## {title}", "", "| system | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for s in systems:
        cells = []
        for col in cols:
            v = value(s, col)
            cell = _fmt(v)
            bold = lower_better is not None and len(systems) > 1 and v == best.get(col)
            bold = bold and col not in flagged[s]
            cell = f"**{cell}**" if v is not None and bold else cell
            cell = f"{cell} ⚠" if v is not None and col in flagged[s] else cell
            cells.append(_with_ci(cell, results["systems"][s].get(col), metric) if col in langs else cell)
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_report(results: dict) -> str:
    include = results["settings"]["metrics"]["include"]
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
        + "; ".join(f"{g}: {' > '.join(e['system'] for e in rk['per_language'][g])}" for g in langs)
        + f"; overall (mean over languages): {' > '.join(e['system'] for e in rk['overall'])}",
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
    metrics = [m for name, m in METRICS.items() if name in include]
    for m in metrics:
        if m.summary_table:
            lower = None if m.higher_is_better is None else not m.higher_is_better
            out += ["", _metric_table(m.name, m.summary_table, results, lower_better=lower)]
    # Per-language columns: the scores, then the medical-term counts, then the text features.
    cols: list[Column] = [c for m in metrics if m.group != "features" for c in m.columns]
    if any(results["per_language"][g].get("term_types") for g in langs):
        cols.append(Column("terms", "term_types", reference="term_types.{side}"))
    cols += [c for m in metrics if m.group == "features" for c in m.columns]

    out += ["", "## Per language"]
    for g in langs + (["all"] if "all" in results["pooled"]["languages"] else []):
        if g == "all":
            head = f"### all (pooled: {', '.join(results['pooled']['computed']) or 'nothing'})"
        else:
            info = results["per_language"][g]
            mode = f"; METEOR {info['meteor_mode']}" if "meteor_mode" in info else ""
            head = (
                f"### {g} — tokenizer {info['tokenizer']}, {info['n_sentences']} sentences, "
                f"{info['n_references']} reference(s){mode}"
            )
        out += [
            "",
            head,
            "",
            "| system | " + " | ".join(c.header for c in cols) + " |",
            "|---|" + "---:|" * len(cols),
        ]
        if g != "all":
            for side in ("source", "reference"):
                cells = [
                    _fmt(_lookup(info, c.reference.format(side=side))) if c.reference else "" for c in cols
                ]
                out.append(f"| *{side}* | " + " | ".join(cells) + " |")
        for s, per in results["systems"].items():
            res = per.get(g, {})
            cells = [_with_ci(_fmt(_lookup(res, c.key), c.digits), res, c.key) for c in cols]
            out.append(f"| {s} | " + " | ".join(cells) + " |")
    skipped = results["pooled"]["skipped"]
    if skipped and len(langs) > 1:
        reasons: dict[str, list[str]] = {}
        for m, why in skipped.items():
            reasons.setdefault(why, []).append(m)
        out += [
            "",
            "Not pooled over languages: "
            + "; ".join(f"{', '.join(ms)}: {why}" for why, ms in reasons.items()),
        ]
    out += _outputs_table(results)
    out += _comparisons(results)
    return "\n".join(out) + "\n"


def _share(x: float | None) -> str:
    return "unknown" if x is None else f"{100 * x:.0f} %"


def _outputs_table(results: dict) -> list[str]:
    """Per system and language: the shares of empty, cut and input-identical outputs."""
    langs = results["languages"]
    deg = results.get("degenerate") or {}
    rows = []
    for s, per in results["systems"].items():
        for g in langs:
            o = (per.get(g) or {}).get("outputs")
            if not o:
                continue
            flag = ", ".join(WHAT[k] for k in o.get("flagged") or []) or "–"
            identical = "–" if o.get("identical_note") else _share(o["identical"])
            rows.append(
                f"| {s} | {g} | {o['n']} | {_share(o['empty'])} | {_share(o['cut'])} | {identical} | {flag} |"
            )
    if not rows:
        return []
    return [
        "",
        "## Outputs",
        "",
        f"Shares of empty outputs, of outputs cut at max_new_tokens (unknown where the predictions do not "
        f"record it) and of outputs identical to the input; above {100 * deg.get('max_share', 0.1):g} % "
        "(degenerate.max_share) a system is flagged ⚠ in that language.",
        "",
        "| system | lang | n | empty | cut | identical to input | flagged |",
        "|---|---|---:|---:|---:|---:|---|",
        *rows,
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
        "| lang | a | b | metric | a | b | a − b | p | separable |",
        "|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    unseparated: dict[tuple[str, str, str, int], list[str]] = {}
    for c in comps:
        name = c["metric"].upper()
        out.append(
            f"| {c['lang']} | {c['a']} | {c['b']} | {name} | {c['a_score']:.2f} | {c['b_score']:.2f} | "
            f"{c['diff']:+.2f} [{c['ci'][0]:.1f}, {c['ci'][1]:.1f}] | {format_p(c['p_value'], c.get('resamples'))} | "
            f"{'yes' if c['separable'] else 'no'} |"
        )
        if not c["separable"]:
            unseparated.setdefault((c["lang"], c["a"], c["b"], c["n_sentences"]), []).append(name)
    if unseparated:
        out.append("")
        out += [
            f"- {lang}, n={n} sentences: too few to separate {a} and {b} on {', '.join(ms)}"
            for (lang, a, b, n), ms in unseparated.items()
        ]
    return out


def plot_scores(results: dict, path: Path) -> Any:
    """Grouped bar chart: SARI (or the first ranked metric) per language, one bar per system, with the
    bootstrap interval of each per-language score as an error bar; returns the matplotlib figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    metric = (
        "sari" if "sari" in results["settings"]["metrics"]["include"] else results["ranking"]["metrics"][0]
    )
    langs = results["languages"]
    cols = [*langs, "avg"] if len(langs) > 1 else langs
    systems = list(results["systems"])
    width = 0.8 / len(systems)
    fig = Figure(figsize=(max(5.0, 1.0 + 0.9 * len(cols) * max(1, len(systems) / 2)), 3.6))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    with_ci = False
    for k, s in enumerate(systems):
        r = results["systems"][s]
        vals = [
            sum(r[g][metric] for g in langs) / len(langs) if col == "avg" else r[col][metric] for col in cols
        ]
        xs = [j - 0.4 + width * (k + 0.5) for j in range(len(cols))]
        bars = ax.bar(xs, vals, width, label=s)
        ax.bar_label(bars, fmt="%.1f", fontsize=7, padding=1)
        # the bootstrap interval of each per-language score (none for the average over languages)
        cis = [((r.get(col) or {}).get("ci") or {}).get(metric) if col != "avg" else None for col in cols]
        shown = [(x, v, ci) for x, v, ci in zip(xs, vals, cis) if ci and v is not None]
        if shown:
            with_ci = True
            ax.errorbar(
                [x for x, _, _ in shown],
                [v for _, v, _ in shown],
                yerr=[[v - ci[0] for _, v, ci in shown], [ci[1] - v for _, v, ci in shown]],
                fmt="none",
                ecolor="black",
                elinewidth=1,
                capsize=2,
                label="_ci",
            )
    ax.set_xticks(range(len(cols)), cols)
    ax.set_ylabel(metric.upper())
    conf = (results.get("bootstrap") or {}).get("confidence", 0.95)
    ci_note = f"; bars: {100 * conf:g} % bootstrap CI" if with_ci else ""
    ax.set_title(
        f"{metric.upper()} per language ({results['references']['n_sentences']} sentences{ci_note})",
        fontsize=10,
    )
    ax.legend(fontsize=8, ncols=min(len(systems), 4), loc="upper center", bbox_to_anchor=(0.5, -0.12))
    ax.margins(y=0.15)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return fig


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
