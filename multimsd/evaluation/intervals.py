"""Bootstrap confidence intervals and paired comparisons in the evaluation stage (``bootstrap.*`` options).

Per language, one index matrix ``[samples, n]`` is drawn from ``bootstrap.seed`` and shared by every system
and metric, so each system's interval and each paired comparison of that language come from the same
resamples (:mod:`multimsd.metrics.bootstrap` has the method). A paired comparison's interval (level
``1 - bootstrap.alpha``), p-value and verdict follow one rule, :data:`multimsd.metrics.bootstrap.RULE`. Intervals exist for the
result keys of ``bootstrap.metrics`` whose metric ``metrics.include`` computes and registered per-sentence
statistics for (:class:`~multimsd.metrics.Metric` ``statistics`` / ``from_totals``; built in: SARI and its
parts, BLEU, FKGL, novelty; FKGL only where it is defined, i.e. not for ja / zh), per language only: the
pooled "all" column mixes tokenizations and is a different corpus, and the comparisons are per language too.
Each metric's statistics are extracted once per system and language, for all of its keys.

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
    from multimsd.metrics import interval_keys

    b = cfg.bootstrap
    if b.samples < 0:
        raise MultimsdError(f"bootstrap.samples={b.samples}: must be >= 0 (0 = no confidence intervals)")
    if not 0.0 < b.confidence < 1.0:
        raise MultimsdError(
            f"bootstrap.confidence={b.confidence}: must lie strictly between 0 and 1 (e.g. 0.95)"
        )
    if not 0.0 < b.alpha < 1.0:
        raise MultimsdError(f"bootstrap.alpha={b.alpha}: must lie strictly between 0 and 1 (e.g. 0.05)")
    supported = interval_keys()
    bad = [m for m in b.metrics if m not in supported]
    if bad:
        raise MultimsdError(
            f"bootstrap.metrics: no bootstrap for {', '.join(bad)} (supported: {', '.join(supported)})"
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
    """Result keys that get intervals: those of ``bootstrap.metrics`` whose metric ``metrics.include``
    computes (SARI's parts come with SARI: one metric, four numbers); none if off."""
    from multimsd.metrics import interval_keys

    if cfg.bootstrap.samples == 0:
        return []
    include = set(cfg.metrics.include)
    owners = interval_keys()
    return [k for k in cfg.bootstrap.metrics if k in owners and owners[k].name in include]


def bootstrap_settings(cfg: EvaluateConfig) -> dict[str, Any]:
    """The top-level ``bootstrap`` entry of results.json."""
    from multimsd.metrics.bootstrap import METHOD, RULE

    b = cfg.bootstrap
    return {
        "samples": b.samples,
        "confidence": b.confidence,
        "seed": b.seed,
        "method": METHOD if b.samples else "off",
        "metrics": bootstrap_metrics(cfg),
        "alpha": b.alpha,
        "comparison_rule": RULE,
    }


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
    from multimsd.metrics import interval_keys, reference_streams
    from multimsd.metrics.bootstrap import percentile_interval, resample_counts, resample_indices

    metrics = bootstrap_metrics(cfg)
    owners = interval_keys()
    keyed = [(m, owners[m]) for m in metrics]
    b = cfg.bootstrap
    n = len(rows)
    counts = resample_counts(resample_indices(n, b.samples, b.seed), n)
    sources = [refs.complex[i] for i in rows]
    streams = reference_streams([refs.refs[i] for i in rows], f"{refs.name} ({lang})")
    scored: dict[str, dict[str, tuple]] = {m: {} for m in metrics}
    cis: dict[str, dict[str, list[float] | None]] = {name: {} for name in systems}
    facts = {"lang": lang, "tokenizer": tok, "settings": cfg.metrics}
    for name, preds in systems.items():
        outputs = [preds[i] for i in rows]
        resampled = _resampled_scores(name, keyed, outputs, scores[name], sources, streams, counts, facts)
        for m, scores_m in resampled.items():
            if scores_m is None:
                cis[name][m] = None
                continue
            # Scored once per system; the paired comparisons reuse these resampled scores.
            scored[m][name] = scores_m
            lo, hi = percentile_interval(scores_m[1], b.confidence)
            cis[name][m] = [lo, hi]
    return cis, _comparisons(cfg, lang, list(systems), metrics, scored, n)


def _resampled_scores(
    name: str,
    keyed: list[tuple[str, Any]],
    outputs: list[str],
    reported: dict,
    sources: list[str],
    streams: list,
    counts: np.ndarray,
    facts: dict[str, Any],
) -> dict[str, tuple | None]:
    """Per result key (``keyed``: (key, its metric)) of one system in one language: (its score, its scores on
    the resamples), or None where the metric has no statistics, reported no score, or its statistics do not
    give the score it reported."""
    lang, n = facts["lang"], len(outputs)
    out: dict[str, tuple | None] = {}
    stats: dict[str, np.ndarray | None] = {}  # per metric, shared by its keys (SARI and its parts)
    for m, metric in keyed:
        if metric.name not in stats:
            stats[metric.name] = metric.statistics(sources, outputs, streams, **facts)
        st = stats[metric.name]
        if st is None or reported.get(m) is None:
            out[m] = None
            continue
        st = np.asarray(st)
        if st.ndim != 2 or len(st) != n:
            raise MultimsdError(
                f"metric {metric.name!r}: statistics gave an array of shape {st.shape} for {n} {lang} "
                "sentences; expected [n_sentences, k]"
            )
        fn = partial(metric.from_totals[m], **facts)
        identity = float(fn(st.sum(0)))
        if abs(identity - reported[m]) > 1e-9 * max(1.0, abs(reported[m])):
            log.warning(
                "%s %s %s: the bootstrap statistics give %.12g, the metric reported %.12g; no interval",
                name, lang, m, identity, reported[m],
            )  # fmt: skip
            out[m] = None
            continue
        out[m] = (identity, fn(counts @ st.astype(np.float64)))
    return out


def _comparisons(
    cfg: EvaluateConfig,
    lang: str,
    systems: list[str],
    metrics: list[str],
    scored: dict[str, dict[str, tuple]],
    n: int,
) -> list[dict[str, Any]]:
    """The paired comparisons of one language, from each system's resampled scores (``scored[key][system]``)."""
    from multimsd.metrics.bootstrap import paired_from_resamples

    comparisons = []
    for a, c in compare_pairs(cfg, systems):
        for m in metrics:
            if a not in scored[m] or c not in scored[m]:
                continue
            (a_score, a_res), (c_score, c_res) = scored[m][a], scored[m][c]
            r = paired_from_resamples(
                a_score, c_score, a_res, c_res, alpha=cfg.bootstrap.alpha, n_sentences=n
            )
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
                    "alpha": r.alpha,
                    "n_sentences": r.n_sentences,
                    "resamples": len(a_res),
                    "separable": r.separable,
                }
            )
    return comparisons
