"""The report's section on a run with ``seeds=[…]``: per trained system the scores of each seed, their
mean ± sd and the interval over seeds and sentences (run.json's ``seeds``, written by
:mod:`multimsd.pipeline.seeds`), and the sweep's selection on the mean over seeds."""

from __future__ import annotations

from multimsd.render.blocks import Cell, Paragraph, Section, Table, interval, num
from multimsd.report.load import Run
from multimsd.report.sweep import (
    is_number,
    mark,
    selection_tie,
    selection_warnings,
    swept_value,
    tie_text,
    value_chart,
    value_text,
)

NAMES = {"sari": "SARI", "bleu": "BLEU", "fkgl": "FKGL", "novelty": "novel %"}


def _mean_sd(entry: dict | None) -> str:
    if not entry:
        return "–"
    sd = entry.get("sd")
    return num(entry.get("mean")) + (f" ± {num(sd)}" if sd is not None else "")


def _per_seed(values: dict | None) -> str:
    return " / ".join(num(v) for v in (values or {}).values()) or "–"


def seeds_section(run: Run) -> Section | None:
    """None for a run without seeds."""
    seeds = run.meta.get("seeds")
    if not seeds or not seeds.get("systems"):
        return None
    groups: dict = seeds["systems"]
    sec = Section("Across seeds", "seeds")
    listed = " / ".join(str(s) for s in seeds.get("seeds") or [])
    conf = seeds.get("confidence")
    ci_text = (
        f"; in brackets the {round(100 * conf)} % interval that includes the seed variance: a bootstrap "
        "that resamples the test sentences and, independently, the seeds, and averages the drawn seeds' "
        "corpus scores"
        if conf and seeds.get("method") != "off"
        else ""
    )
    sec.blocks.append(
        Paragraph(
            f"Every trained system ran once per seed ({listed}); the tables above show each seed's run. "
            f"Here: the mean ± sd over the seeds (sd with n − 1){ci_text}; then each seed's score, in "
            "the order of the seeds."
        )
    )
    langs = [g for g in next(iter(groups.values())) if g not in ("label", "systems")]
    for lang in langs:
        keys: list[str] = []
        for g in groups.values():
            keys += [k for k, v in (g.get(lang) or {}).items() if v.get("ci") and k not in keys]
        if not keys:
            keys = [k for k in ("sari", "bleu") if any(k in (g.get(lang) or {}) for g in groups.values())]
        if not keys:
            continue
        header = ["system"]
        for k in keys:
            header += [f"{NAMES.get(k, k)} mean ± sd", f"{NAMES.get(k, k)}, seeds {listed}"]
        rows = []
        for g in groups.values():
            cells = [Cell(g.get("label") or "")]
            for k in keys:
                e = (g.get(lang) or {}).get(k)
                cells.append(Cell(_mean_sd(e), num=True, ci=interval((e or {}).get("ci"))))
                cells.append(Cell(_per_seed((e or {}).get("per_seed")), num=True))
            rows.append(cells)
        sec.blocks.append(Table(header, rows, caption=f"Scores over seeds ({lang})"))
    sweep = run.sweep or {}
    if sweep.get("seed_systems"):
        sec.blocks.extend(_selection(run, sweep, groups))
    return sec


def _selection(run: Run, sweep: dict, groups: dict) -> list:
    param = sweep.get("parameter", "θ")
    val, selected = sweep.get("validation") or {}, sweep.get("selected")
    listed = " / ".join(str(s) for s in (run.meta.get("seeds") or {}).get("seeds") or [])
    tied = selection_tie(sweep)
    rows = []
    for base, members in sweep["seed_systems"].items():
        value = swept_value(run, members[0], param) if members else None
        v = val.get(base) or {}
        per_seed = {s: x.get("mean_sari_bleu") for s, x in (v.get("per_seed") or {}).items() if x}
        label = (groups.get(base) or {}).get("label") or base
        rows.append(
            [
                Cell("–" if value is None else value_text(value), num=value is None or is_number(value)),
                Cell(label + mark(base, selected, tied)),
                Cell(
                    _mean_sd({"mean": v.get("mean_sari_bleu"), "sd": v.get("mean_sari_bleu_sd")})
                    if v
                    else "–",
                    num=True,
                    bold=base == selected,
                ),
                Cell(_per_seed(per_seed), num=True),
            ]
        )
    blocks: list = [*_sweep_chart(run, sweep, groups)]
    if selected:
        label = (groups.get(selected) or {}).get("label") or selected
        blocks.append(
            Paragraph(
                f"Selected on the mean over seeds of mean(SARI, BLEU) on the validation split: {label}"
                f"{tie_text(sweep, lambda b: (groups.get(b) or {}).get('label') or b)}. "
                "Test scores play no part in the choice."
            )
        )
        members = sweep["seed_systems"].get(selected) or []
        blocks.extend(selection_warnings(run, sweep, {m: run.label(m) for m in members}))
    header = [param, "system", "val mean(SARI, BLEU) mean ± sd", f"seeds {listed}"]
    blocks.append(Table(header, rows, caption=f"Selection of {param} on the mean over seeds"))
    return blocks


def _sweep_chart(run: Run, sweep: dict, groups: dict) -> list:
    """Test SARI and BLEU (mean over seeds, with the interval over seeds and sentences) against the swept
    value; for a run with one language (intervals are per language)."""
    param = sweep.get("parameter", "θ")
    langs = [g for g in next(iter(groups.values()), {}) if g not in ("label", "systems")]
    if len(langs) != 1:
        return []
    pts = []
    for base, members in sweep["seed_systems"].items():
        value = swept_value(run, members[0], param) if members else None
        if value is not None:
            pts.append((value, (groups.get(base) or {}).get(langs[0]) or {}))
    if all(is_number(v) for v, _ in pts):  # numbers in ascending order; other values in the run's order
        pts.sort(key=lambda p: float(p[0]))
    series = []
    for metric, name in (("sari", "SARI"), ("bleu", "BLEU")):
        entries = [c.get(metric) or {} for _, c in pts]
        means = [e.get("mean") for e in entries]
        errors = [tuple(e["ci"]) if e.get("mean") is not None and e.get("ci") else None for e in entries]
        series.append((name, means, errors))
    if not any(m is not None for _, means, _ in series for m in means):
        return []
    title = f"SARI and BLEU vs {param}, mean over seeds"
    return [value_chart(title, param, f"test score ({langs[0]})", [v for v, _ in pts], series)]
