"""The report's sweep section: test SARI and BLEU against the swept value, and the selection by validation.

Why the values are read from ``run.json`` and nothing else: a sweep can be over any train.py key and any
values (θ, a learning rate of ``1e-4``, a scheduler's name), and a system's name holds only a token of its value
(``finetuned_lr1em4``, :mod:`multimsd.pipeline.sweep`). So the x of the chart and the first column of the table
come from each system's record, ``systems.<name>.sweep = {parameter, value}``; a run.json written before those
records swept θ only, and its systems' ``theta`` stands in for them. Numbers are plotted as a line over their
values; other values (strings, booleans) as bars, one group per value, in the order of ``sweep.values``.

The selection (``sweep.selected``, made by the pipeline on validation mean(SARI, BLEU)) is shown as recorded.
A tie (another swept system with exactly the selected one's validation mean) is said, with the rule that broke
it (:data:`TIE_RULE`: the pipeline's ``max`` keeps the first of equal scores, in the run's order of systems).
"""

from __future__ import annotations

from multimsd.metrics.degenerate import demotions, flag_text
from multimsd.render.blocks import Cell, Chart, Paragraph, Section, Table, bold_best, num
from multimsd.render.charts import Series, bar_chart, line_chart
from multimsd.render.scores import mean_or_none
from multimsd.report.load import Run
from multimsd.report.scores import languages_of


def swept_value(run: Run, system: str, parameter: str):
    """The value of ``parameter`` that ``system`` ran with, as run.json records it; None when it records none."""
    info = run.systems.get(system)
    if info is None:
        return None
    if info.sweep is not None:
        return info.sweep.get("value") if info.sweep.get("parameter") == parameter else None
    return info.theta if parameter == "loss.theta" else None  # a run.json from before the records


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def value_text(value) -> str:
    """A swept value as the table shows it: ``1``, ``1.5``, ``0.0001`` (a float in its shortest exact form),
    ``true``, ``linear``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    return str(value)


def value_chart(
    title: str, x_label: str, y_label: str, values: list, series: list[tuple[str, list, list]]
) -> Chart:
    """SARI / BLEU per swept value: a line over the values when all are numbers, else grouped bars.
    ``series``: (name, one score or None per value, one interval or None per value)."""
    if all(is_number(v) for v in values):
        lines = []
        for name, ys, errs in series:
            kept = [i for i, y in enumerate(ys) if y is not None]
            lines.append(Series(name, [(float(values[i]), ys[i]) for i in kept], [errs[i] for i in kept]))
        svg = line_chart(lines, title, x_label, y_label)
    else:
        bars = [
            Series(
                name,
                [(i, y) for i, y in enumerate(ys) if y is not None],
                [e for y, e in zip(ys, errs) if y is not None],
            )
            for name, ys, errs in series
        ]
        svg = bar_chart([value_text(v) for v in values], bars, title, y_label)
    return Chart(title, svg, title)


# How multimsd.pipeline.run.select_swept / multimsd.pipeline.seeds.select_on_seed_mean break a tie: max() over the
# swept systems in the run's order (each trained system's values in the order of sweep.values) keeps the first.
TIE_RULE = "a tie goes to the value listed first in sweep.values"


def selection_tie(sweep: dict) -> list[str]:
    """The swept systems (with seeds: the swept values' base names) whose validation mean(SARI, BLEU) is exactly
    the selected one's, the selected first, in the run's order after it; [] when nothing ties with it."""
    val, selected = sweep.get("validation") or {}, sweep.get("selected")
    best = (val.get(selected) or {}).get("mean_sari_bleu")
    if best is None:
        return []
    tied = [n for n, v in val.items() if n != selected and (v or {}).get("mean_sari_bleu") == best]
    return [selected, *tied] if tied else []


def tie_text(sweep: dict, label=str) -> str:
    """`` — a tie: A and B score the same (31.20); a tie goes to the value listed first in sweep.values`` for
    a tied selection (``label``: name -> how to print it), else ``""``."""
    tied = selection_tie(sweep)
    if not tied:
        return ""
    names = [label(n) for n in tied]
    both = " and ".join(names) if len(names) == 2 else ", ".join(names[:-1]) + " and " + names[-1]
    score = num(sweep["validation"][tied[0]]["mean_sari_bleu"])
    return f" — a tie: {both} score the same ({score}); {TIE_RULE}"


def selection_warnings(run: Run, sweep: dict, selected: dict[str, str]) -> list:
    """A warning under the selection when a selected system's *validation* outputs are degenerate
    (``sweep.validation_flagged``, :func:`multimsd.pipeline.sweep.validation_flags`): the choice rests on
    scores of outputs that are mostly cut or copies. ``selected``: system name -> the label to print."""
    flagged = sweep.get("validation_flagged") or {}
    share = (run.evaluation.get("degenerate") or {}).get("max_share")
    above = f" (above {round(100 * share)} %)" if share is not None else ""
    return [
        Paragraph(
            f"⚠ {label}: its validation outputs, on which it was selected, are degenerate{above}: "
            f"{flag_text(flagged[name])}. The scores it was chosen on describe those outputs; raise "
            "generation.max_new_tokens or look at the outputs before relying on the choice."
        )
        for name, label in selected.items()
        if flagged.get(name)
    ]


def sweep_section(run: Run) -> Section | None:
    sweep = run.sweep
    if not sweep or not sweep.get("systems"):
        return None
    ev, langs = run.evaluation, languages_of(run)
    param = sweep.get("parameter", "θ")
    pts = []
    for name in sweep["systems"]:
        value = swept_value(run, name, param)
        res = ev["systems"].get(name)
        if value is None or res is None:
            continue
        sari = mean_or_none([(res.get(g) or {}).get("sari") for g in langs])
        bleu = mean_or_none([(res.get(g) or {}).get("bleu") for g in langs])
        pts.append((value, name, sari, bleu))
    if not pts:
        return None
    if all(is_number(p[0]) for p in pts):  # numbers in ascending order; other values in the run's order
        pts.sort(key=lambda p: (float(p[0]), p[1]))
    sec = Section(f"Sweep over {param}", "sweep")

    def err(name: str, metric: str) -> tuple[float, float] | None:
        # an interval is only defined per language: shown when the run has one language
        ci = (
            ((ev["systems"][name].get(langs[0]) or {}).get("ci") or {}).get(metric)
            if len(langs) == 1
            else None
        )
        return (float(ci[0]), float(ci[1])) if ci else None

    series = [
        (label, [p[col] for p in pts], [err(p[1], metric) for p in pts])
        for metric, label, col in (("sari", "SARI", 2), ("bleu", "BLEU", 3))
    ]
    title = f"SARI and BLEU vs {param}"
    sec.blocks.append(value_chart(title, param, "score (avg over languages)", [p[0] for p in pts], series))
    val = sweep.get("validation") or {}
    selected = sweep.get("selected")
    tied = selection_tie(sweep)
    rows = [
        [
            Cell(value_text(v), num=is_number(v)),
            Cell(run.label(n) + mark(n, selected, tied)),
            Cell(num(s), num=True),
            Cell(num(b), num=True),
            Cell(num((val.get(n) or {}).get("mean_sari_bleu")), num=True, bold=n == selected),
        ]
        for v, n, s, b in pts
    ]
    # the one rule for "best" (multimsd.metrics.best): a system flagged for degenerate outputs in any language
    # is never the bold best of the test scores, which average over the languages
    values = [[None, s, b, None] for _, _, s, b in pts]
    flagged = [[demotions(ev, n, "avg")] * 4 for _, n, _, _ in pts]
    bold_best(rows, values, [False, False, False, False], flagged)
    if selected:
        sec.blocks.append(
            Paragraph(
                f"Selected as the paper does, by the mean of SARI and BLEU on the validation split: "
                f"{run.label(selected)}{tie_text(sweep, run.label)}. Test scores play no part in the choice."
            )
        )
        sec.blocks.extend(selection_warnings(run, sweep, {selected: run.label(selected)}))
    header = [param, "system", "test SARI", "test BLEU", "val mean(SARI, BLEU)"]
    sec.blocks.append(Table(header, rows, caption=f"Scores per {param}"))
    return sec


def mark(name: str, selected: str | None, tied: list[str]) -> str:
    """A swept system's mark in a selection table: `` (selected)``, `` (selected, tie)``, `` (tie)`` or none."""
    if name == selected:
        return " (selected, tie)" if tied else " (selected)"
    return " (tie)" if name in tied else ""
