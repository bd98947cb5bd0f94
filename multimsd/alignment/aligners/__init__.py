"""Sentence aligners: one :class:`Aligner` interface, one registry (``ALIGNERS``), chosen by ``aligner.method``.

* :mod:`multimsd.alignment.aligners.registry` — the interface, :func:`register_aligner`, :func:`get_aligner`;
* :mod:`multimsd.alignment.aligners.embedding` — MultiMSD's symmetric / asymmetric / margin matching;
* :mod:`multimsd.alignment.aligners.lexical` — Adduru et al. (2018): the mean of 12 string similarities, kept in a band;
* :mod:`multimsd.alignment.aligners.paraphrase` — their Siamese BiLSTM paraphrase identifier (the 12th similarity);
* :mod:`multimsd.alignment.aligners.classifier` — Cardon & Grabar: a random forest over pair features;
* :mod:`multimsd.alignment.aligners.nm` — n:m blocks of consecutive sentences (beyond the paper).

Importing this package registers the built-in aligners. Their modules import only numpy / rapidfuzz at the
top; scikit-learn, gensim and torch are imported when an aligner actually runs.
"""

from __future__ import annotations

from multimsd.alignment.aligners import classifier, embedding, lexical, nm  # noqa: F401  (registers the built-ins)
from multimsd.alignment.aligners.registry import (
    ALIGNERS,
    Aligner,
    aligner_candidates,
    all_modes,
    check_threshold,
    get_aligner,
    get_aligners,
    register_aligner,
)

__all__ = [
    "ALIGNERS",
    "Aligner",
    "aligner_candidates",
    "all_modes",
    "check_threshold",
    "get_aligner",
    "get_aligners",
    "register_aligner",
]
