"""The report's "Human evaluation" section: the ratings people gave in ``multimsd studio`` (its outputs view),
read from ``<run>/studio/ratings-*.jsonl`` (one file per annotator, the format :mod:`multimsd.metrics.human`
documents) whenever the report is built, so ratings added after the run show on the next ``multimsd run``
(which skips the finished stages and rebuilds the report).

A rating is only counted while it still describes the run: its input hash must match the test row and its
output hash the system's current output; ratings of outputs that have changed since (the run was made again)
are left out, and the section says how many.
"""

from __future__ import annotations

import json
from pathlib import Path

from multimsd.errors import MultimsdError
from multimsd.metrics.human import CRITERIA, check_rating, input_hash, summarise, text_hash
from multimsd.render.blocks import Cell, Paragraph, Section, Table, interval, num
from multimsd.report.load import Run

CONFIDENCE = 0.95
SAMPLES = 1000
SEED = 0


def read_ratings(run_dir: Path) -> list[dict]:
    """Every line of ``<run_dir>/studio/ratings-*.jsonl``, checked (a damaged line is one error line)."""
    out = []
    for path in sorted((run_dir / "studio").glob("ratings-*.jsonl")):
        if path.name.startswith("ratings-journal-"):
            continue
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise MultimsdError(f"cannot read ratings {path}: {e}") from None
        for k, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                raise MultimsdError(f"{path}:{k}: not a JSON line") from None
            out.append(check_rating(rec, f"{path}:{k}"))
    return out


def _current(run: Run, system: str, lang: str, cache: dict) -> list[str] | None:
    """The system's test outputs of ``lang`` as the run has them now (None where it has none)."""
    if (system, lang) not in cache:
        info = run.systems.get(system)
        d = (
            info.predictions
            if info is not None and info.predictions
            else run.dir / "systems" / system / "predictions" / "test"
        )
        try:
            cache[(system, lang)] = (d / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            cache[(system, lang)] = None
    return cache[(system, lang)]


def current_ratings(run: Run, ratings: list[dict]) -> tuple[list[dict], int]:
    """(the ratings that still match the run's test rows and outputs, how many do not)."""
    rows: dict[str, list[str]] = {}
    for rec in run.references or []:
        rows.setdefault(str(rec.get("lang")), []).append(input_hash(rec["complex"], rec["simple"]))
    cache: dict = {}
    kept, stale = [], 0
    for r in ratings:
        hashes = rows.get(r["lang"], [])
        outs = _current(run, r["system"], r["lang"], cache)
        ok = (
            r["item"] < len(hashes)
            and hashes[r["item"]] == r["input"]
            and outs is not None
            and r["item"] < len(outs)
            and text_hash(outs[r["item"]]) == r["output"]
        )
        if ok:
            kept.append(r)
        else:
            stale += 1
    return kept, stale


def human_section(run: Run) -> Section | None:
    """None when the run has no ratings files (or only empty ones)."""
    ratings = read_ratings(run.dir)
    if not ratings:
        return None
    kept, stale = current_ratings(run, ratings)
    sec = Section("Human evaluation", "human")
    raters = sorted({r["annotator"] for r in kept})
    blind = sum(bool(r.get("blind")) for r in kept)
    pct = round(100 * CONFIDENCE)
    sec.blocks.append(
        Paragraph(
            f"Ratings given in multimsd studio (outputs view) by {len(raters)} "
            f"{'person' if len(raters) == 1 else 'people'} ({', '.join(raters) or '–'}), 1 (worst) to 5 (best) "
            f"for simplicity, meaning preservation and fluency; {blind} of {len(kept)} rated outputs were "
            f"rated blind (system names hidden, order shuffled per item). Per system and criterion: the mean "
            f"of its ratings, in brackets the {pct} % percentile bootstrap interval ({SAMPLES} resamples of "
            "the rated items, seed 0); items: how many test rows were rated, raters: by how many people."
        )
    )
    if stale:
        sec.blocks.append(
            Paragraph(
                f"{stale} rating{'s' if stale != 1 else ''} of outputs or test rows that have changed since they "
                "were rated (the run was made again) are left out.",
                note=True,
            )
        )
    if not kept:
        return sec
    order = [s for s in run.evaluation.get("systems", {}) if s in {r["system"] for r in kept}]
    summary = summarise(kept, systems=order, samples=SAMPLES, confidence=CONFIDENCE, seed=SEED)
    header = ["system", *[f"{c} (mean [{pct} % CI])" for c in CRITERIA], "items", "raters"]
    rows = []
    for system, per in summary["systems"].items():
        cells = [Cell(run.label(system))]
        for c in CRITERIA:
            e = per.get(c)
            cells.append(Cell(num(e["mean"]) if e else "–", num=True, ci=interval(e["ci"]) if e else None))
        present = [e for e in per.values() if e]
        cells.append(Cell(str(max((e["items"] for e in present), default=0)), num=True))
        cells.append(Cell(str(max((e["raters"] for e in present), default=0)), num=True))
        rows.append(cells)
    sec.blocks.append(Table(header, rows, caption="Human ratings per system (1-5, higher is better)"))
    arows = []
    for c in CRITERIA:
        a = summary["alpha"][c]
        shared = summary["shared_units"][c]
        if a is not None:
            text = num(a, 3)
        elif len(raters) < 2 or not shared:
            text = "one rater"
        else:
            text = "– (no variation)"
        arows.append([Cell(c), Cell(text, num=True), Cell(str(shared), num=True)])
    sec.blocks.append(
        Table(
            ["criterion", "Krippendorff's α (ordinal)", "outputs rated by ≥ 2 people"],
            arows,
            caption="Agreement between raters",
            inline=True,
        )
    )
    return sec
