"""The weighted cross-entropy computed from the final hidden states, chunk by chunk: no ``[tokens, vocab]`` logits.

:func:`multimsd.training.loss.weighted_cross_entropy` takes the model's logits, ``[B, T, V]``. With the short
prompts and sentences of this project and Llama-3.1's 128k vocabulary that tensor (and its float32 copy and
its gradient) is the largest activation of a training step, although most of its rows are never used: only
labelled positions enter the loss. :func:`chunked_weighted_cross_entropy` gives the same loss from the hidden
states ``[B, T, H]`` and the output projection (the ``lm_head`` weight ``[V, H]``, optional bias ``[V]``):

1. only labelled positions are kept, ``N`` rows of ``H`` (a decoder-only LM's labels come shifted: the collator's
   :func:`multimsd.training.data.shift_targets`);
2. their logits are computed ``chunk_size`` rows at a time. When there is more than one chunk, each chunk's
   cross-entropy is wrapped in ``torch.utils.checkpoint`` (``use_reentrant=False``), so its logits are freed as
   soon as its per-token losses exist and are recomputed, one chunk at a time, in backward: at most one
   ``[chunk_size, V]`` block (with its float32 copy and gradient) lives at any moment, whatever the batch. When
   all labelled positions fit in one chunk (the usual micro-batch of this project's short sentences), the chunk
   is kept for backward instead: recomputing it would add a fourth vocabulary-sized matrix product to the three a
   step needs anyway (a quarter more of the output head's work, which for mBART-50's 250k vocabulary is a large
   share of the step), to save memory that one chunk, bounded by ``chunk_size``, does not need saved;
3. the per-token losses (label smoothing included) go to :func:`multimsd.training.loss.weighted_token_loss`, the
   one loss rule (θ for novel tokens, the sum divided by ``num_items``) that the logits path uses too.

Precision: the projection runs in the dtype of the weight, as the model's own ``lm_head`` does (under an active
autocast, in autocast's dtype, again as the ``lm_head`` would), and the log-softmax and cross-entropy run in
float32, as ``weighted_cross_entropy`` upcasts the logits. So the result equals the logits path up to float
summation order, in every precision, which the tests check; a float32 matmul for bf16 weights would instead
need a float32 copy of the whole ``[V, H]`` weight for every chunk.

Everything here is a pure function of tensors: no model, no Accelerate.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from multimsd.training.loss import weighted_token_loss

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "chunked_weighted_cross_entropy",
    "labelled_token_losses",
]


# 4096 tokens x 128k vocabulary x 4 bytes = 2 GiB of float32 logits per chunk at most (plus its gradient in
# backward), against ~16 GiB for the full logits of a 16 x 256 Llama-3.1 batch; on the project's short
# sentences one chunk usually holds a whole micro-batch's labels, so chunking costs no extra kernel launches.
DEFAULT_CHUNK_SIZE = 4096


def _chunk_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    targets: torch.Tensor,
    label_smoothing: float,
) -> torch.Tensor:
    """Per-token cross-entropy of one chunk: ``hidden [C, H]`` -> logits ``[C, V]`` -> ``[C]``, in float32 (float64
    for float64 logits, as ``weighted_cross_entropy`` keeps them)."""
    logits = F.linear(hidden.to(weight.dtype), weight, None if bias is None else bias.to(weight.dtype))
    if logits.dtype != torch.float64:
        logits = logits.float()
    return F.cross_entropy(logits, targets, reduction="none", label_smoothing=label_smoothing)


def labelled_token_losses(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    labels: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    label_smoothing: float = 0.0,
    ignore_index: int = -100,
    target_index: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The cross-entropy of every labelled position, from hidden states, never holding all logits at once.

    Args:
        hidden: ``[B, T, H]`` final hidden states (what the ``lm_head`` would read), any float dtype.
        weight: ``[V, H]`` output projection (``lm_head.weight``; tied to the input embeddings in many models).
        labels: ``LongTensor[B, T]``: ``labels[:, t]`` is the target of ``hidden[:, t]``, as
            ``weighted_cross_entropy`` aligns them with the logits.
        bias: optional ``[V]`` (or ``[1, V]``) added to the logits (mBART's ``final_logits_bias``).
        chunk_size: labelled positions per chunk (> 0).
        target_index: optional ``LongTensor[N]``, the flat row-major positions (``b * T + t``) of the labelled
            positions, in order (:func:`multimsd.training.data.target_index`, made by the
            collator on the host). With it the rows are picked by ``index_select``, which needs no host-device
            synchronisation; without it by the boolean mask, whose size the host must wait for.

    Returns:
        ``(losses, where)``: float32 (float64 for float64 weights) ``[N]`` per-token losses of the ``N`` labelled positions in row-major order,
        and the ``BoolTensor[B, T]`` of those positions. Differentiable w.r.t. ``hidden``,
        ``weight`` and ``bias``; with gradients enabled each chunk is recomputed in backward.
    """
    if hidden.dim() != 3 or labels.dim() != 2 or hidden.shape[:2] != labels.shape:
        raise ValueError(
            f"hidden must be [B, T, H] and labels [B, T]; got {tuple(hidden.shape)} and {tuple(labels.shape)}"
        )
    if weight.dim() != 2 or weight.shape[1] != hidden.shape[-1]:
        raise ValueError(f"weight must be [V, {hidden.shape[-1]}], got {tuple(weight.shape)}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
    labels = labels.to(hidden.device).long()
    where = labels != ignore_index
    if target_index is None:
        rows, targets = hidden[where], labels[where]  # [N, H], [N]
    else:
        target_index = target_index.to(hidden.device)
        rows = hidden.reshape(-1, hidden.shape[-1]).index_select(0, target_index)
        targets = labels.reshape(-1).index_select(0, target_index)
    if bias is not None:
        bias = bias.reshape(-1)
    grads = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (hidden, weight, bias))
    # One chunk: nothing to gain from recomputing it in backward (see the module docstring).
    recompute = grads and rows.shape[0] > chunk_size
    pieces = []
    for s in range(0, rows.shape[0], chunk_size):
        args = (rows[s : s + chunk_size], weight, bias, targets[s : s + chunk_size], label_smoothing)
        if recompute:
            # Only the chunk's inputs are saved; its [C, V] logits are recomputed when backward reaches it.
            pieces.append(checkpoint(_chunk_cross_entropy, *args, use_reentrant=False))
        else:
            pieces.append(_chunk_cross_entropy(*args))
    if not pieces:
        # No labelled position: a zero that still depends on every input, so backward reaches the same
        # parameters as in any other step (a DDP process whose gradients never arrive would stall the others).
        zero = hidden.sum() * 0 + weight.sum() * 0 + (0 if bias is None else bias.sum() * 0)
        dtype = torch.float64 if weight.dtype == torch.float64 else torch.float32
        return zero.to(dtype).reshape(1)[:0], where
    return torch.cat(pieces), where


def chunked_weighted_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    labels: torch.Tensor,
    novel: torch.Tensor | None,
    *,
    theta: float,
    num_items: int | torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    label_smoothing: float = 0.0,
    ignore_index: int = -100,
    target_index: torch.Tensor | None = None,
) -> torch.Tensor:
    """``weighted_cross_entropy(F.linear(hidden, weight, bias), labels, novel_mask=novel, ...)`` without the logits.

    :func:`labelled_token_losses`, then :func:`multimsd.training.loss.weighted_token_loss` on them and their novel
    flags; arguments as in :func:`multimsd.training.loss.weighted_cross_entropy` (``novel`` is its ``novel_mask``,
    aligned with ``labels``; it may be None when ``theta == 1``) and :func:`labelled_token_losses`.

    Returns:
        A scalar, float32 (float64 for float64 weights): the logits path's value up to float summation order.
    """
    if novel is not None and novel.shape != labels.shape:
        raise ValueError(f"novel shape {tuple(novel.shape)} != labels shape {tuple(labels.shape)}")
    labels = labels.to(hidden.device).long()
    if novel is not None:
        novel = novel.to(hidden.device)
    if target_index is None:
        # The labelled positions' flat indices, found once (the one wait for the device here: their number sizes
        # the result); both the hidden rows and the novel flags are then picked by index.
        target_index = (labels != ignore_index).reshape(-1).nonzero().squeeze(1)
    target_index = target_index.to(hidden.device)
    losses, _ = labelled_token_losses(
        hidden,
        weight,
        labels,
        bias=bias,
        chunk_size=chunk_size,
        label_smoothing=label_smoothing,
        ignore_index=ignore_index,
        target_index=target_index,
    )
    if novel is not None:
        novel = novel.reshape(-1).index_select(0, target_index)
    return weighted_token_loss(losses, novel, theta=theta, num_items=num_items)
