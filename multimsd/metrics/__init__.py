"""Evaluation metrics: EASSE-identical corpus SARI and EASSE-setting BLEU."""

from multimsd.metrics.bleu import bleu_signature, corpus_bleu
from multimsd.metrics.sari import (
    SariStatistics,
    available_tokenizers,
    corpus_sari,
    corpus_sari_operation_scores,
    get_tokenizer,
    normalize,
    register_tokenizer,
    sentence_sari,
)

__all__ = [
    "SariStatistics",
    "available_tokenizers",
    "bleu_signature",
    "corpus_bleu",
    "corpus_sari",
    "corpus_sari_operation_scores",
    "get_tokenizer",
    "normalize",
    "register_tokenizer",
    "sentence_sari",
]
