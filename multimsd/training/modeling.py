"""Loading the model and tokenizer of the training stage: the name resolved, then the model kind loads it.

How a kind loads (a transformers model with optional LoRA, the LSTM with vocabularies built from the training
split) is in :mod:`multimsd.training.kinds`; local names (``offline:smollm2``, ``tiny:llama``, ``tiny:mbart``)
are built by :func:`multimsd.training.models.offline.resolve_model_path`.
"""

from __future__ import annotations

from multimsd.training.config import ModelSettings
from multimsd.training.kinds import get_kind
from multimsd.training.kinds.base import torch_dtype
from multimsd.training.models.offline import resolve_model_path


def load_model_and_tokenizer(
    ms: ModelSettings, train_rows: list[dict] | None = None, paraphrase: bool = False
):
    """The model and tokenizer of ``ms``; ``train_rows`` / ``paraphrase`` are used by ``kind=lstm`` only."""
    torch_dtype(ms.dtype)  # an unknown dtype is an error before anything is built
    return get_kind(ms.kind).load(ms, resolve_model_path(ms.pretrained), train_rows, paraphrase)
