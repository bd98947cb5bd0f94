"""Human ratings of system outputs: per system and criterion the mean with a bootstrap interval, and the
agreement between raters (Krippendorff's α, ordinal).

A rating is one person's judgement of one system's output for one test item on three criteria, each 1-5
(:data:`CRITERIA`): simplicity, meaning preservation, fluency. The studio writes them (``multimsd studio``,
the outputs view) to ``ratings-NAME.jsonl``, one line per (language, item, system) of annotator NAME::

    {"lang": "en", "item": 3, "input": "9f2c…", "system": "zero_shot", "output": "51ab…",
     "annotator": "kim", "blind": true, "simplicity": 4, "meaning": 5, "fluency": null}

``item`` is the row's index among the test rows of its language (the line of ``<lang>.txt``), ``input`` the
:func:`text_hash` of the row's input and reference, ``output`` that of the rated output (so a rating of a run
that was run again with other outputs is recognised as stale), ``blind`` whether the system's name was hidden
when the last of its values was given, and a criterion not rated (yet) is ``null``.

**Mean and interval** (:func:`summarise`): per system and criterion the mean of all its ratings; the 95 %
interval is the percentile bootstrap of :mod:`multimsd.metrics.bootstrap` with the *items* (language, item)
resampled: per item the statistics ``[sum of ratings, number of ratings]``, so an item rated by two people
counts twice in the mean and its ratings are drawn together (a cluster bootstrap). Seeded, so reproducible.

**Agreement** (:func:`krippendorff_alpha`): Krippendorff's α with the ordinal distance over the value domain
1-5, computed by the ``krippendorff`` package; the units are the rated (language, item, system) triples and
the coders the annotators. A unit only one person rated carries no information on agreement; α needs two
raters sharing at least one unit (else :func:`summarise` gives None, shown as "one rater").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence

import numpy as np

from multimsd.errors import MultimsdError
from multimsd.metrics.bootstrap import bootstrap_ci

__all__ = [
    "CRITERIA",
    "SCALE",
    "check_rating",
    "input_hash",
    "krippendorff_alpha",
    "summarise",
    "text_hash",
]

CRITERIA = ("simplicity", "meaning", "fluency")
"""The rated criteria, in the order the report shows them."""
SCALE = (1, 2, 3, 4, 5)


def text_hash(*parts: str) -> str:
    """16 hex digits of the SHA-1 of the JSON list of ``parts``: what a rating records of its input and output."""
    return hashlib.sha1(json.dumps(list(parts), ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def input_hash(complex_: str, simple: str | list[str]) -> str:
    """What a rating records of its test row: :func:`text_hash` of the input and its reference(s)."""
    return text_hash(complex_, *([simple] if isinstance(simple, str) else simple))


def check_rating(rec: object, where: str) -> dict:
    """One line of a ratings file, checked: the fields above, each criterion 1-5 or null (one ``MultimsdError``)."""
    if not isinstance(rec, dict):
        raise MultimsdError(f"{where}: not a JSON object")
    for key in ("lang", "system", "annotator", "input", "output"):
        if not isinstance(rec.get(key), str) or not rec[key]:
            raise MultimsdError(f"{where}: {key!r} must be a non-empty string")
    item = rec.get("item")
    if not isinstance(item, int) or isinstance(item, bool) or item < 0:
        raise MultimsdError(f"{where}: 'item' must be a row index (an integer >= 0)")
    for c in CRITERIA:
        v = rec.get(c)
        if v is not None and (isinstance(v, bool) or v not in SCALE):
            raise MultimsdError(f"{where}: {c!r} must be 1-5 or null, got {v!r}")
    return rec


def _mean(totals: np.ndarray) -> np.ndarray:
    t = np.asarray(totals, dtype=np.float64)
    return t[..., 0] / np.where(t[..., 1] > 0, t[..., 1], 1.0)


def krippendorff_alpha(units: dict[tuple, dict[str, int]]) -> float | None:
    """Ordinal α over ``units`` (``{unit: {annotator: value}}``, values in 1-5); None when fewer than two
    annotators share a unit, or when every shared value is the same (α is 0/0 there: no variation)."""
    import krippendorff

    pairable = {u: v for u, v in units.items() if len(v) >= 2}
    if not pairable:
        return None
    raters = sorted({a for v in pairable.values() for a in v})
    data = np.full((len(raters), len(pairable)), np.nan)
    for j, v in enumerate(pairable.values()):
        for a, x in v.items():
            data[raters.index(a), j] = x
    if len({x for v in pairable.values() for x in v.values()}) < 2:
        return None
    return float(
        krippendorff.alpha(reliability_data=data, value_domain=list(SCALE), level_of_measurement="ordinal")
    )


def summarise(
    ratings: Iterable[dict],
    *,
    systems: Sequence[str] | None = None,
    samples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict:
    """Per system and criterion ``{"mean", "ci", "items", "ratings", "raters"}`` and per criterion α.

    :param ratings: checked rating records (:func:`check_rating`), any number of annotators.
    :param systems: the order of the systems (default: sorted); a system without ratings is left out.
    :returns: ``{"systems": {system: {criterion: {...} | None}}, "alpha": {criterion: float | None},
        "raters": [annotators], "shared_units": {criterion: n}}``.
    """
    per: dict[str, dict[str, dict[tuple, list[int]]]] = {}
    units: dict[str, dict[tuple, dict[str, int]]] = {c: {} for c in CRITERIA}
    raters: set[str] = set()
    for r in ratings:
        item = (r["lang"], r["item"])
        for c in CRITERIA:
            v = r.get(c)
            if v is None:
                continue
            raters.add(r["annotator"])
            per.setdefault(r["system"], {}).setdefault(c, {}).setdefault(item, []).append(v)
            units[c].setdefault((*item, r["system"]), {})[r["annotator"]] = v
    order = list(systems) if systems is not None else sorted(per)
    order += sorted(s for s in per if s not in order)
    out: dict[str, dict] = {}
    for s in order:
        if s not in per:
            continue
        out[s] = {}
        for c in CRITERIA:
            items = per[s].get(c)
            if not items:
                out[s][c] = None
                continue
            keys = sorted(items)
            stats = np.array([[sum(items[k]), len(items[k])] for k in keys], dtype=np.float64)
            lo, hi = bootstrap_ci(stats, _mean, samples=samples, confidence=confidence, seed=seed)
            out[s][c] = {
                "mean": float(_mean(stats.sum(0))),
                "ci": [lo, hi],
                "items": len(keys),
                "ratings": int(stats[:, 1].sum()),
                "raters": len({a for (lg, i, sy), v in units[c].items() if sy == s for a in v}),
            }
    return {
        "systems": out,
        "alpha": {c: krippendorff_alpha(units[c]) for c in CRITERIA},
        "shared_units": {c: sum(len(v) >= 2 for v in units[c].values()) for c in CRITERIA},
        "raters": sorted(raters),
    }
