"""Corpus BLEU with EASSE's settings (EASSE v0.2.4 ``corpus_bleu``), computed by sacrebleu.

EASSE normalises system outputs and references itself (optional lowercasing, then a tokenizer, by default
sacrebleu's 13a) and hands the result to sacrebleu's BLEU with ``tokenize='none'``, ``smooth_method='exp'``
and ``force=True``. We do the same, sharing the tokenizer registry with :mod:`multimsd.metrics.sari`, so a
tokenizer added with :func:`~multimsd.metrics.sari.register_tokenizer` works for both metrics.

Defaults follow EASSE's *function* (``lowercase=False``); note that EASSE's *command line* defaults to
``--lowercase`` (True), which is what papers usually report.
"""

from __future__ import annotations

from collections.abc import Sequence

from sacrebleu.metrics.bleu import BLEU, BLEUScore

from multimsd.errors import MultimsdError
from multimsd.metrics.sari import get_tokenizer, normalize

__all__ = ["bleu_signature", "corpus_bleu"]


def _check_inputs(sys_sents, refs_sents) -> None:
    if isinstance(sys_sents, str):
        raise MultimsdError("sys_sents must be a list of sentences, not a single string")
    if isinstance(refs_sents, str) or len(refs_sents) == 0:
        raise MultimsdError("refs_sents must be a non-empty list of reference streams (lists of sentences)")
    n_sys = len(sys_sents)
    bad = []
    for k, stream in enumerate(refs_sents):
        if isinstance(stream, str):
            raise MultimsdError(
                f"refs_sents[{k}] is a string: refs_sents must be a list of reference streams, "
                "refs_sents[k][i] being the k-th reference of sentence i"
            )
        if len(stream) != n_sys:
            bad.append(f"refs_sents[{k}] has {len(stream)}")
    if bad:
        raise MultimsdError(
            f"BLEU input lengths differ: sys_sents has {n_sys}, {', '.join(bad)} "
            "(refs_sents is a list of reference streams, each aligned with sys_sents)"
        )


def _bleu(smooth_method: str, smooth_value: float | None, use_effective_order: bool) -> BLEU:
    if smooth_method not in BLEU.SMOOTH_DEFAULTS:
        known = ", ".join(BLEU.SMOOTH_DEFAULTS)
        raise MultimsdError(f"unknown BLEU smooth_method {smooth_method!r} (known: {known})")
    return BLEU(
        lowercase=False,  # done by normalize() before tokenising, as EASSE does
        force=True,
        tokenize="none",  # already tokenised by normalize()
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        effective_order=use_effective_order,
    )


def corpus_bleu(
    sys_sents: Sequence[str],
    refs_sents: Sequence[Sequence[str]],
    *,
    lowercase: bool = False,
    tokenizer: str = "13a",
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    use_effective_order: bool = False,
) -> BLEUScore:
    """Corpus BLEU exactly as EASSE computes it; returns sacrebleu's :class:`BLEUScore` (``.score``).

    :param sys_sents: system outputs.
    :param refs_sents: reference *streams* (``refs_sents[k][i]`` = k-th reference of sentence i).
    :param lowercase: lowercase before tokenising (EASSE function default False, CLI default True).
    :param tokenizer: a tokenizer name registered in :mod:`multimsd.metrics.sari` (``13a`` default).
    :param smooth_method: sacrebleu smoothing (``exp`` default, as EASSE).
    """
    _check_inputs(sys_sents, refs_sents)
    get_tokenizer(tokenizer)  # fail early, with a one-line error, on an unknown name
    sys_norm = [normalize(s, lowercase=lowercase, tokenizer=tokenizer) for s in sys_sents]
    refs_norm = [
        [normalize(s, lowercase=lowercase, tokenizer=tokenizer) for s in stream] for stream in refs_sents
    ]
    return _bleu(smooth_method, smooth_value, use_effective_order).corpus_score(sys_norm, refs_norm)


def bleu_signature(
    n_refs: int,
    *,
    lowercase: bool = False,
    tokenizer: str = "13a",
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    use_effective_order: bool = False,
) -> str:
    """sacrebleu-style signature of :func:`corpus_bleu` with these settings.

    e.g. ``nrefs:8|case:lc|eff:no|tok:13a|smooth:exp|version:2.6.0``. The ``case`` and ``tok`` fields
    describe the normalisation applied before sacrebleu (sacrebleu itself runs with ``tok:none``).
    """
    get_tokenizer(tokenizer)
    bleu = _bleu(smooth_method, smooth_value, use_effective_order)
    bleu.num_refs = n_refs
    sig = bleu.get_signature()
    sig.update("case", "lc" if lowercase else "mixed")
    sig.update("tok", tokenizer)
    return sig.format()
