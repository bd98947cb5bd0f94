"""One scorer for every caller: :func:`score_language` scores one system's outputs in one language with the
registered metrics, and the built-in metrics are registered here.

The evaluation stage (``evaluate.py``) and validation during training (``score_predictions``) both call
:func:`score_language` with a :class:`~multimsd.config.MetricsConfig` — the training loop with its defaults,
which are ``evaluate.py``'s — so the ``mean_sari_bleu`` that early stopping and the θ sweep select on is the
number ``evaluate.py`` prints for the same outputs (same lowercasing, tokenizer and BLEU smoothing).

Built-in metrics (EASSE settings; lowercasing and tokenisation are ours, done before sacrebleu):
``sari`` (+ add / keep / delete), ``bleu``, ``ter`` (lower is better), ``chrf``, ``meteor`` (+ its mode),
``fkgl`` of the outputs (never pooled: its coefficients are English-fitted), ``quality`` (EASSE quality
features), ``novelty``, ``safety`` (the share of sentences the safety checks flag, :mod:`multimsd.metrics.safety`)
and ``meaning`` (the mean similarity of output and source, :mod:`multimsd.metrics.meaning`). Pooling rules:
:data:`multimsd.metrics.registry.POOLING`.

SARI (and its three parts), BLEU, FKGL, novelty, safety and meaning register their per-sentence statistics and the functions of
their totals (:mod:`multimsd.metrics.bootstrap`, :mod:`multimsd.metrics.novelty`), hence bootstrap intervals;
they are the run report's tables (the paper's Table 5 and the novel-token share), TER, chrF, METEOR and the
quality features are in evaluate.py's table.md only (``report=False``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from multimsd.errors import MultimsdError
from multimsd.metrics.registry import METRICS, Column, get_metric, register_metric

if TYPE_CHECKING:
    from multimsd.config import MetricsConfig

__all__ = ["QUALITY_KEYS", "reference_streams", "score_language"]

QUALITY_KEYS = (
    "compression_ratio",
    "levenshtein_similarity",
    "exact_copies",
    "additions_proportion",
    "deletions_proportion",
)
"""The EASSE quality features reported (the ``quality`` metric)."""


def reference_streams(refs: Sequence[Sequence[str]], where: str) -> list[list[str]]:
    """Per-row reference lists -> reference streams (all rows must have the same number of references)."""
    k = len(refs[0])
    for i, rs in enumerate(refs):
        if len(rs) != k:
            raise MultimsdError(
                f"{where}: row {i} has {len(rs)} references but the first row has {k}; every row of a "
                "language needs the same number of references"
            )
    return [list(s) for s in zip(*refs)]


def score_language(
    sources: Sequence[str],
    outputs: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    lang: str | None,
    tokenizer: str | None = None,
    settings: MetricsConfig | None = None,
    include: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Scores of one system in one language: ``{result key: value}`` of every included metric.

    :param references: reference streams (``references[k][i]`` = k-th reference of sentence i).
    :param lang: the language (None only for metrics pooled over a concatenation of languages).
    :param tokenizer: a registered tokenizer name; default that of ``lang``.
    :param settings: metric settings; default :class:`~multimsd.config.MetricsConfig` (evaluate.py's).
    :param include: metric names; default ``settings.include``. Results follow the registry's order.
    """
    from multimsd.metrics.tokenize import resolve_tokenizer

    if settings is None:
        from multimsd.config import MetricsConfig

        settings = MetricsConfig()
    names = set(settings.include if include is None else include)
    for name in names:
        get_metric(name)  # one line naming the known metrics
    tok = tokenizer if lang is None and tokenizer else resolve_tokenizer(lang, tokenizer)
    res: dict[str, Any] = {}
    for name, metric in METRICS.items():
        if name in names:
            value = metric.score(sources, outputs, references, lang=lang, tokenizer=tok, settings=settings)
            res.update(value if isinstance(value, dict) else {name: value})
    return res


# ---------------------------------------------------------------------------------------------- built-ins
def _sari(sources, outputs, references, *, lang, tokenizer, settings) -> dict[str, float]:
    from multimsd.metrics.sari import corpus_sari_operation_scores

    add, keep, dele = corpus_sari_operation_scores(
        sources, outputs, references, lowercase=settings.lowercase, tokenizer=tokenizer
    )
    return {"sari": (add + keep + dele) / 3, "sari_add": add, "sari_keep": keep, "sari_delete": dele}


def _sari_statistics(sources, outputs, references, *, lang, tokenizer, settings):
    from multimsd.metrics.bootstrap import sari_statistics

    return sari_statistics(sources, outputs, references, lowercase=settings.lowercase, tokenizer=tokenizer)


def _sari_from_totals(totals, *, lang, tokenizer, settings):
    from multimsd.metrics.bootstrap import sari_from_totals

    return sari_from_totals(totals)


def _sari_part(part: str):
    """``from_totals`` of one part of SARI (add, keep, delete): the same statistics, one part of the score."""

    def from_totals(totals, *, lang, tokenizer, settings):
        from multimsd.metrics.bootstrap import sari_part_from_totals

        return sari_part_from_totals(totals, part=part)

    return from_totals


def _bleu(sources, outputs, references, *, lang, tokenizer, settings) -> float:
    from multimsd.metrics.bleu import corpus_bleu

    return corpus_bleu(
        outputs,
        references,
        lowercase=settings.lowercase,
        tokenizer=tokenizer,
        smooth_method=settings.bleu_smooth,
    ).score


def _bleu_signature(n_refs: int, *, tokenizer: str, settings) -> str:
    from multimsd.metrics.bleu import bleu_signature

    return bleu_signature(
        n_refs, lowercase=settings.lowercase, tokenizer=tokenizer, smooth_method=settings.bleu_smooth
    )


def _bleu_statistics(sources, outputs, references, *, lang, tokenizer, settings):
    from multimsd.metrics.bootstrap import bleu_statistics

    return bleu_statistics(
        outputs,
        references,
        lowercase=settings.lowercase,
        tokenizer=tokenizer,
        smooth_method=settings.bleu_smooth,
    )


def _bleu_from_totals(totals, *, lang, tokenizer, settings):
    from multimsd.metrics.bootstrap import bleu_from_totals

    return bleu_from_totals(totals, smooth_method=settings.bleu_smooth)


def _ter_metric(n_refs: int):
    from sacrebleu.metrics import TER

    ter = TER(case_sensitive=True)  # input is lowercased (or not) and tokenized by us
    ter.num_refs = n_refs
    return ter


def _ter(sources, outputs, references, *, lang, tokenizer, settings) -> float:
    from multimsd.metrics.sari import normalize

    lc = settings.lowercase
    norm = [normalize(s, lowercase=lc, tokenizer=tokenizer) for s in outputs]
    refs_norm = [[normalize(s, lowercase=lc, tokenizer=tokenizer) for s in stream] for stream in references]
    return _ter_metric(len(references)).corpus_score(norm, refs_norm).score


def _ter_signature(n_refs: int, *, tokenizer: str, settings) -> str:
    sig = _ter_metric(n_refs).get_signature()
    sig.update("case", "lc" if settings.lowercase else "mixed")
    sig.update("tok", tokenizer)
    return sig.format()


def _chrf_metric(lowercase: bool, n_refs: int):
    from sacrebleu.metrics import CHRF

    chrf = CHRF(lowercase=lowercase)
    chrf.num_refs = n_refs
    return chrf


def _chrf(sources, outputs, references, *, lang, tokenizer, settings) -> float:
    return _chrf_metric(settings.lowercase, len(references)).corpus_score(list(outputs), references).score


def _chrf_signature(n_refs: int, *, tokenizer: str, settings) -> str:
    return _chrf_metric(settings.lowercase, n_refs).get_signature().format()


def _meteor(sources, outputs, references, *, lang, tokenizer, settings) -> dict[str, Any]:
    from multimsd.metrics.meteor import corpus_meteor

    met = corpus_meteor(
        outputs,
        references,
        lang=lang,
        tokenizer=tokenizer,
        mode=settings.meteor_mode,
        lowercase=settings.lowercase,
    )
    return {"meteor": met["meteor"], "meteor_mode": met["mode"]}


def _meteor_describe(sources, references, *, lang, tokenizer, settings) -> dict[str, Any]:
    from multimsd.metrics.meteor import meteor_mode

    return {"meteor_mode": meteor_mode(lang, settings.meteor_mode)}


def _fkgl(sources, outputs, references, *, lang, tokenizer, settings) -> float | None:
    from multimsd.metrics.readability import corpus_fkgl

    return corpus_fkgl(outputs, lang)


def _fkgl_statistics(sources, outputs, references, *, lang, tokenizer, settings):
    from multimsd.metrics.bootstrap import fkgl_statistics
    from multimsd.metrics.readability import FKGL_LANGS

    return fkgl_statistics(outputs, lang) if lang in FKGL_LANGS else None  # undefined for ja / zh


def _fkgl_from_totals(totals, *, lang, tokenizer, settings):
    from multimsd.metrics.bootstrap import fkgl_from_totals

    return fkgl_from_totals(totals)


def _fkgl_describe(sources, references, *, lang, tokenizer, settings) -> dict[str, Any]:
    from multimsd.metrics.readability import corpus_fkgl

    return {
        "fkgl_source": corpus_fkgl(sources, lang),
        "fkgl_reference": corpus_fkgl([s for stream in references for s in stream], lang),
    }


def _novelty(sources, outputs, references, *, lang, tokenizer, settings) -> float:
    from multimsd.metrics.novelty import corpus_novelty

    return corpus_novelty(sources, outputs, lowercase=settings.lowercase, tokenizer=tokenizer)


def _novelty_statistics(sources, outputs, references, *, lang, tokenizer, settings):
    from multimsd.metrics.novelty import novelty_statistics

    return novelty_statistics(sources, outputs, lowercase=settings.lowercase, tokenizer=tokenizer)


def _novelty_from_totals(totals, *, lang, tokenizer, settings):
    from multimsd.metrics.novelty import novelty_from_totals

    return novelty_from_totals(totals)


def _novelty_describe(sources, references, *, lang, tokenizer, settings) -> dict[str, Any]:
    from multimsd.metrics.novelty import corpus_novelty

    # the references' share, over every reference of every sentence (the source's own share is 0)
    srcs = [s for _ in references for s in sources]
    refs = [r for stream in references for r in stream]
    return {
        "novelty_source": 0.0,
        "novelty_reference": corpus_novelty(srcs, refs, lowercase=settings.lowercase, tokenizer=tokenizer),
    }


def _safety_statistics(sources, outputs, references, *, lang, tokenizer, settings):
    from multimsd.metrics.safety import SAFETY_CHECKS, safety_statistics

    return safety_statistics(sources, outputs, lang, settings.safety_checks if settings else SAFETY_CHECKS)


def _safety_from_totals(totals, **_):
    from multimsd.metrics.safety import safety_from_totals

    return safety_from_totals(totals)


def _meaning_statistics(sources, outputs, references, **_):
    from multimsd.metrics.meaning import meaning_statistics

    return meaning_statistics(sources, outputs)


def _meaning_from_totals(totals, **_):
    from multimsd.metrics.meaning import meaning_from_totals

    return meaning_from_totals(totals)


def _from_sentences(name: str, statistics, from_totals):
    """A metric's scorer from its per-sentence statistics, and the ``describe`` that gives the references' own
    score (every reference of every sentence against its source), for scale."""

    def score(sources, outputs, references, **kw) -> float:
        return float(from_totals(statistics(sources, outputs, references, **kw).sum(0)))

    def describe(sources, references, **kw) -> dict[str, Any]:
        refs = [r for stream in references for r in stream]
        return {f"{name}_reference": score([s for _ in references for s in sources], refs, [refs], **kw)}

    return score, describe


_safety, _safety_describe = _from_sentences("safety", _safety_statistics, _safety_from_totals)
_meaning, _meaning_describe = _from_sentences("meaning", _meaning_statistics, _meaning_from_totals)


def _quality(sources, outputs, references, *, lang, tokenizer, settings) -> dict[str, Any]:
    from multimsd.metrics.features import quality_features

    q = quality_features(sources, outputs, lang=lang, tokenizer=tokenizer, lowercase=settings.lowercase)
    return {"quality": {k: q[k] for k in QUALITY_KEYS}}


register_metric(
    "sari",
    _sari,
    rankable=True,
    pooling="corpus",
    columns=(
        Column("SARI", "sari"),
        Column("add", "sari_add", title="SARI add"),
        Column("keep", "sari_keep", title="SARI keep"),
        Column("del", "sari_delete", title="SARI delete"),
    ),
    summary_table="SARI",
    statistics=_sari_statistics,
    from_totals={
        "sari": _sari_from_totals,
        "sari_add": _sari_part("add"),
        "sari_keep": _sari_part("keep"),
        "sari_delete": _sari_part("delete"),
    },
    description="corpus SARI (EASSE) and its add / keep / delete parts",
)
register_metric(
    "bleu",
    _bleu,
    rankable=True,
    pooling="corpus",
    columns=(Column("BLEU", "bleu"),),
    summary_table="BLEU",
    signature=_bleu_signature,
    statistics=_bleu_statistics,
    from_totals=_bleu_from_totals,
    description="corpus BLEU (EASSE settings)",
)
register_metric(
    "ter",
    _ter,
    higher_is_better=False,
    pooling="corpus",
    columns=(Column("TER", "ter"),),
    signature=_ter_signature,
    report=False,
    description="corpus TER (sacrebleu)",
)
register_metric(
    "chrf",
    _chrf,
    rankable=True,
    pooling="characters",
    columns=(Column("chrF", "chrf"),),
    signature=_chrf_signature,
    report=False,
    description="corpus chrF (sacrebleu)",
)
register_metric(
    "meteor",
    _meteor,
    rankable=True,
    pooling="weighted-mean",
    agree=(("meteor_mode", "languages use different METEOR modes"),),
    keys=("meteor", "meteor_mode"),
    columns=(Column("METEOR", "meteor"),),
    describe=_meteor_describe,
    report=False,
    description="METEOR (mean of sentence scores), its matching mode per language",
)
register_metric(
    "fkgl",
    _fkgl,
    higher_is_better=False,
    pooling="never",
    never_pooled_because="FKGL is only comparable within one language",
    columns=(Column("FKGL", "fkgl", reference="fkgl_{side}"),),
    describe=_fkgl_describe,
    statistics=_fkgl_statistics,
    from_totals=_fkgl_from_totals,
    description="Flesch-Kincaid grade level of the outputs (and of the sources and references)",
)
register_metric(
    "quality",
    _quality,
    pooling="weighted-mean",
    columns=(
        Column("compr.", "quality.compression_ratio", 3),
        Column("Lev. sim", "quality.levenshtein_similarity", 3),
        Column("copies", "quality.exact_copies", 3),
        Column("added", "quality.additions_proportion", 3),
        Column("deleted", "quality.deletions_proportion", 3),
    ),
    group="features",
    report=False,
    description="EASSE quality features (compression, Levenshtein similarity, copies, additions, deletions)",
)
register_metric(
    "novelty",
    _novelty,
    higher_is_better=None,  # a description of the outputs: more novel words are neither better nor worse
    pooling="corpus",
    columns=(
        Column(
            "novel %",
            "novelty",
            1,
            reference="novelty_{side}",
            title="Novel tokens: % of output words not in the input",
            scale=("reference",),  # the source's own share is 0 by definition
        ),
    ),
    describe=_novelty_describe,
    group="features",
    statistics=_novelty_statistics,
    from_totals=_novelty_from_totals,
    description="share of output tokens (percent) whose word is not in the source sentence",
)
register_metric(
    "safety",
    _safety,
    higher_is_better=False,
    pooling="weighted-mean",
    columns=(
        Column(
            "flags %",
            "safety",
            1,
            reference="safety_{side}",
            title="Safety flags: % of output sentences whose numbers / units / limits or negations differ from "
            "the source, whose meaning is far from it, or that are empty or loop (metrics.safety_checks)",
            scale=("reference",),  # the references' own rate, for calibration
        ),
    ),
    describe=_safety_describe,
    statistics=_safety_statistics,
    from_totals=_safety_from_totals,
    description="share of output sentences (percent) flagged by the safety checks metrics.safety_checks "
    "(default: a changed number, unit or limit; a dropped or added negation; meaning far from the source; "
    "an empty or looping output) (multimsd.metrics.safety)",
)
register_metric(
    "meaning",
    _meaning,
    pooling="weighted-mean",
    columns=(
        Column(
            "meaning",
            "meaning",
            1,
            reference="meaning_{side}",
            title="Meaning kept: mean cosine (x 100) of each output and its source under the offline "
            "multilingual encoder (a copy scores 100)",
            scale=("reference",),
        ),
    ),
    describe=_meaning_describe,
    statistics=_meaning_statistics,
    from_totals=_meaning_from_totals,
    description="mean cosine (x 100) of output and source sentences under the offline multilingual encoder "
    "(multilingual-e5-small; multimsd.metrics.meaning)",
)
