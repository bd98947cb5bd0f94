"""A decoder-only LM's targets in tests, made by the product's one shift (the collator's
:func:`multimsd.training.data.shift_targets`) from tensors written as the model reads its input."""

from __future__ import annotations

import torch


def shifted(labels: torch.Tensor, novel: torch.Tensor | None = None):
    """``labels`` (and ``novel``) ``[B, T]`` shifted as the collator shifts them: ``labels[:, t]`` becomes the
    token at ``t + 1``, the last position ``-100`` (not novel). One tensor, or the pair when ``novel`` is given."""
    from multimsd.training.data import shift_targets

    flags = novel.long().tolist() if novel is not None else [[0] * labels.shape[1]] * labels.shape[0]
    rows = [shift_targets(y, v) for y, v in zip(labels.tolist(), flags)]
    out = torch.tensor([y for y, _ in rows], dtype=labels.dtype, device=labels.device)
    if novel is None:
        return out
    return out, torch.tensor([v for _, v in rows], dtype=torch.bool, device=novel.device)
