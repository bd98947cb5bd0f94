"""Bootstrap confidence intervals and paired comparisons in the evaluation stage (``bootstrap.*`` options).

Per language, one index matrix ``[samples, n]`` is drawn from ``bootstrap.seed`` and shared by every system
and metric, so each system's interval and each paired comparison of that language come from the same
resamples (:mod:`multimsd.metrics.bootstrap` has the method and the p-value). Intervals exist for the
metrics of ``bootstrap.metrics`` that ``metrics.include`` computes (SARI, BLEU, FKGL; FKGL only where it is
defined, i.e. not for ja / zh), per language only: the pooled "all" column mixes tokenizations and is a
different corpus, and the comparisons are per language too.

Before any interval is reported, the score of the identity resample (every sentence once) is checked
against the score the metric registry reported; a plugin that re-registered ``sari`` with another scorer
would fail that check, and the metric then gets no interval (and a warning) rather than a wrong one.
"""

from __future__ import annotations

import logging
from functools import partial
from itertools import combinations
from typing import Any

import numpy as np

from multimsd.config import EvaluateConfig
from multimsd.errors import MultimsdError
from multimsd.evaluation.inputs import ReferenceSet

log = logging.getLogger(__name__)

__all__ = [
    "bootstrap_metrics",
    "bootstrap_settings",
    "check_bootstrap",
    "compare_pairs",
    "language_intervals",
]


def check_bootstrap(cfg: EvaluateConfig) -> None:
    """One-line errors for ``bootstrap.*`` (checked before anything is read)."""
    from multimsd.metrics.bootstrap import BOOTSTRAP_METRICS

    b = cfg.bootstrap
    if b.samples < 0:
        raise MultimsdError(f"bootstrap.samples={b.samples}: must be >= 0 (0 = no confidence intervals)")
    if not 0.0 < b.confidence < 1.0:
        raise MultimsdError(
            f"bootstrap.confidence={b.confidence}: must lie strictly between 0 and 1 (e.g. 0.95)"
        )
    bad = [m for m in b.metrics if m not in BOOTSTRAP_METRICS]
    if bad:
        raise MultimsdError(
            f"bootstrap.metrics: no bootstrap for {', '.join(bad)} (supported: {', '.join(BOOTSTRAP_METRICS)})"
        )
    compare_pairs(cfg, list(cfg.systems))


def compare_pairs(cfg: EvaluateConfig, systems: list[str]) -> list[tuple[str, str]]:
    """The ``(a, b)`` pairs of ``bootstrap.compare`` (``"a:b"``), or every pair of ``systems`` in order."""
    if not cfg.bootstrap.compare:
        return list(combinations(systems, 2))
    pairs = []
    for spec in cfg.bootstrap.compare:
        a, sep, b = str(spec).partition(":")
        a, b = a.strip(), b.strip()
        if not sep or not a or not b or ":" in b:
            raise MultimsdError(f"bootstrap.compare: {spec!r} is not of the form <system a>:<system b>")
        unknown = [s for s in (a, b) if s not in systems]
        if unknown:
            raise MultimsdError(
                f"bootstrap.compare: {spec!r} names unknown system(s) {', '.join(unknown)} "
                f"(systems: {', '.join(systems)})"
            )
        if a == b:
            raise MultimsdError(f"bootstrap.compare: {spec!r} compares a system with itself")
        pairs.append((a, b))
    return pairs


def bootstrap_metrics(cfg: EvaluateConfig) -> list[str]:
    """Metrics that get intervals: ``bootstrap.metrics`` computed by ``metrics.include`` (none if off)."""
    if cfg.bootstrap.samples == 0:
        return []
    include = set(cfg.metrics.include)
    # SARI's parts come with SARI (one metric, four numbers)
    return [m for m in cfg.bootstrap.metrics if m in include or (m.startswith("sari_") and "sari" in include)]


def bootstrap_settings(cfg: EvaluateConfig) -> dict[str, Any]:
    """The top-level ``bootstrap`` entry of results.json."""
    from multimsd.metrics.bootstrap import METHOD

    b = cfg.bootstrap
    return {
        "samples": b.samples,
        "confidence": b.confidence,
        "seed": b.seed,
        "method": METHOD if b.samples else "off",
        "metrics": bootstrap_metrics(cfg),
    }


def _statistics(metric: str, lang: str, tok: str, sources, outputs, streams, cfg: EvaluateConfig):
    """(per-sentence statistics, vectorised score) of one metric, or None where the metric is undefined."""
    from multimsd.metrics import bootstrap as bs
    from multimsd.metrics.readability import FKGL_LANGS

    lc = cfg.metrics.lowercase
    if metric == "sari":
        return bs.sari_statistics(sources, outputs, streams, lowercase=lc, tokenizer=tok), bs.sari_from_totals
    if metric.startswith("sari_"):  # a part of SARI: the same statistics, one part of the score
        part = metric.removeprefix("sari_")
        stats = bs.sari_statistics(sources, outputs, streams, lowercase=lc, tokenizer=tok)
        return stats, partial(bs.sari_part_from_totals, part=part)
    if metric == "novelty":
        from multimsd.metrics.novelty import novelty_from_totals, novelty_statistics

        return novelty_statistics(sources, outputs, lowercase=lc, tokenizer=tok), novelty_from_totals
    if metric == "bleu":
        smooth = cfg.metrics.bleu_smooth
        stats = bs.bleu_statistics(outputs, streams, lowercase=lc, tokenizer=tok, smooth_method=smooth)
        return stats, partial(bs.bleu_from_totals, smooth_method=smooth)
    if metric == "fkgl" and lang in FKGL_LANGS:
        return bs.fkgl_statistics(outputs, lang), bs.fkgl_from_totals
    return None


def language_intervals(
    lang: str,
    tok: str,
    rows: list[int],
    refs: ReferenceSet,
    systems: dict[str, list],
    scores: dict[str, dict],
    cfg: EvaluateConfig,
) -> tuple[dict[str, dict[str, list[float] | None]], list[dict[str, Any]]]:
    """({system: {metric: [lo, hi] or None}}, comparisons) for one language; ``scores`` are the reported ones."""
    from multimsd.metrics import reference_streams
    from multimsd.metrics.bootstrap import (
        paired_from_resamples,
        percentile_interval,
        resample_counts,
        resample_indices,
    )

    metrics = bootstrap_metrics(cfg)
    b = cfg.bootstrap
    n = len(rows)
    counts = resample_counts(resample_indices(n, b.samples, b.seed), n)
    sources = [refs.complex[i] for i in rows]
    streams = reference_streams([refs.refs[i] for i in rows], f"{refs.name} ({lang})")
    scored: dict[str, dict[str, tuple]] = {m: {} for m in metrics}
    cis: dict[str, dict[str, list[float] | None]] = {name: {} for name in systems}
    for name, preds in systems.items():
        outputs = [preds[i] for i in rows]
        for m in metrics:
            got = _statistics(m, lang, tok, sources, outputs, streams, cfg)
            reported = scores[name].get(m)
            if got is None or reported is None:
                cis[name][m] = None
                continue
            st, fn = got
            identity = float(fn(st.sum(0)))
            if abs(identity - reported) > 1e-9 * max(1.0, abs(reported)):
                log.warning(
                    "%s %s %s: the bootstrap statistics give %.12g, the metric reported %.12g; no interval",
                    name, lang, m, identity, reported,
                )  # fmt: skip
                cis[name][m] = None
                continue
            # Scored once per system; the paired comparisons below reuse these resampled scores.
            resampled = fn(counts @ st.astype(np.float64))
            scored[m][name] = (identity, resampled)
            lo, hi = percentile_interval(resampled, b.confidence)
            cis[name][m] = [lo, hi]
    comparisons = []
    for a, c in compare_pairs(cfg, list(systems)):
        for m in metrics:
            if a not in scored[m] or c not in scored[m]:
                continue
            (a_score, a_res), (c_score, c_res) = scored[m][a], scored[m][c]
            r = paired_from_resamples(a_score, c_score, a_res, c_res, confidence=b.confidence, n_sentences=n)
            comparisons.append(
                {
                    "a": a,
                    "b": c,
                    "lang": lang,
                    "metric": m,
                    "a_score": r.a_score,
                    "b_score": r.b_score,
                    "diff": r.diff,
                    "ci": list(r.ci),
                    "p_value": r.p_value,
                    "n_sentences": r.n_sentences,
                    "separable": r.separable,
                }
            )
    return cis, comparisons
