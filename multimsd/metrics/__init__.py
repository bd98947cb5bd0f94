"""Evaluation metrics: EASSE-identical corpus SARI, EASSE-setting BLEU, METEOR, FKGL and EASSE-style
quality features, with language-aware tokenisation for de en es fr it ja pt ru zh.

Importing this package registers the ``ja-mecab`` and ``zh-char`` tokenisers (:mod:`.tokenize`) and the
built-in metrics of the registry (:mod:`.registry`, :mod:`.scoring`): ``register_metric`` adds one, and
``score_language`` is the one scorer of the evaluation stage and of validation during training.
"""

from multimsd.metrics.bleu import bleu_signature, corpus_bleu
from multimsd.metrics.features import quality_features
from multimsd.metrics.meteor import corpus_meteor, meteor_mode, sentence_meteor
from multimsd.metrics.readability import FKGL_LANGS, corpus_fkgl
from multimsd.metrics.registry import (
    METRICS,
    POOLING,
    Column,
    Metric,
    describe_metrics,
    get_metric,
    interval_keys,
    rankable_metrics,
    register_metric,
)
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
from multimsd.metrics.scoring import QUALITY_KEYS, reference_streams, score_language
from multimsd.metrics.tokenize import (
    DEFAULT_TOKENIZER,
    SUPPORTED_LANGS,
    TOKENIZER_DESCRIPTIONS,
    default_tokenizer,
    resolve_tokenizer,
)

__all__ = [
    "DEFAULT_TOKENIZER",
    "FKGL_LANGS",
    "METRICS",
    "POOLING",
    "QUALITY_KEYS",
    "Column",
    "Metric",
    "SUPPORTED_LANGS",
    "TOKENIZER_DESCRIPTIONS",
    "SariStatistics",
    "available_tokenizers",
    "bleu_signature",
    "corpus_bleu",
    "corpus_fkgl",
    "corpus_meteor",
    "corpus_sari",
    "corpus_sari_operation_scores",
    "default_tokenizer",
    "describe_metrics",
    "get_metric",
    "get_tokenizer",
    "interval_keys",
    "meteor_mode",
    "normalize",
    "quality_features",
    "rankable_metrics",
    "reference_streams",
    "register_metric",
    "register_tokenizer",
    "resolve_tokenizer",
    "score_language",
    "sentence_meteor",
    "sentence_sari",
]
