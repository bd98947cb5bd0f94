"""Loading the model and tokenizer of the training stage: the name resolved, then the model kind loads it.

How a kind loads (a transformers model with optional LoRA, the LSTM with vocabularies built from the training
split) is in :mod:`multimsd.training.kinds`; local names (``offline:smollm2``, ``tiny:llama``, ``tiny:mbart``)
are built by :func:`multimsd.training.models.offline.resolve_model_path`, and ``random:<architecture>`` (a
full-size architecture with random weights, for benchmarks) by :mod:`multimsd.training.models.random_init`.
"""

from __future__ import annotations

from multimsd.training.config import ModelSettings
from multimsd.training.kinds import get_kind
from multimsd.training.kinds.base import torch_dtype
from multimsd.training.models.offline import resolve_model_path
from multimsd.training.models.random_init import RANDOM_PREFIX, random_model_dir


def load_model_and_tokenizer(
    ms: ModelSettings, train_rows: list[dict] | None = None, paraphrase: bool = False
):
    """The model and tokenizer of ``ms``; ``train_rows`` / ``paraphrase`` are used by ``kind=lstm`` only."""
    torch_dtype(ms.dtype)  # an unknown dtype is an error before anything is built
    if ms.pretrained.startswith(RANDOM_PREFIX):  # a full-size architecture, random weights (benchmarks)
        path = str(random_model_dir(ms.pretrained))
    else:
        path = resolve_model_path(ms.pretrained)
    return get_kind(ms.kind).load(ms, path, train_rows, paraphrase)
