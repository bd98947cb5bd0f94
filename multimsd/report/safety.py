"""The report's safety section (issue #48 item 4): is a system simpler *and* safe, and did optimising it help?

* a chart per language: each system's SARI against its share of safety-flagged sentences, both with their
  bootstrap intervals, and the references' own share as a dashed line (human simplifications drop numbers
  too: the level a reader can calibrate against);
* per system built on another (``systems.NAME.kind: optimise`` or ``decode``): the paired test against it,
  on SARI and on the flag rate, and whether it met the target of issue #48 (the flag rate at most half of the
  start's, SARI not significantly lower);
* what its preference pairs were made of (the training stage's ``pairs`` record).

Everything is read from the evaluation's results.json (``systems.*.{sari,safety}`` and their ``ci``,
``per_language.*.safety_reference``, the ``comparisons``) and the systems' ``all_results.json``: the section
is left out when the evaluation did not compute the safety metric.
"""

from __future__ import annotations

from multimsd.render.blocks import Cell, Chart, Paragraph, Section, Table, interval, num
from multimsd.render.charts import Series, line_chart
from multimsd.report.load import Run
from multimsd.report.scores import languages_of, p_value


def _ci(res: dict, key: str) -> tuple[float, float] | None:
    ci = (res.get("ci") or {}).get(key)
    return (float(ci[0]), float(ci[1])) if ci and None not in ci else None


def safety_chart(run: Run, lang: str) -> Chart | None:
    """SARI (y) against the flag rate (x) of every system in ``lang``, each with both intervals."""
    ev = run.evaluation
    series = []
    for name, per_lang in ev["systems"].items():
        res = per_lang.get(lang) or {}
        if res.get("safety") is None or res.get("sari") is None:
            continue
        series.append(
            Series(
                run.label(name),
                [(float(res["safety"]), float(res["sari"]))],
                [_ci(res, "sari")],
                x_errors=[_ci(res, "safety")],
            )
        )
    if not series:
        return None
    ref = ((ev.get("per_language") or {}).get(lang) or {}).get("safety_reference")
    ys = [y for s in series for _, y in s.points] + [
        v for s in series for e in s.errors or [] if e for v in e
    ]
    if ref is not None:
        series.append(
            Series("references' own flag rate", [(ref, min(ys)), (ref, max(ys))], dashed=True, markers=False)
        )
    title = f"{lang}: SARI against safety-flagged sentences (95 % CIs)"
    alt = f"{title}: " + "; ".join(
        f"{s.name} flags {s.points[0][0]:.1f} % SARI {s.points[0][1]:.2f}" for s in series if s.markers
    )
    if ref is not None:
        alt += f"; the references' own flag rate {ref:.1f} %"
    svg = line_chart(series, title, "safety-flagged sentences (%) — lower is safer", "SARI")
    return Chart(title, svg, alt)


def _comparison(run: Run, a: str, b: str, lang: str, metric: str) -> dict | None:
    for c in run.evaluation.get("comparisons") or []:
        if (c.get("a"), c.get("b"), c.get("lang"), c.get("metric")) == (a, b, lang, metric):
            return c
    return None


def _target(sari: dict | None, flags: dict | None) -> str:
    """Issue #48's target: flags at most half the start's, SARI not significantly lower."""
    if sari is None or flags is None:
        return "not compared"
    halved = flags.get("a_score") is not None and flags["a_score"] <= 0.5 * (flags.get("b_score") or 0.0)
    lower = bool(sari.get("separable")) and (sari.get("diff") or 0.0) < 0
    if halved and not lower:
        return "met"
    return "not met: " + " and ".join(
        w for w, bad in (("flags not halved", not halved), ("SARI significantly lower", lower)) if bad
    )


def optimised_table(run: Run, langs: list[str]) -> list:
    """The paired test of each system built on another one (optimised, or decoded again) against it, on SARI
    and on the flag rate."""
    optimised = [(n, i) for n, i in run.systems.items() if i.kind in ("optimise", "decode") and i.start]
    if not optimised:
        return []
    rows, missing = [], []
    for name, info in optimised:
        for lang in langs:
            cs = {m: _comparison(run, name, info.start, lang, m) for m in ("sari", "safety")}
            if cs["sari"] is None and cs["safety"] is None:
                missing.append(f"{name}:{info.start}")
                continue
            cells = [Cell(f"{run.label(name)} vs {run.label(info.start)}"), Cell(lang)]
            for m in ("sari", "safety"):
                c = cs[m] or {}
                cells += [
                    Cell(num(c.get("b_score")), num=True),
                    Cell(num(c.get("a_score")), num=True),
                    Cell(num(c.get("diff")), num=True, ci=interval(c.get("ci"))),
                    Cell(p_value(c.get("p_value"), c.get("resamples")), num=True),
                ]
            cells.append(
                Cell(_target(cs["sari"], cs["safety"]), bold=_target(cs["sari"], cs["safety"]) == "met")
            )
            rows.append(cells)
    header = [
        "system vs its start", "lang",
        "SARI start", "SARI", "SARI Δ [CI]", "p",
        "flags % start", "flags %", "flags Δ [CI]", "p",
        "target",
    ]  # fmt: skip
    blocks: list = []
    if rows:
        blocks.append(
            Table(
                header, rows, caption="Systems built on another system (optimised, decoded again) against it"
            )
        )
        blocks.append(
            Paragraph(
                "Target (issue #48): the flag rate at most half of the start's, with SARI not significantly "
                "lower (paired bootstrap over the same test sentences)."
            )
        )
    if missing:
        which = ", ".join(sorted(set(missing)))
        blocks.append(
            Paragraph(
                f"Not compared: {which}. Add the pair to the run's compare list (compare=[{which}]) or leave the "
                "list empty (every pair), with safety in evaluate.bootstrap.metrics.",
                note=True,
            )
        )
    return blocks


def pairs_paragraphs(run: Run) -> list:
    """What each optimised system's preference pairs were made of."""
    out = []
    for name, info in run.systems.items():
        pairs = (info.train_results or {}).get("pairs") or {}
        train = (pairs.get("splits") or {}).get("train")
        if info.kind != "optimise" or not train:
            continue
        failing = ", ".join(f"{g} {100 * v:.0f} %" for g, v in (train.get("samples_failing") or {}).items())
        out.append(
            Paragraph(
                f"{run.label(name)}: {train.get('pairs', 0)} preference pairs from {train.get('sources', 0)} "
                f"training sources ({train.get('chosen_from_reference', 0)} with the reference as the chosen "
                f"output, where no sample passed every gate); of the start system's {train.get('samples', 0)} samples, "
                f"failing each gate: {failing or 'none'}; rewards: {', '.join(pairs.get('reward') or {})}."
            )
        )
    return out


def safety_section(run: Run) -> Section | None:
    langs = languages_of(run)
    charts = [c for c in (safety_chart(run, lang) for lang in langs) if c is not None]
    if not charts:
        return None
    intro = Paragraph(
        "Simpler and safe? Each system's SARI against its share of output sentences flagged by the safety checks "
        "(a changed number, unit or limit, a dropped or added negation, a meaning far from the source, an empty "
        "or looping output; lower is safer), both with their bootstrap intervals. The dashed line is the "
        "references' own share: human simplifications drop numbers too, so a system near it flags as often "
        "as the people who wrote the references."
    )
    blocks = [intro, *charts, *optimised_table(run, langs), *pairs_paragraphs(run)]
    return Section("Safety against simplicity", "safety", blocks)
