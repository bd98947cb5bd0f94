"""Weighted cross-entropy for MultiMSD training (paper, section 4).

For each reference token ``w`` the paper multiplies the cross-entropy by ``theta`` when ``w`` does not occur
in the input ``X``::

    L'(w) = theta * L(w)   if w not in X
    L'(w) = L(w)           otherwise

``theta`` in {2, 4, 8} in the paper; ``theta == 1`` is plain cross-entropy. "Occurs in X" is decided per
example at the token-id level by :func:`novel_token_mask`; :func:`word_level_novel_mask` gives a
word-level alternative (a sub-word is novel when its whole word is absent from the input) that the caller
passes to :func:`weighted_cross_entropy` as ``novel_mask``.

Everything here is a pure function of tensors: no model, no Accelerate, no tokenizer.

Reduction and gradient accumulation
-----------------------------------
:func:`weighted_cross_entropy` *sums* the weighted per-token losses and divides by ``num_items``, the
number of non-ignored label tokens in the whole optimisation step (all micro-batches of a gradient
accumulation cycle, on all processes). The weights do **not** enter the denominator: the loss is
``sum_t w_t * CE_t / N``, so ``theta`` scales the gradient of novel tokens by exactly ``theta`` relative to
copied ones, and with ``theta == 1`` it is the ordinary token-mean cross-entropy. Summing the micro-batch
losses computed with the same global ``num_items`` then gives the same gradient as one big batch. Two
things in the training loop would break that and must be compensated there:

* ``accelerator.backward(loss)`` divides by ``gradient_accumulation_steps`` when the Accelerator was
  created with it (non-DeepSpeed), so multiply the loss by that number first (or accumulate manually);
* DDP *averages* gradients over processes, so with ``num_items`` counted over all processes multiply the
  loss by the number of processes (this is what ``transformers.Trainer`` does with
  ``average_tokens_across_devices``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from multimsd.errors import MultimsdError

__all__ = [
    "count_label_tokens",
    "novel_token_mask",
    "weighted_cross_entropy",
    "word_level_novel_mask",
]

# Stands in for input positions that must not count as "occurring" (padding, special tokens, masked out).
# No vocabulary has 2**63 - 1 entries, so no real label can equal it.
_NEVER = torch.iinfo(torch.int64).max


def _check_2d(name: str, t: torch.Tensor) -> None:
    if t.dim() != 2:
        raise ValueError(f"{name} must have shape [B, L], got {tuple(t.shape)}")


def novel_token_mask(
    labels: torch.Tensor,
    input_ids: torch.Tensor,
    *,
    ignore_index: int = -100,
    input_pad_id: int | None = None,
    special_ids: Sequence[int] = (),
    input_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Which label tokens do not occur in their example's input.

    Args:
        labels: ``LongTensor[B, T]``; positions equal to ``ignore_index`` are not labels.
        input_ids: ``LongTensor[B, S]``, the source ``X`` of each example (row ``b`` of ``labels`` is compared
            with row ``b`` of ``input_ids`` only).
        ignore_index: label value meaning "no label here".
        input_pad_id: input positions holding this id do not count as occurring (padding).
        special_ids: ids that are never novel as labels (EOS, BOS, language codes, ...) and do not count as
            occurring in the input.
        input_mask: optional ``[B, S]`` mask (bool or 0/1, e.g. the attention mask); input positions where
            it is false do not count as occurring. Use it when the pad id is also a real token (Llama:
            pad == eos), or for decoder-only models where ``input_ids`` holds prompt + target and only the
            prompt is ``X`` (``input_mask = attention_mask.bool() & (labels == -100)``).

    Returns:
        ``BoolTensor[B, T]``: True where ``labels[b, t]`` is a real label, not in ``special_ids``, and absent
        from the counted positions of ``input_ids[b]``. Repeated label tokens are judged independently
        (each occurrence of a novel token is novel).

    Implementation: each input row is sorted (uncounted positions replaced by a sentinel larger than any
    id) and every label is looked up with a batched ``torch.searchsorted``. Cost is
    ``O(B * (S log S + T log S))`` time and ``O(B * (S + T))`` memory, independent of the vocabulary size,
    so a 250k vocabulary (mBART, Llama 3) needs no ``[B, V]`` presence table.
    """
    _check_2d("labels", labels)
    _check_2d("input_ids", input_ids)
    if labels.shape[0] != input_ids.shape[0]:
        raise ValueError(f"batch sizes differ: labels {labels.shape[0]}, input_ids {input_ids.shape[0]}")
    if input_mask is not None and input_mask.shape != input_ids.shape:
        raise ValueError(
            f"input_mask shape {tuple(input_mask.shape)} != input_ids shape {tuple(input_ids.shape)}"
        )

    labels = labels.long()
    input_ids = input_ids.to(device=labels.device, dtype=torch.long)

    is_label = labels != ignore_index
    counted = torch.ones_like(input_ids, dtype=torch.bool)
    if input_mask is not None:
        counted &= input_mask.to(device=labels.device).bool()
    if input_pad_id is not None:
        counted &= input_ids != input_pad_id
    if len(special_ids) > 0:
        specials = torch.as_tensor(list(special_ids), dtype=torch.long, device=labels.device)
        is_label &= ~torch.isin(labels, specials)
        counted &= ~torch.isin(input_ids, specials)

    if input_ids.shape[1] == 0:  # empty input: every real label is novel
        return is_label

    sorted_inp = torch.where(counted, input_ids, torch.full_like(input_ids, _NEVER)).sort(dim=1).values
    # Ignored positions may hold negative ids (-100): give them a harmless in-range query value.
    query = torch.where(is_label, labels, torch.zeros_like(labels)).contiguous()
    pos = torch.searchsorted(sorted_inp, query).clamp_(max=sorted_inp.shape[1] - 1)
    present = sorted_inp.gather(1, pos) == query
    return is_label & ~present


def word_level_novel_mask(
    label_word_ids: torch.Tensor,
    label_words: Sequence[Sequence[str]],
    input_words: Sequence[Sequence[str] | set[str] | frozenset[str]],
    *,
    normalize: bool = False,
) -> torch.Tensor:
    """Word-level novelty: a label sub-word is novel when the word it belongs to is absent from the input.

    Tokenizer-independent: the caller says which word each label token belongs to, so the words can come
    from any word segmenter (Stanza, as the paper used for its corpus statistics; whitespace; a
    HF fast tokenizer's ``word_ids()``, which for XLM-R/mBART/Llama splits on whitespace only and therefore
    treats a whole Japanese or Chinese sentence as one word).

    Args:
        label_word_ids: ``LongTensor[B, T]``: for each label position, the index into ``label_words[b]`` of
            its word, or ``-1`` for positions that belong to no word (ignored positions, EOS, language
            codes, padding). Those positions are never novel.
        label_words: per example, the words of the reference.
        input_words: per example, the words of the input ``X`` (any iterable of strings).
        normalize: compare words case-insensitively (``str.casefold``).

    Returns:
        ``BoolTensor[B, T]``, to pass as ``novel_mask`` to :func:`weighted_cross_entropy`.
    """
    _check_2d("label_word_ids", label_word_ids)
    B = label_word_ids.shape[0]
    if len(label_words) != B or len(input_words) != B:
        raise ValueError(
            f"batch sizes differ: label_word_ids {B}, label_words {len(label_words)}, "
            f"input_words {len(input_words)}"
        )

    def norm(w: str) -> str:
        return w.casefold() if normalize else w

    width = max((len(ws) for ws in label_words), default=0)
    word_novel = torch.zeros(B, max(width, 1), dtype=torch.bool)
    for b, (lw, iw) in enumerate(zip(label_words, input_words)):
        present = {norm(w) for w in iw}
        for i, w in enumerate(lw):
            word_novel[b, i] = norm(w) not in present

    ids = label_word_ids.long().cpu()
    if ids.numel() and int(ids.max()) >= width:
        raise ValueError(f"label_word_ids refers to word {int(ids.max())}, but examples have at most {width}")
    has_word = ids >= 0
    mask = word_novel.gather(1, ids.clamp(min=0)) & has_word
    return mask.to(label_word_ids.device)


def count_label_tokens(labels: torch.Tensor, ignore_index: int = -100) -> int:
    """Number of positions of ``labels`` that are not ``ignore_index`` (a Python int; syncs on GPU)."""
    return int((labels != ignore_index).sum().item())


def weighted_cross_entropy(
    logits: torch.Tensor,
    labels: torch.Tensor,
    input_ids: torch.Tensor | None = None,
    *,
    theta: float,
    ignore_index: int = -100,
    input_pad_id: int | None = None,
    special_ids: Sequence[int] = (),
    input_mask: torch.Tensor | None = None,
    novel_mask: torch.Tensor | None = None,
    num_items: int | torch.Tensor | None = None,
    label_smoothing: float = 0.0,
    shift: bool = False,
) -> torch.Tensor:
    """Cross-entropy with novel label tokens weighted by ``theta`` (MultiMSD, section 4).

    ``loss = sum_t w_t * CE_t / num_items`` with ``w_t = theta`` where the label token is novel (absent
    from the input) and 1 elsewhere; ignored positions contribute 0.

    Args:
        logits: ``[B, T, V]``, any float dtype; the cross-entropy is computed in at least float32 (the
            returned loss is float32 for bf16/fp16/float32 logits, float64 for float64 logits).
        labels: ``LongTensor[B, T]``, ``ignore_index`` where there is no label. With ``shift=False`` (the
            default; encoder-decoder models such as mBART) ``labels[:, t]`` is the target of
            ``logits[:, t]``. Decoder-only models: pass the unshifted labels with ``shift=True``, which
            predicts ``labels[:, t + 1]`` from ``logits[:, t]`` exactly as
            ``transformers``' ``ForCausalLMLoss`` does (labels padded with ``ignore_index`` on the right).
        input_ids: ``LongTensor[B, S]``, the source ``X``; novelty is decided by :func:`novel_token_mask`
            with ``ignore_index``, ``input_pad_id``, ``special_ids`` and ``input_mask``.
        theta: weight of novel tokens, finite and > 0 (``MultimsdError`` otherwise); 1 = plain CE.
        novel_mask: a precomputed ``BoolTensor[B, T]`` aligned with the *unshifted* ``labels`` (e.g. from
            :func:`word_level_novel_mask`), instead of ``input_ids``. Give exactly one of the two.
        num_items: denominator: the number of non-ignored label tokens (after shifting) in the whole
            global batch (all accumulation micro-batches, all processes). ``None``: this batch's count,
            clamped to at least 1 so an all-ignored batch gives 0 rather than NaN (``F.cross_entropy`` gives
            NaN there; this is the only case where ``theta == 1`` differs from it).
        label_smoothing: as in ``F.cross_entropy``; the smoothed per-token loss is what gets weighted.
        shift: see ``labels``.

    Returns:
        A scalar (see ``logits`` for its dtype). With ``theta == 1`` and ``num_items=None`` it equals
        ``F.cross_entropy(logits.float().view(-1, V), labels.view(-1), ignore_index=ignore_index)`` bit for
        bit (with ``label_smoothing > 0``: up to float32 rounding, as PyTorch's mean reduction combines the
        smoothing term in another order).
    """
    if isinstance(theta, bool) or not isinstance(theta, numbers.Real):
        raise MultimsdError(f"theta must be a number, got {theta!r}")
    if not (math.isfinite(theta) and theta > 0):
        raise MultimsdError(f"theta must be finite and > 0 (1 = plain cross-entropy), got {theta}")
    if (input_ids is None) == (novel_mask is None):
        raise ValueError("give exactly one of input_ids and novel_mask")
    if logits.dim() != 3:
        raise ValueError(f"logits must have shape [B, T, V], got {tuple(logits.shape)}")
    _check_2d("labels", labels)
    if logits.shape[:2] != labels.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and labels {tuple(labels.shape)} are not aligned")
    if novel_mask is not None and novel_mask.shape != labels.shape:
        raise ValueError(f"novel_mask shape {tuple(novel_mask.shape)} != labels shape {tuple(labels.shape)}")
    if isinstance(num_items, int) and num_items <= 0:
        raise ValueError(f"num_items must be > 0, got {num_items}")

    labels = labels.to(logits.device).long()
    if theta == 1:
        novel_mask = None  # not needed: plain cross-entropy
    elif novel_mask is None:
        novel_mask = novel_token_mask(
            labels,
            input_ids,
            ignore_index=ignore_index,
            input_pad_id=input_pad_id,
            special_ids=special_ids,
            input_mask=input_mask,
        )
    if shift:
        labels = F.pad(labels, (0, 1), value=ignore_index)[:, 1:]
        if novel_mask is not None:
            novel_mask = F.pad(novel_mask.bool(), (0, 1), value=False)[:, 1:]

    V = logits.shape[-1]
    # Upcast half precision (bf16/fp16) to float32, as transformers' own losses do; keep float64.
    compute_dtype = logits.dtype if logits.dtype in (torch.float32, torch.float64) else torch.float32
    flat_logits = logits.to(compute_dtype).reshape(-1, V)
    flat_labels = labels.reshape(-1)
    if theta == 1:
        # Same kernel and summation as F.cross_entropy(..., reduction="mean"), so theta == 1 reproduces it
        # bit for bit without label smoothing (summing reduction="none" by hand differs in the last bits).
        total = F.cross_entropy(
            flat_logits,
            flat_labels,
            ignore_index=ignore_index,
            reduction="sum",
            label_smoothing=label_smoothing,
        )
    else:
        per_token = F.cross_entropy(
            flat_logits,
            flat_labels,
            ignore_index=ignore_index,
            reduction="none",
            label_smoothing=label_smoothing,
        )  # 0 at ignored positions
        weights = torch.where(novel_mask.to(logits.device).bool().reshape(-1), float(theta), 1.0)
        total = (per_token * weights).sum()

    if num_items is None:
        denom = (labels != ignore_index).sum().clamp(min=1)
    elif torch.is_tensor(num_items):
        denom = num_items.to(total.device)
    else:
        denom = num_items
    return total / denom
