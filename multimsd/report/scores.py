"""The evaluation sections: per-language scores with confidence intervals (Table 5), the paired
comparisons, medical-term types (Table 8) and example outputs side by side (Table 6).

Which scores get a table is read from the evaluation's results.json (``metrics``: each computed metric's
columns, direction and whether the report shows it, as the metric registry describes it), so a metric a
plugin registered shows up here with its interval, if it has one. A results.json written before it carried
``metrics`` is read with the registered metrics' facts (:func:`multimsd.metrics.describe_metrics`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from multimsd.errors import MultimsdError
from multimsd.metrics.bootstrap import format_p
from multimsd.metrics.degenerate import warning_lines
from multimsd.render.blocks import Cell, Chart, Paragraph, Section, Table, interval, num
from multimsd.render.charts import bar_chart
from multimsd.render.scores import languages, lookup, mean_or_none, outputs_table, score_series, score_table
from multimsd.report.load import Run, read_predictions

# The rows under a metric's systems, for scale (a column's `scale` sides of its per-language `reference`)
SIDE_NAMES = {"source": "source (input)", "reference": "reference"}
EXAMPLES_PER_LANGUAGE = 10
"""Example rows per language when the run's config does not say (``report_examples``)."""


@dataclass(frozen=True)
class ScoreTable:
    key: str  # result key (``a.b`` reads ``result["a"]["b"]``); its interval is ``ci[key]``
    title: str
    low: bool | None  # lower is better; None: neither, no bold
    scale: tuple[tuple[str, str], ...] = ()  # (per-language key, row name)


def score_tables(evaluation: dict) -> list[ScoreTable]:
    """The tables of Table 5, in the evaluation's metric order: every column of every metric shown in the
    report. Tables of metrics the run did not compute are left out later (no values)."""
    metrics: Any = evaluation.get("metrics")
    if metrics is None:  # results.json of an older multimsd: the registered metrics describe themselves
        from multimsd.metrics import describe_metrics

        metrics = describe_metrics()
    tables = []
    for m in metrics.values():
        if not m.get("report", True):
            continue
        better = m.get("higher_is_better", True)
        for c in m.get("columns") or []:
            ref = c.get("reference")
            sides = (c.get("scale") or ()) if ref else ()
            scale = tuple((ref.format(side=side), SIDE_NAMES.get(side, side)) for side in sides)
            tables.append(
                ScoreTable(
                    key=c["key"],
                    title=c.get("title") or c.get("header") or c["key"],
                    low=None if better is None else not better,
                    scale=scale,
                )
            )
    return tables


def languages_of(run: Run) -> list[str]:
    return languages(run.evaluation)


def score_section(run: Run) -> Section:
    ev, langs = run.evaluation, languages_of(run)
    systems = list(ev["systems"])
    per_lang = ev.get("per_language") or {}
    sec = Section("Simplification quality (Table 5)", "scores")
    n = ", ".join(f"{g} {per_lang.get(g, {}).get('n_sentences', '?')}" for g in langs)
    boot = ev.get("bootstrap")
    text = f"Test sentences per language: {n}. 'avg' is the mean over languages."
    if boot:
        text += (
            f" Brackets: {round(100 * float(boot.get('confidence', 0.95)))} % bootstrap confidence interval "
            f"({boot.get('samples', '?')} resamples of the test sentences, {boot.get('method', 'bootstrap')}, "
            f"seed {boot.get('seed', '?')})."
        )
    elif not any("ci" in r for s in systems for r in ev["systems"][s].values() if isinstance(r, dict)):
        text += " No confidence intervals in the evaluation results (bootstrap was not run)."
    sec.blocks.append(Paragraph(text))
    for w in warning_lines(ev, run.label):
        sec.blocks.append(Paragraph(w, note=True))
    chart = score_chart(run, langs)
    if chart is not None:
        sec.blocks.append(chart)
    cols = [*langs, *(["avg"] if len(langs) > 1 else [])]
    for t in score_tables(ev):
        if not any(lookup(r, t.key) is not None for res in ev["systems"].values() for r in res.values()):
            continue
        caption = (
            t.title
            if t.low is None
            else f"{t.title} ({'lower' if t.low else 'higher'} is better; best per column in bold)"
        )
        table = score_table(ev, t.key, cols, t.low, run.label, caption=caption)
        table.inline = len(cols) <= 4
        # e.g. the readability of the inputs and of the references, for scale; they do not compete
        for key, name in t.scale:
            vals = [lookup(per_lang.get(g), key) for g in langs]
            if len(langs) > 1:
                vals.append(mean_or_none(vals))
            table.rows.append([Cell(name), *(Cell(num(v), num=True) for v in vals)])
        sec.blocks.append(table)
    sec.blocks.extend(outputs_blocks(run))
    sec.blocks.extend(comparison_blocks(run))
    return sec


def outputs_blocks(run: Run) -> list:
    """The shares of empty, cut and input-identical outputs per system and language (when recorded)."""
    ev = run.evaluation
    table = outputs_table(ev, run.label, caption="Degenerate outputs")
    if table is None:
        return []
    limit = (ev.get("degenerate") or {}).get("max_share", 0.1)
    return [
        Paragraph(
            f"Outputs: shares of empty outputs, of outputs cut at the length cap (generation stopped at the token "
            f"cap, eval.max_new_tokens or the source-length bound eval.length_ratio, not at an end token; unknown where the predictions do not record it) and of outputs "
            f"identical to their input. Above {100 * limit:g} % (degenerate.max_share) a system is flagged ⚠ in "
            "that language, and none of its scores there is marked best."
        ),
        table,
    ]


def score_chart(run: Run, langs: list[str], metric: str = "sari") -> Chart | None:
    """SARI per language, a bar per system, with its bootstrap interval as an error bar where there is one."""
    ev = run.evaluation
    series = score_series(ev, langs, metric, run.label)
    if not any(s.points for s in series):
        return None
    with_ci = any(e for s in series for e in s.errors or [])
    conf = round(100 * float((ev.get("bootstrap") or {}).get("confidence", 0.95)))
    title = f"{metric.upper()} per language" + (f" ({conf} % CI)" if with_ci else "")
    width = max(520, 120 + 60 * len(langs) * max(1, len(series)) // 2)
    alt = title + ": " + "; ".join(
        f"{s.name} " + ", ".join(
            f"{langs[int(x)]} {y:.2f}" + (f" [{e[0]:.2f}, {e[1]:.2f}]" if e else "")
            for (x, y), e in zip(s.points, s.errors or [None] * len(s.points))
        )
        for s in series
    )  # fmt: skip
    return Chart(title, bar_chart(langs, series, title, metric.upper(), width=width), alt)


def p_value(p: float | None, resamples: int | None = None) -> str:
    return format_p(p, resamples)


def comparison_blocks(run: Run) -> list:
    comps = run.evaluation.get("comparisons")
    if not comps:
        return [
            Paragraph(
                "No paired comparisons in the evaluation results: whether the differences between systems "
                "are larger than the test set's sampling noise is not known.",
                note=True,
            )
        ]
    boot = run.evaluation.get("bootstrap") or {}
    alpha = float(boot.get("alpha") or 0.05)
    rows, unsure = [], []
    for c in comps:
        ci = c.get("ci")
        sep = c.get("separable")
        if sep is None and ci and len(ci) == 2:
            sep = not (ci[0] <= 0 <= ci[1])
        verdict = "yes" if sep else "no: too few sentences to separate"
        if not sep:
            unsure.append(c)
        p = c.get("p_value")
        rows.append(
            [
                Cell(f"{run.label(c.get('a', '?'))} vs {run.label(c.get('b', '?'))}"),
                Cell(str(c.get("lang", ""))),
                Cell(str(c.get("metric", "")).upper()),
                Cell(num(c.get("a_score")), num=True),
                Cell(num(c.get("b_score")), num=True),
                Cell(num(c.get("diff")), num=True, ci=interval(ci)),
                Cell(p_value(p, c.get("resamples")), num=True),
                Cell(num(c.get("n_sentences")), num=True),
                Cell(verdict, bold=bool(sep)),
            ]
        )
    level = f"{100 * (1 - alpha):g} %"
    header = ["comparison (a vs b)", "lang", "metric", "a", "b", f"a − b [{level} CI]", "p", "n", "separable"]
    rule = boot.get("comparison_rule")
    blocks: list = [
        Paragraph(
            f"Significance, one rule at α = {alpha:g}: "
            + (
                rule
                if rule
                else "separable when the interval of the difference excludes 0 (an older results.json: "
                "its p-value may follow another rule)"
            )
            + ". The interval, the p-value and the verdict come from the same resampled differences."
        ),
        Table(header, rows, caption="Paired bootstrap: difference between two systems"),
    ]
    if unsure:
        which = "; ".join(
            f"{run.label(c.get('a', '?'))} vs {run.label(c.get('b', '?'))} on {c.get('lang', '')} "
            f"{str(c.get('metric', '')).upper()} (n = {c.get('n_sentences', '?')})"
            for c in unsure
        )
        blocks.append(
            Paragraph(
                f"Not separable: {which}. The confidence interval of the difference includes 0: the test set "
                "is too small to separate these systems, and their order in the tables above may be chance.",
                note=True,
            )
        )
    return blocks


def terms_section(run: Run) -> Section | None:
    ev, langs = run.evaluation, languages_of(run)
    per_lang = ev.get("per_language") or {}
    has = any("term_types" in (ev["systems"][s].get(g) or {}) for s in ev["systems"] for g in langs)
    if not has:
        return None
    rows = []
    for key, name in (("source", "source (input)"), ("reference", "reference")):
        vals = [(per_lang.get(g, {}).get("term_types") or {}).get(key) for g in langs]
        rows.append([Cell(name), *(Cell(num(v), num=True) for v in vals)])
    for s in ev["systems"]:
        vals = [(ev["systems"][s].get(g) or {}).get("term_types") for g in langs]
        rows.append([Cell(run.label(s)), *(Cell(num(v), num=True) for v in vals)])
    return Section(
        "Medical-term types (Table 8)",
        "terms",
        [
            Paragraph(
                "Distinct medical terms (from the language's term dictionary) in each text; a simplification "
                "that keeps fewer terms than its input explains or drops them."
            ),
            Table(["text", *langs], rows, caption="Medical-term types per language"),
            *dictionaries_note(per_lang, langs),
        ],
    )


def dictionaries_note(per_lang: dict, langs: list[str]) -> list[Paragraph]:
    """Which term lists counted, with their sizes; the bundled ones say they are a demo (issue #47)."""
    from multimsd.metrics.terms import BUNDLED_NOTE

    dicts = {g: (per_lang.get(g) or {}).get("terms_dictionary") for g in langs}
    used = [
        f"{g} {d['n_terms']:,} terms" + (" (bundled)" if d.get("bundled") else "")
        for g, d in dicts.items()
        if d
    ]
    if not used:
        return []
    text = "Term dictionaries: " + ", ".join(used) + "."
    if any(d and d.get("bundled") for d in dicts.values()):
        text += f" The bundled lists are {BUNDLED_NOTE}."
    return [Paragraph(text, note=True)]


def _simple(rec: dict) -> str:
    s = rec.get("simple", "")
    return " ‖ ".join(s) if isinstance(s, list) else str(s)


def examples_section(run: Run) -> Section | None:
    if not run.references:
        return None
    by_lang: dict[str, list[dict]] = {}
    for rec in run.references:
        by_lang.setdefault(str(rec.get("lang")), []).append(rec)
    outputs: dict[str, dict[str, list[str]]] = {}
    for name in run.evaluation["systems"]:
        info = run.systems.get(name)
        if info is None:
            continue
        for g, recs in by_lang.items():
            if info.predictions is not None:
                outputs.setdefault(name, {})[g] = read_predictions(info.predictions, g, len(recs))
            elif info.kind == "copy":
                outputs.setdefault(name, {})[g] = [str(r.get("complex", "")) for r in recs]
    n = examples_per_language(run)
    if n == 0:
        return None
    sec = Section(
        "Examples (Table 6)",
        "examples",
        [
            Paragraph(
                f"The first {n} test rows of each language (report_examples), folded per language: click a "
                "language to open its rows. Several references are separated by ‖; an empty output shows "
                "as (empty)."
            )
        ],
    )
    for g in sorted(by_lang):
        header = ["#", "input", "reference", *(run.label(s) for s in outputs)]
        rows = []
        for i, rec in enumerate(by_lang[g][:n]):
            row = [Cell(str(i + 1), num=True), Cell(str(rec.get("complex", ""))), Cell(_simple(rec))]
            row += [Cell(outputs[s][g][i] if outputs[s][g][i].strip() else "(empty)") for s in outputs]
            rows.append(row)
        summary = f"Examples: {g} ({len(rows)} of {len(by_lang[g])} test rows)"
        sec.blocks.append(Table(header, rows, caption=f"Examples: {g}", wide=True, collapsed=summary))
    return sec


def examples_per_language(run: Run) -> int:
    """``report_examples`` of the run's config (10 when absent); a bad value is one error line."""
    value = (run.meta.get("config") or {}).get("report_examples", EXAMPLES_PER_LANGUAGE)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MultimsdError(
            f"report_examples={value!r}: expected a whole number >= 0 (example rows per language)"
        )
    return value
