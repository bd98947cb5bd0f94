"""Bootstrap confidence intervals and paired bootstrap tests for corpus-level SARI, BLEU and FKGL.

All three corpus scores are functions of **per-sentence statistics summed over the corpus**: SARI of the 4 x 9
n-gram counts of :class:`~multimsd.metrics.sari.SariStatistics`, BLEU of sacrebleu's sufficient statistics
(system length, reference length, correct and total n-grams per order), FKGL of word, sentence and syllable
totals. So a resample of the sentences never needs re-tokenising: the statistics are extracted once into a
matrix ``[n, k]`` (one row per sentence), a seeded index matrix ``[B, n]`` is drawn
(``numpy.random.Generator(PCG64(seed))``, sentences drawn with replacement), each resample's totals are
``counts @ stats`` (``counts[b, i]`` = how often resample ``b`` drew sentence ``i``) and a vectorised score
function turns the ``[B, k]`` totals into ``B`` scores. Every statistic is an integer, so the totals are exact,
and the score on the identity resample (every sentence once) is the stage's score (tested to 1e-9).

Interval: the **percentile** interval, the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the
``B`` resampled scores (``numpy.percentile``, linear interpolation; Efron & Tibshirani 1993, ch. 13). It is
what sacrebleu and most NLP papers report; it needs no variance estimate, and it respects the metric's range
(SARI and BLEU in [0, 100], FKGL >= 0).

Paired test (:func:`paired_bootstrap`): both systems are scored on the *same* resamples, so the sentence
difficulty they share cancels out of the difference. **One rule** gives its interval, its p-value and the verdict
"separable", all three from the same resampled differences, so they cannot disagree
(:func:`paired_from_resamples` has the rule and the proof).

Which metrics have intervals is the metric registry's business: a metric registers its per-sentence
statistics and the functions of their totals (:class:`~multimsd.metrics.registry.Metric` ``statistics`` /
``from_totals``; the built-ins with the functions of this module, :mod:`multimsd.metrics.scoring`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from multimsd.errors import MultimsdError
from multimsd.metrics.sari import MAX_NGRAM_ORDER, SariStatistics, get_tokenizer, normalize

__all__ = [
    "METHOD",
    "PairedResult",
    "RULE",
    "bleu_from_totals",
    "bleu_statistics",
    "bootstrap_ci",
    "fkgl_from_totals",
    "fkgl_statistics",
    "paired_bootstrap",
    "paired_from_resamples",
    "percentile_interval",
    "resample_counts",
    "resample_indices",
    "resampled_scores",
    "sari_from_totals",
    "sari_part_from_totals",
    "sari_parts_from_totals",
    "sari_statistics",
]

METHOD = "percentile, sentences resampled"
"""How the intervals are made (written into results.json)."""

ScoreFn = Callable[[np.ndarray], np.ndarray]
"""Totals ``[..., k]`` -> scores ``[...]``."""


# ---------------------------------------------------------------------------------------------- resampling
def resample_indices(n: int, samples: int, seed: int) -> np.ndarray:
    """``[samples, n]`` sentence indices drawn with replacement, reproducible from ``seed``."""
    if n < 1 or samples < 1:
        raise MultimsdError(
            f"bootstrap needs at least one sentence and one sample (n={n}, samples={samples})"
        )
    return np.random.Generator(np.random.PCG64(seed)).integers(0, n, size=(samples, n))


def resample_counts(indices: np.ndarray, n: int) -> np.ndarray:
    """``counts[b, i]`` = how often resample ``b`` drew sentence ``i`` (float64, for a BLAS product).

    One bincount over offset indices instead of ``stats[indices].sum(1)``, which would materialise
    ``[B, n, k]`` (1000 resamples of 1000 sentences of SARI's 36 statistics: 288 MB).
    """
    b = indices.shape[0]
    flat = (indices + np.arange(b)[:, None] * n).ravel()
    return np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)


def resampled_scores(stats: np.ndarray, score: ScoreFn, counts: np.ndarray) -> np.ndarray:
    """Scores ``[B]`` of the resamples given by ``counts`` (:func:`resample_counts`) of ``stats [n, k]``."""
    return score(counts @ np.asarray(stats, dtype=np.float64))


def percentile_interval(scores: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval of bootstrap ``scores`` at ``confidence`` (e.g. 0.95 -> 2.5 % and 97.5 %)."""
    if not 0.0 < confidence < 1.0:
        raise MultimsdError(f"confidence={confidence}: must lie strictly between 0 and 1")
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.percentile(scores, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return float(lo), float(hi)


def bootstrap_ci(
    stats: np.ndarray,
    score: ScoreFn,
    *,
    samples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    counts: np.ndarray | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the corpus score ``score(stats.sum(0))``, resampling sentences.

    :param stats: per-sentence statistics ``[n, k]`` (e.g. :func:`sari_statistics`).
    :param score: vectorised score of summed statistics (e.g. :func:`sari_from_totals`).
    :param counts: resample counts to reuse (:func:`resample_counts`); default drawn from ``seed``.
    """
    n = len(stats)
    if counts is None:
        counts = resample_counts(resample_indices(n, samples, seed), n)
    return percentile_interval(resampled_scores(stats, score, counts), confidence)


@dataclass(frozen=True)
class PairedResult:
    """Outcome of :func:`paired_bootstrap`: scores on the full corpus, the difference ``a - b``, its
    ``1 - alpha`` percentile interval, the two-sided percentile-bootstrap p-value, and ``alpha``.
    ``separable`` (``p < alpha``) holds exactly when the interval excludes 0."""

    a_score: float
    b_score: float
    diff: float
    ci: tuple[float, float]
    p_value: float
    n_sentences: int
    alpha: float = 0.05

    @property
    def separable(self) -> bool:
        return self.p_value < self.alpha


RULE = (
    "two-sided percentile bootstrap: p = min(1, 2·min(#{d* ≤ 0}, #{d* ≥ 0}) / B) over the B resampled "
    "differences d*; separable ⇔ p < α ⇔ the (1 − α) percentile interval of d* excludes 0"
)
"""The significance rule of the paired comparisons (written into results.json and the reports)."""


def paired_bootstrap(
    a_stats: np.ndarray,
    b_stats: np.ndarray,
    score: ScoreFn,
    *,
    samples: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    counts: np.ndarray | None = None,
) -> PairedResult:
    """Paired bootstrap of two systems on the same sentences: interval of ``a - b``, p-value, verdict.

    Both systems are scored on the same resamples (the same index matrix); :func:`paired_from_resamples`
    has the rule.
    """
    a_stats = np.asarray(a_stats, dtype=np.float64)
    b_stats = np.asarray(b_stats, dtype=np.float64)
    if a_stats.shape != b_stats.shape:
        raise MultimsdError(
            f"paired bootstrap: statistics of different shapes {a_stats.shape} / {b_stats.shape}"
        )
    n = len(a_stats)
    if counts is None:
        counts = resample_counts(resample_indices(n, samples, seed), n)
    return paired_from_resamples(
        float(score(a_stats.sum(0))),
        float(score(b_stats.sum(0))),
        resampled_scores(a_stats, score, counts),
        resampled_scores(b_stats, score, counts),
        alpha=alpha,
        n_sentences=n,
    )


def format_p(p: float | None, resamples: int | None = None) -> str:
    """A p-value as the reports print it. With B resamples the smallest p above 0 is 2/B, so p = 0 (every
    resampled difference on one side of 0) is printed as ``< 2/B`` (``< 0.002`` for B = 1000), not ``0.000``."""
    if p is None:
        return "–"
    if p == 0:
        return f"< {2 / resamples:.3g}" if resamples else "< 0.001"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"  # below 0.001 only with more than 2,000 resamples


def _tail_rank(alpha: float, b: int) -> int:
    """The smallest ``j >= 1`` with ``2 * j / b >= alpha`` (computed with the same float expression as the
    p-value's comparison, so that ``count < j`` and ``2 * count / b < alpha`` agree for every count)."""
    j = 1
    while 2 * j / b < alpha:  # at most b / 2 steps (alpha < 1)
        j += 1
    return j


def paired_from_resamples(
    a_score: float,
    b_score: float,
    a_resampled: np.ndarray,
    b_resampled: np.ndarray,
    *,
    alpha: float = 0.05,
    n_sentences: int,
) -> PairedResult:
    """:func:`paired_bootstrap` from scores already computed on the same resamples (the evaluation stage
    scores every system once per language and compares the pairs from those).

    With ``d*_1 .. d*_B`` the differences ``a - b`` on the resamples, ``L = #{d* <= 0}``, ``U = #{d* >= 0}``
    (a tie ``d* = 0`` counts on both sides) and ``d*_(1) <= .. <= d*_(B)`` sorted:

    * p-value (two-sided percentile bootstrap): ``p = min(1, 2 * min(L, U) / B)``, twice the share of
      resamples on the far side of 0 (Efron & Tibshirani 1993, §15.4: the ``alpha`` at which the percentile
      interval just reaches 0);
    * interval (level ``1 - alpha``): ``[d*_(j), d*_(B+1-j)]`` with ``j`` the smallest rank with
      ``2j / B >= alpha`` (``B = 1000``, ``alpha = 0.05``: the 25th and 976th of the 1000 sorted
      differences), a percentile interval without interpolation;
    * separable: ``p < alpha``.

    Why they cannot disagree: ``d*_(j) > 0`` ⇔ fewer than ``j`` differences are ``<= 0`` ⇔ ``L < j`` ⇔
    ``2L / B < alpha``; likewise ``d*_(B+1-j) < 0`` ⇔ ``U < j`` ⇔ ``2U / B < alpha``. So the interval
    excludes 0 ⇔ ``2 min(L, U) / B < alpha`` ⇔ ``p < alpha`` (tested on many random inputs). Two identical
    systems have every ``d* = 0``, ``L = U = B``, ``p = 1`` and the interval ``[0, 0]``: never separable.
    (This replaces the shift-method p-value ``(1 + #{|d* - d| >= |d|}) / (B + 1)``, which answers another
    question than the interval and could say ``p = 0.080`` next to an interval that excludes 0.)
    """
    if not 0.0 < alpha < 1.0:
        raise MultimsdError(f"alpha={alpha}: must lie strictly between 0 and 1 (e.g. 0.05)")
    diffs = np.sort(np.asarray(a_resampled, dtype=np.float64) - np.asarray(b_resampled, dtype=np.float64))
    b = len(diffs)
    if b < 1:
        raise MultimsdError("paired bootstrap: no resamples")
    low = int(np.count_nonzero(diffs <= 0.0))
    high = int(np.count_nonzero(diffs >= 0.0))
    j = _tail_rank(alpha, b)
    return PairedResult(
        a_score=a_score,
        b_score=b_score,
        diff=a_score - b_score,
        ci=(float(diffs[j - 1]), float(diffs[b - j])),
        p_value=min(1.0, 2 * min(low, high) / b),
        n_sentences=n_sentences,
        alpha=alpha,
    )


# ---------------------------------------------------------------------------------------------- SARI
def sari_statistics(
    sources: Sequence[str],
    outputs: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    lowercase: bool = True,
    tokenizer: str = "13a",
) -> np.ndarray:
    """Per-sentence SARI statistics ``[n, 36]`` (4 orders x 9 counts), as :func:`corpus_sari` accumulates them.

    ``references`` are reference streams; lowercasing and tokenising as in ``corpus_sari`` (non-legacy).
    """
    tok = get_tokenizer(tokenizer)

    def prep(sent: str) -> list[str]:
        return tok(sent.lower() if lowercase else sent).split()

    rows = []
    for orig, out, *refs in zip(sources, outputs, *references):
        st = SariStatistics()
        st.add(prep(orig), prep(out), [prep(r) for r in refs])
        rows.append([c for order in st.counts for c in order])
    return np.array(rows, dtype=np.int64).reshape(len(rows), MAX_NGRAM_ORDER * 9)


def _f1_mean(sys: np.ndarray, ref: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Mean over the orders (last axis) of F1, as sari._operation_score's macro version (EASSE's default, F1 for
    deletion too: the only SARI the bootstrap scores)."""
    # Every denominator is guarded (1 where it is 0, the quotient then discarded): no division by zero, no warning.
    p = np.where(sys > 0, ok / np.where(sys > 0, sys, 1), 0.0)
    r = np.where(ref > 0, ok / np.where(ref > 0, ref, 1), 0.0)
    f = np.where((p > 0) & (r > 0), 2 * p * r / np.where(p + r > 0, p + r, 1), 0.0)
    # Summed order by order, as Python's sum() does, so the identity resample is bit-identical.
    total = np.zeros(f.shape[:-1])
    for k in range(f.shape[-1]):
        total = total + f[..., k]
    return total / f.shape[-1]


def sari_parts_from_totals(totals: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SARI's add, keep and delete scores (EASSE default: macro F1, F1 for deletion) of summed
    :func:`sari_statistics` ``[..., 36]``."""
    t = np.asarray(totals, dtype=np.float64).reshape(*np.shape(totals)[:-1], MAX_NGRAM_ORDER, 9)
    add = 100.0 * _f1_mean(t[..., 0], t[..., 1], t[..., 2])
    keep = 100.0 * _f1_mean(t[..., 3], t[..., 4], t[..., 5])
    dele = 100.0 * _f1_mean(t[..., 6], t[..., 7], t[..., 8])
    return add, keep, dele


def sari_from_totals(totals: np.ndarray) -> np.ndarray:
    """Corpus SARI of summed :func:`sari_statistics` ``[..., 36]``: the mean of its three parts."""
    add, keep, dele = sari_parts_from_totals(totals)
    return (add + keep + dele) / 3


def sari_part_from_totals(totals: np.ndarray, part: str) -> np.ndarray:
    """One part of SARI (``add``, ``keep`` or ``delete``) of summed :func:`sari_statistics`."""
    return sari_parts_from_totals(totals)[("add", "keep", "delete").index(part)]


# ---------------------------------------------------------------------------------------------- BLEU
def bleu_statistics(
    outputs: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    lowercase: bool = False,
    tokenizer: str = "13a",
    smooth_method: str = "exp",
) -> np.ndarray:
    """Per-sentence BLEU statistics ``[n, 10]``: system length, closest reference length, correct n-grams
    (orders 1-4), total n-grams (orders 1-4) -- sacrebleu's, on the text :func:`corpus_bleu` gives it."""
    # The same BLEU object and normalisation as multimsd.metrics.bleu.corpus_bleu; sacrebleu 2.x keeps its
    # per-segment statistics behind _extract_corpus_statistics (its own significance tests use it too).
    from multimsd.metrics.bleu import _bleu

    bleu = _bleu(smooth_method, None, False)
    sys_norm = [normalize(s, lowercase=lowercase, tokenizer=tokenizer) for s in outputs]
    refs_norm = [[normalize(s, lowercase=lowercase, tokenizer=tokenizer) for s in st] for st in references]
    stats = bleu._extract_corpus_statistics(sys_norm, refs_norm)
    return np.array(stats, dtype=np.int64).reshape(len(sys_norm), 2 + 2 * bleu.max_ngram_order)


def bleu_from_totals(
    totals: np.ndarray, *, smooth_method: str = "exp", smooth_value: float | None = None
) -> np.ndarray:
    """Corpus BLEU of summed :func:`bleu_statistics` ``[..., 10]``: sacrebleu's ``compute_bleu`` (no effective
    order, which corpus BLEU does not use), every branch as an array operation."""
    from sacrebleu.metrics.bleu import BLEU

    if smooth_method not in BLEU.SMOOTH_DEFAULTS:
        raise MultimsdError(f"unknown BLEU smooth_method {smooth_method!r}")
    if smooth_value is None:
        smooth_value = BLEU.SMOOTH_DEFAULTS[smooth_method]
    t = np.asarray(totals, dtype=np.float64)
    order = (t.shape[-1] - 2) // 2
    sys_len, ref_len = t[..., 0], t[..., 1]
    correct, total = t[..., 2 : 2 + order].copy(), t[..., 2 + order :].copy()
    any_correct = (correct > 0).any(axis=-1)  # tested before add-k smoothing, as sacrebleu does
    # Every denominator and log argument is guarded (1 where it would be 0, the result then discarded).
    safe_sys = np.where(sys_len > 0, sys_len, 1.0)
    bp = np.where(sys_len < ref_len, np.where(sys_len > 0, np.exp(1 - ref_len / safe_sys), 0.0), 1.0)
    alive = np.ones(sys_len.shape, dtype=bool)  # sacrebleu stops at the first order with no n-grams
    smooth = np.ones(sys_len.shape)
    log_sum = np.zeros(sys_len.shape)
    for n in range(order):
        if smooth_method == "add-k" and n > 0:
            correct[..., n] += smooth_value
            total[..., n] += smooth_value
        tot = total[..., n]
        alive = alive & (tot != 0)
        safe_tot = np.where(tot != 0, tot, 1.0)
        zero = alive & (correct[..., n] == 0)
        if smooth_method == "exp":
            smooth = np.where(zero, smooth * 2, smooth)
            zero_p = 100.0 / (smooth * safe_tot)
        elif smooth_method == "floor":
            zero_p = 100.0 * smooth_value / safe_tot
        else:
            zero_p = np.zeros(sys_len.shape)
        p = np.where(alive, np.where(zero, zero_p, 100.0 * correct[..., n] / safe_tot), 0.0)
        # sacrebleu's my_log: log(0) is -9999999999 (so exp(...) underflows to 0)
        log_sum = log_sum + np.where(p > 0, np.log(np.where(p > 0, p, 1.0)), -9999999999.0)
    score = bp * np.exp(log_sum / order)
    return np.where(any_correct, score, 0.0)


# ---------------------------------------------------------------------------------------------- FKGL
def fkgl_statistics(outputs: Sequence[str], lang: str) -> np.ndarray:
    """Per-sentence FKGL counts ``[n, 3]`` (words, sentences, syllables), textstat's rules as
    :func:`~multimsd.metrics.readability.corpus_fkgl` (a line without words counts nothing)."""
    from multimsd.metrics.readability import fkgl_counts

    rows = []
    for line in outputs:
        c = fkgl_counts([line], lang)
        rows.append((c.words, c.sentences, c.syllables))
    return np.array(rows, dtype=np.int64).reshape(len(rows), 3)


def fkgl_from_totals(totals: np.ndarray) -> np.ndarray:
    """Corpus FKGL of summed :func:`fkgl_statistics` ``[..., 3]``: floored at 0, 0 without words/sentences."""
    t = np.asarray(totals, dtype=np.float64)
    words, sents, syll = t[..., 0], t[..., 1], t[..., 2]
    ok = (words > 0) & (sents > 0)
    # the denominators are guarded (1 where there are no words or sentences): no division by zero
    g = 0.39 * words / np.where(ok, sents, 1) + 11.8 * syll / np.where(ok, words, 1) - 15.59
    return np.where(ok, np.maximum(0.0, g), 0.0)
