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
    return get_kind(ms.kind).load(ms, model_path(ms), train_rows, paraphrase)


def model_path(ms: ModelSettings) -> str:
    """The directory (or Hub id) of ``ms.pretrained``; a local name is built on first use, once per cache.

    Call it before torch.distributed is initialised (before creating the Accelerator): transformers'
    ``save_pretrained`` writes nothing on a rank other than 0 once a process group exists, so a build made
    by rank 1 would lack its weights. Before that, whichever process takes the build lock builds it whole.
    """
    if ms.pretrained.startswith(RANDOM_PREFIX):  # a full-size architecture, random weights (benchmarks)
        return str(random_model_dir(ms.pretrained))
    return resolve_model_path(ms.pretrained)
