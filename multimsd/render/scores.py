"""The score blocks of an evaluation's ``results.json``, built once for both documents that show them: the
evaluation's ``table.md`` (:mod:`multimsd.evaluation.report`) and the run's report
(:mod:`multimsd.report.scores`).

Here are the one reading of a result key (:func:`lookup`), the one table of a metric per language with the
best per column in bold (:func:`score_table`; "best" by :mod:`multimsd.metrics.best`, a ⚠ after a flagged
score), the one table of degenerate outputs (:func:`outputs_table`) and the one chart data of a metric per
language (:func:`score_series`, drawn as SVG in the report and as ``scores.png`` by the evaluation).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from multimsd.metrics.degenerate import WHAT, demotions
from multimsd.render.blocks import Cell, Table, bold_best, interval, num
from multimsd.render.charts import Series

__all__ = [
    "column_value",
    "languages",
    "lookup",
    "mean_or_none",
    "outputs_table",
    "score_series",
    "score_table",
    "share",
]


def lookup(res: dict | None, key: str) -> Any:
    """``res[key]``; a dotted key reads nested dicts (``quality.exact_copies``); None where absent."""
    for part in key.split("."):
        res = (res or {}).get(part)
    return res


def languages(ev: dict) -> list[str]:
    """The evaluated languages in the results' order (those its systems were scored in, for a results.json
    without the list)."""
    return list(ev.get("languages") or sorted({g for s in ev["systems"].values() for g in s}))


def mean_or_none(values: list[float | None]) -> float | None:
    return sum(values) / len(values) if values and all(v is not None for v in values) else None


def column_value(ev: dict, system: str, col: str, key: str) -> float | None:
    """``key`` of ``system`` in a column: a language, "avg" (the mean over the languages, None where one
    lacks it) or "all" (the pooled score)."""
    res = ev["systems"][system]
    if col == "avg":
        return mean_or_none([lookup(res.get(g), key) for g in languages(ev)])
    return lookup(res.get(col), key)


def score_table(
    ev: dict,
    key: str,
    cols: list[str],
    low: bool | None,
    label: Callable[[str], str] = str,
    ci_digits: int = 2,
    caption: str = "",
) -> Table:
    """One row per system, one column per entry of ``cols``: ``key``'s value, a ⚠ where the system's outputs
    are flagged there, the bootstrap interval of a language's value (``ci_digits`` decimals) and, unless
    ``low`` is None (no direction), the best of each column in bold."""
    systems = list(ev["systems"])
    rows, values, flagged = [], [], []
    for s in systems:
        cells = [Cell(label(s))]
        vals = [column_value(ev, s, c, key) for c in cols]
        flags = [demotions(ev, s, c) for c in cols]
        for c, v, f in zip(cols, vals, flags, strict=True):
            ci = None
            if c in languages(ev):
                ci = interval(((ev["systems"][s].get(c) or {}).get("ci") or {}).get(key), ci_digits)
            cells.append(Cell(num(v) + (" ⚠" if f and v is not None else ""), num=True, ci=ci))
        rows.append(cells)
        values.append(vals)
        flagged.append(flags)
    if low is not None:
        bold_best(rows, values, [low] * len(cols), flagged)
    return Table(["system", *cols], rows, caption=caption)


def share(x: float | None) -> str:
    return "unknown" if x is None else f"{100 * x:.0f} %"


def outputs_table(ev: dict, label: Callable[[str], str] = str, caption: str = "") -> Table | None:
    """Per system and language the shares of empty, cut and input-identical outputs, those above
    ``degenerate.max_share`` in bold and named in the last column; None when the results record none."""
    rows = []
    for s, per in ev["systems"].items():
        for g in languages(ev):
            o = (per.get(g) or {}).get("outputs")
            if not o:
                continue
            kinds = o.get("flagged") or []
            rows.append(
                [
                    Cell(label(s)),
                    Cell(g),
                    Cell(num(o.get("n")), num=True),
                    Cell(share(o.get("empty")), num=True, bold="empty" in kinds),
                    Cell(share(o.get("cut")), num=True, bold="cut" in kinds),
                    Cell("–" if o.get("identical_note") else share(o.get("identical")), num=True,
                         bold="identical" in kinds),
                    Cell("⚠ " + ", ".join(WHAT.get(k, k) for k in kinds) if kinds else "–"),
                ]
            )  # fmt: skip
    if not rows:
        return None
    header = ["system", "lang", "n", "empty", "cut", "identical to input", "flagged"]
    return Table(header, rows, caption=caption)


def score_series(ev: dict, cols: list[str], metric: str, label: Callable[[str], str] = str) -> list[Series]:
    """The bars of a metric's chart: per system its value in each column (x = the column's index; a column
    it lacks is left out) and the bootstrap interval of a language's value as the error bar."""
    series = []
    for s, res in ev["systems"].items():
        pts, errs = [], []
        for i, c in enumerate(cols):
            v = column_value(ev, s, c, metric)
            if v is None:
                continue
            pts.append((float(i), float(v)))
            ci = ((res.get(c) or {}).get("ci") or {}).get(metric) if c in languages(ev) else None
            errs.append((float(ci[0]), float(ci[1])) if ci and None not in ci else None)
        series.append(Series(label(s), pts, errs))
    return series
